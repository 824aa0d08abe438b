package weights

import "time"

// RacyMargin is how long before a hash begins the newest change time of
// the files hashed must lie for their identity to vouch for the hash: a
// write in the same tick of the file system's clock as the stamp (a few
// milliseconds on Linux) leaves the times as they were, as git's "racy
// git" problem describes, and a file being written while hashed is not
// what was hashed.
var RacyMargin = 2 * time.Second

// StableIdentity is the identity to record with a hash of the files at
// path begun at start, whose identity then was before: before again if
// the files are still as they were and were last changed RacyMargin or
// more before start, else "" (nothing to record; hash again next time).
func StableIdentity(path, before string, changed, start time.Time) (string, error) {
	if before == "" || !changed.Before(start.Add(-RacyMargin)) {
		return "", nil
	}
	after, _, err := Identity(path)
	if err != nil || after != before {
		return "", err
	}
	return before, nil
}
