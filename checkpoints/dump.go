package checkpoints

import (
	"context"
	"fmt"
	"runtime"

	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
)

// Dump writes the model's own activations for every case and tensor of src
// (checkpoints 1–9, float32, no float64 twins) as a reference set at out,
// so that two builds can be compared with Diff. The cases, tensor list and
// logits rows are src's, which makes the two sets line up tensor by tensor.
func Dump(ctx context.Context, m *model.Model, src *references.Set, out string, force bool, progress func(string, ...any)) error {
	if err := checkCompatible(m, src); err != nil {
		return err
	}
	sha, err := references.FileSHA256(m.WeightsPath)
	if err != nil {
		return err
	}
	w, err := references.NewWriter(out, force)
	if err != nil {
		return err
	}
	defer w.Abort() // a no-op after Commit
	man := references.Manifest{
		FormatVersion: references.FormatVersion,
		Model:         src.Manifest.Model,
		Generator:     map[string]any{"script": "llorch-check dump", "go": runtime.Version(), "float64_twins": false},
		Cases:         src.Manifest.Cases,
	}
	man.Model.Path, man.Model.WeightsSHA256, man.Model.WeightsDType = m.Dir, sha, m.WeightsDType
	for _, c := range src.Manifest.Cases {
		if progress != nil {
			progress("dump: case %s (%d tokens)", c.ID, len(c.Tokens))
		}
		tis := selectTensors(src, c.ID, Options{Checkpoints: Selection{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true}})
		got, err := capture(ctx, m, c.Tokens, needsCacheRun(tis))
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		for _, ti := range tis {
			t, ok := got.get(ti.Name, ti.LayerIndex())
			if !ok {
				return fmt.Errorf("case %s: the model produced no %s tensor for layer %d", c.ID, ti.Name, ti.LayerIndex())
			}
			data := t.Data
			if ti.Rows != nil {
				if data, _, err = selectRows(t.Data, t.Shape, ti.Rows); err != nil {
					return fmt.Errorf("case %s: %s: %w", c.ID, ti.Name, err)
				}
			}
			ti.FileF64 = nil
			if err := w.AddTensor(ti, data); err != nil {
				return err
			}
			man.Tensors = append(man.Tensors, ti)
		}
	}
	return w.Commit(man)
}
