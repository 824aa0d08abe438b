package buildid

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestID is the ID the Go toolchain gives this test binary.
func TestID(t *testing.T) {
	id, err := ID()
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	require.NoError(t, err)
	require.Equal(t, "go:"+strings.TrimSpace(string(out)), id)
	again, err := ID()
	require.NoError(t, err)
	require.Equal(t, id, again)
}
