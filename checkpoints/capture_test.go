package checkpoints

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
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

// TestComparedAsCaptured: a case's tensors are compared as the forward
// emits them, with the results of comparing a full capture, and none is
// kept but the last logits and checkpoint 3's (made after the forward),
// on GPT-2 and every Llama-family model.
func TestComparedAsCaptured(t *testing.T) {
	for _, fam := range append([]string{"tiny-gpt2"}, fixture.Families...) {
		t.Run(fam, func(t *testing.T) {
			var m *model.Model
			var set *references.Set
			if fam == "tiny-gpt2" {
				m, set = openDefault(t)
			} else {
				m, set = openFamily(t, fam)
			}
			c := set.Manifest.Cases[0]
			all, err := ParseSelection("")
			require.NoError(t, err)
			opt := Options{Checkpoints: all}
			wanted := selectTensors(set, c.ID, opt)
			full, err := capture(context.Background(), m, c.Tokens, opt.captureFor(wanted, tensors.LastLogits))
			require.NoError(t, err)
			want, err := compareAll(set, c, wanted, full, opt)
			require.NoError(t, err)

			got, kept, err := captureCompared(context.Background(), m, set, c, wanted, opt)
			require.NoError(t, err)
			require.Equal(t, want, got)
			for k := range kept.tensors {
				require.True(t, k.name == tensors.LastLogits || k.name == tensors.StepLogits ||
					k.name == tensors.KCache || k.name == tensors.VCache, "kept %s (layer %d)", k.name, k.layer)
			}
			require.Less(t, len(kept.tensors), len(full.tensors)/2)
		})
	}
}

// TestCaptureAssemblesParts: scores and probabilities the forward emits
// a head at a time are kept whole, as a forward emitting them whole
// gives them (the f16-kv run and dump keep what they capture).
func TestCaptureAssemblesParts(t *testing.T) {
	m, set := openFamily(t, "tiny-llama-mistral")
	c := set.Manifest.Cases[len(set.Manifest.Cases)-1]
	wanted := selectTensors(set, c.ID, Options{Checkpoints: Selection{4: true}})
	whole, err := capture(t.Context(), m, c.Tokens, captureFor(wanted))
	require.NoError(t, err)
	defer func(old int) { probeValues = old }(probeValues)
	probeValues = 1
	parts, err := capture(t.Context(), m, c.Tokens, captureFor(wanted))
	require.NoError(t, err)
	require.NotEmpty(t, whole.tensors)
	require.Equal(t, whole.tensors, parts.tensors)
}
