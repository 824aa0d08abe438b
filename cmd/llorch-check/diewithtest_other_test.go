//go:build !linux

package main

import "os/exec"

// dieWithTest: only Linux has a parent-death signal; elsewhere a killed
// test run may leave its serve behind (startServer then says so).
func dieWithTest(*exec.Cmd) {}
