package weights

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Identity is what the file system says of the weights at path (a file,
// or an index with its shards), one line a file: device, inode, size,
// modification and change times in nanoseconds. Unlike a modification
// time, a change time cannot be set back by a user: writing a file in
// place, touching it or copying another over it moves it. So while the
// identity stays, so do the bytes, and a hash taken of them still holds
// (git's index trusts the same fields). changed is the newest change
// time, for a caller to tell a stamp too recent to trust (RacyIdentity).
func Identity(path string) (id string, changed time.Time, err error) {
	files, err := Files(path)
	if err != nil {
		return "", time.Time{}, err
	}
	if IsIndex(path) {
		files = append(files, path)
	}
	var b strings.Builder
	for _, f := range files {
		var st syscall.Stat_t
		if err := syscall.Stat(f, &st); err != nil {
			return "", time.Time{}, &os.PathError{Op: "stat", Path: f, Err: err}
		}
		c := time.Unix(st.Ctim.Unix())
		if c.After(changed) {
			changed = c
		}
		fmt.Fprintf(&b, "%s dev=%d ino=%d size=%d mtime=%d ctime=%d\n",
			f, st.Dev, st.Ino, st.Size, time.Unix(st.Mtim.Unix()).UnixNano(), c.UnixNano())
	}
	return b.String(), changed, nil
}
