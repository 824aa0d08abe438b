//go:build unix

package model

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/llorch/llorch-check/internal/fixture"
)

// TestIsGGUFDoesNotBlockOnAFIFO: a named pipe where a model file is
// expected is not a GGUF file, said at once (os.Open would wait for a
// writer forever). The deadline only catches the hang.
func TestIsGGUFDoesNotBlockOnAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.gguf")
	fixture.FIFO(t, path)
	done := make(chan bool, 1)
	go func() { done <- IsGGUF(path) }()
	select {
	case got := <-done:
		assert.False(t, got)
	case <-time.After(30 * time.Second):
		t.Fatal("IsGGUF blocked opening a FIFO")
	}
}
