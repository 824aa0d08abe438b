package references

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriterReplaceSurvivesKill replaces a set in a child process killed
// (SIGKILL) right after the first, second, ... filesystem operation that
// puts the new set in place, until one runs to the end. After every kill
// the destination holds a complete set, the old or the new: never none,
// which two renames (the old set aside, then the new one in) left when
// killed between them.
func TestWriterReplaceSurvivesKill(t *testing.T) {
	if dir := os.Getenv("LLORCH_TEST_REPLACE_DIR"); dir != "" {
		replaceThenDie(dir, os.Getenv("LLORCH_TEST_KILL_AFTER"))
		return
	}
	older := validManifest()
	older.Generator = map[string]any{"script": "older"}
	for n := 1; n <= 10; n++ {
		dir := writeSet(t, older)
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriterReplaceSurvivesKill$")
		cmd.Env = append(os.Environ(), "LLORCH_TEST_REPLACE_DIR="+dir, "LLORCH_TEST_KILL_AFTER="+strconv.Itoa(n))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		killed := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
		require.True(t, err == nil || killed, "child: %v\n%s", err, out)
		s, err := Open(dir)
		require.NoError(t, err, "killed after operation %d, %s holds no complete set", n, dir)
		if !killed {
			require.Equal(t, "go test", s.Manifest.Generator["script"], "the new set is in place")
			return
		}
		require.Contains(t, []any{"older", "go test"}, s.Manifest.Generator["script"])
	}
	t.Fatal("the child was still killed after 10 operations")
}

// replaceThenDie is the child of TestWriterReplaceSurvivesKill: it writes
// validManifest's set over dir, killing itself after the n-th rename or
// exchange.
func replaceThenDie(dir, n string) {
	after, err := strconv.Atoi(n)
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	ops := 0
	op := func(err error) error {
		if ops++; ops == after {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // until the signal lands
		}
		return err
	}
	rename = func(a, b string) error { return op(os.Rename(a, b)) }
	exchange = func(a, b string) error { return op(exchangeDirs(a, b)) }
	m := validManifest()
	w, err := NewWriter(dir, true)
	if err == nil {
		for _, ti := range m.Tensors {
			if err = w.AddTensor(ti, values(ti.Shape)); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = w.Commit(m)
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	os.Exit(0)
}
