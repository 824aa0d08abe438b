package server

import "fmt"

// ConnectionReserve is what the default connection cap leaves of the
// open-file limit for the process's other files: the model's files, the
// listener, the log, the ready callback, the health reserve's
// connections (healthReserve) and the refusals lingering (at most
// maxRefusing).
const ConnectionReserve = 128

// MaxDefaultConnections bounds the default cap under a very large
// open-file limit: an idle HTTP connection holds about 20 KB (its
// goroutine and buffers), so 65536 of them are about 1.3 GB.
const MaxDefaultConnections = 65536

// unknownFileLimit stands in for the open-file limit where the system does
// not report one.
const unknownFileLimit = 1024

// ConnectionCap is the cap to give LimitConnections for a requested cap
// n (--max-connections): n itself, or for 0 the default from this
// process's open-file limit (defaultMaxConnections); and a warning, ""
// for none, when n is unsafe under that limit (capWarning).
func ConnectionCap(n int) (limit int, warning string) {
	nofile := openFileLimit()
	if n == 0 {
		return defaultMaxConnections(nofile), ""
	}
	return n, capWarning(n, nofile)
}

// defaultMaxConnections is the default cap for an open-file limit of
// nofile (RLIMIT_NOFILE; 0: unknown): the limit less ConnectionReserve,
// or half of a small limit, at most MaxDefaultConnections.
func defaultMaxConnections(nofile uint64) int {
	if nofile == 0 {
		nofile = unknownFileLimit
	}
	if nofile <= 2*ConnectionReserve {
		return max(int(nofile/2), 1)
	}
	return int(min(nofile-ConnectionReserve, MaxDefaultConnections))
}

// capWarning says why a --max-connections of n is unsafe under an
// open-file limit of nofile (0: unknown), "" when it is not: a cap that
// leaves the process fewer than ConnectionReserve descriptors of its own
// lets accepts fail with "too many open files" before it refuses anything.
func capWarning(n int, nofile uint64) string {
	if nofile == 0 || uint64(n)+ConnectionReserve <= nofile {
		return ""
	}
	return fmt.Sprintf("--max-connections %d leaves less than %d of the open-file limit %d for the process's own files: accepts can fail with \"too many open files\" before the cap refuses a connection; raise the limit (ulimit -n) or lower the cap",
		n, ConnectionReserve, nofile)
}
