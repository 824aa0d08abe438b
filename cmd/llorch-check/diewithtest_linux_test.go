package main

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill cmd when the test binary dies, so a
// killed `go test` (a timeout, a CI run stopped) leaves no serve behind
// on :8080 for the next run's README example to talk to.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
