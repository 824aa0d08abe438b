package main

import (
	"fmt"
	"log/slog"
)

// connectionReserve is what --max-connections' default leaves of the
// open-file limit for the process's other files: the model's files, the
// listener, the log, the ready callback and the refusals being written
// (server.LimitConnections writes at most 64 at once).
const connectionReserve = 128

// maxDefaultConnections bounds the default under a very large open-file
// limit: an idle HTTP connection holds about 20 KB (its goroutine and
// buffers), so 65536 of them are about 1.3 GB.
const maxDefaultConnections = 65536

// unknownFileLimit stands in for the open-file limit where the system does
// not report one.
const unknownFileLimit = 1024

// defaultMaxConnections is --max-connections' default for an open-file
// limit of nofile (RLIMIT_NOFILE; 0: unknown): the limit less
// connectionReserve, or half of a small limit, at most
// maxDefaultConnections.
func defaultMaxConnections(nofile uint64) int {
	if nofile == 0 {
		nofile = unknownFileLimit
	}
	if nofile <= 2*connectionReserve {
		return max(int(nofile/2), 1)
	}
	return int(min(nofile-connectionReserve, maxDefaultConnections))
}

// connectionCap is the cap serve listens under: --max-connections, or
// its default from the open-file limit (see capWarning).
func (f serveFlags) connectionCap(log *slog.Logger) int {
	nofile := openFileLimit()
	if f.maxConnections == 0 {
		return defaultMaxConnections(nofile)
	}
	if w := capWarning(f.maxConnections, nofile); w != "" {
		log.Warn(w)
	}
	return f.maxConnections
}

// capWarning says why a --max-connections of n is unsafe under an
// open-file limit of nofile (0: unknown), "" when it is not: a cap that
// leaves the process fewer than connectionReserve descriptors of its own
// lets accepts fail with "too many open files" before it refuses anything.
func capWarning(n int, nofile uint64) string {
	if nofile == 0 || uint64(n)+connectionReserve <= nofile {
		return ""
	}
	return fmt.Sprintf("--max-connections %d leaves less than %d of the open-file limit %d for the process's own files: accepts can fail with \"too many open files\" before the cap refuses a connection; raise the limit (ulimit -n) or lower the cap",
		n, connectionReserve, nofile)
}
