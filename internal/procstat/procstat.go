// Package procstat reads Linux's memory figures: a process's from
// /proc/PID/status, for the benchmarks and probes that compare them, and
// the machine's from /proc/meminfo, for serve's start-up bound.
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

// MemTotal is the machine's memory, MemTotal of /proc/meminfo, in bytes;
// 0 when unknown (no /proc, or no such line).
func MemTotal() int64 { return meminfo("MemTotal") }

// MemAvailable is the memory the kernel estimates it can give without
// swapping, MemAvailable of /proc/meminfo (free memory and the page cache
// it can drop), in bytes; 0 when unknown.
func MemAvailable() int64 { return meminfo("MemAvailable") }

func meminfo(key string) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return meminfoField(string(b), key)
}

// meminfoField is the line key of a /proc/meminfo text in bytes, 0 if it
// has none that parses.
func meminfoField(meminfo, key string) int64 {
	for line := range strings.SplitSeq(meminfo, "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}
