package checkpoints

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/tensors"
)

// TestCaptureOnlyWhatIsSelected: --checkpoint N copies only N's tensors,
// and only checkpoint 3 pays for the incremental run.
func TestCaptureOnlyWhatIsSelected(t *testing.T) {
	m, set := openDefault(t)
	c := set.Manifest.Cases[0]
	for _, cp := range []int{1, 3, 6} {
		wanted := selectTensors(set, c.ID, Options{Checkpoints: Selection{cp: true}})
		require.NotEmpty(t, wanted)
		got, err := capture(context.Background(), m, c.Tokens, captureFor(wanted))
		require.NoError(t, err)
		var names []string
		for k := range got.tensors {
			if !slices.Contains(names, k.name) {
				names = append(names, k.name)
			}
		}
		slices.Sort(names)
		want := tensors.FamilyNames(tensors.GPT2, cp)
		slices.Sort(want)
		require.Equal(t, want, names, "checkpoint %d", cp)
	}
}
