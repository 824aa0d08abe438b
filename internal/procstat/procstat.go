// Package procstat reads a Linux process's memory figures from
// /proc/PID/status, for the benchmarks and probes that compare them.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident set now (VmRSS) and at its peak
// (VmHWM), in bytes; zeros where /proc is not there or pid has exited.
func Memory(pid int) (rss, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	return rss, peak
}

// PeakRSS is this process's VmHWM in bytes.
func PeakRSS() int64 {
	_, peak := Memory(os.Getpid())
	return peak
}
