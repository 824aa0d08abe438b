package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// memoryBound is what a server's peak RSS should stay within (issue #27):
// the model, the KV cache's peak (the tokens held at once, kept prefixes
// included) and 10% for everything else.
func memoryBound(model, kvPeak int64) int64 { return (model + kvPeak) * 11 / 10 }

// procMemory reads VmRSS (resident now) and VmHWM (the peak so far) of
// process pid from /proc: the server's memory after a level, whichever
// server it is (llama-server has no RSS figure of its own to ask for).
func procMemory(pid int) (rss, hwm int64, err error) {
	fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer fh.Close()
	found := 0
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(val) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %q", pid, key, val)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS/VmHWM (a kernel thread?)", pid)
	}
	return rss, hwm, nil
}
