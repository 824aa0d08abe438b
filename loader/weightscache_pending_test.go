package loader

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
)

// TestUnwrittenCacheLetsTheModelGo: a model loaded with WriteCacheLater
// whose cache is never written (its command failed after the load) is
// not kept alive by the record of the cache it left, and the record goes
// with it.
func TestUnwrittenCacheLetsTheModelGo(t *testing.T) {
	before := pendingCount()
	wp := loadAndDrop(t, t.TempDir())
	deadline := time.Now().Add(5 * time.Second)
	for (wp.Value() != nil || pendingCount() != before) && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, wp.Value() == nil, "the model is collected")
	require.Equal(t, before, pendingCount(), "its record is gone")
}

// loadAndDrop loads the tiny model leaving its cache to be written, and
// keeps only a weak pointer to it.
func loadAndDrop(t *testing.T, dir string) weak.Pointer[model.Model] {
	before := pendingCount()
	m, err := LoadWith(fixture.FamilyModel("tiny-llama"), Options{WeightsCache: dir, WriteCacheLater: true})
	require.NoError(t, err)
	require.Contains(t, m.WeightsCache, "to be written to")
	require.Equal(t, before+1, pendingCount())
	return weak.Make(m)
}

func pendingCount() int {
	n := 0
	pending.Range(func(any, any) bool { n++; return true })
	return n
}
