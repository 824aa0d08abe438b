package checkpoints

import (
	"context"
	"fmt"
	"runtime"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tensors"
)

// Dump writes the model's own results for every case of src as a reference
// set at out (float32, no float64 twins), so two builds can be compared with
// Diff. Cases, tensor list and logits rows are src's, so the sets line up.
// As in Run, checkpoint 11 applies Go's processors to src's last logits.
func Dump(ctx context.Context, m *model.Model, src *references.Set, out string, opt Options) error {
	if _, err := checkCompatible(m, src); err != nil {
		return err
	}
	sha, err := references.WeightsSHA256(m.WeightsPath)
	if err != nil {
		return err
	}
	w, err := references.NewWriter(out, opt.Force)
	if err != nil {
		return err
	}
	defer w.Abort() // a no-op after Commit
	man := references.Manifest{
		FormatVersion: references.FormatVersion,
		Model:         src.Manifest.Model,
		Generator:     map[string]any{"script": "llorch-check dump", "go": runtime.Version(), "float64_twins": false},
		Cases:         src.Manifest.Cases,
		Sampling:      src.Manifest.Sampling,
	}
	if opt.KVCache.Float16 {
		man.Generator["kv_cache"] = references.Float16
	}
	man.Model.Path, man.Model.WeightsSHA256, man.Model.WeightsDType = m.Dir, sha, m.WeightsDType
	// Marked only when rounding changed the weights: an F16 file's set
	// is the reference of that file however its matrices are held.
	man.Model.MatricesHeldAs = ""
	if m.RoundedToFloat16() {
		man.Model.MatricesHeldAs = references.Float16
	}
	d := dumper{m: m, src: src, w: w, man: &man, opt: opt}
	for _, c := range src.Manifest.Cases {
		progress(opt, "dump: case %s (%d tokens)", c.ID, len(c.Tokens))
		if err := d.dumpCase(ctx, c); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
	}
	if err := d.dumpLoglikelihood(ctx); err != nil {
		return err
	}
	return w.Commit(man)
}

type dumper struct {
	m   *model.Model
	src *references.Set
	w   *references.Writer
	man *references.Manifest
	opt Options
}

func (d *dumper) add(ti references.TensorInfo, data []float32) error {
	ti.FileF64 = nil
	if err := d.w.AddTensor(ti, data); err != nil {
		return err
	}
	d.man.Tensors = append(d.man.Tensors, ti)
	return nil
}

func (d *dumper) dumpCase(ctx context.Context, c references.Case) error {
	forward := Selection{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true}
	tis := selectTensors(d.src, c.ID, Options{Checkpoints: forward})
	got, err := capture(ctx, d.m, c.Tokens, d.opt.captureFor(tis, tensors.LastLogits))
	if err != nil {
		return err
	}
	for _, ti := range tis {
		t, ok := got.get(ti.Name, ti.LayerIndex())
		if !ok {
			return fmt.Errorf("the model produced no %s tensor for layer %d", ti.Name, ti.LayerIndex())
		}
		data := t.Data
		if ti.Rows != nil {
			if data, _, err = selectRows(t.Data, t.Shape, t.Rows, ti.Rows); err != nil {
				return fmt.Errorf("%s: %w", ti.Name, err)
			}
		}
		if err := d.add(ti, data); err != nil {
			return err
		}
	}
	if last, ok := got.get(tensors.LastLogits, model.NoLayer); ok {
		d.man.Greedy = append(d.man.Greedy, references.Greedy{Case: c.ID, Token: sampling.Argmax(last.Data)})
	}
	if err := d.dumpSampling(c); err != nil {
		return err
	}
	return d.dumpGeneration(ctx, c)
}

func (d *dumper) dumpSampling(c references.Case) error {
	logitsInfo, ok := d.src.Find(c.ID, tensors.LastLogits, model.NoLayer)
	if !ok {
		return nil
	}
	logits, err := d.src.Tensor(logitsInfo)
	if err != nil {
		return err
	}
	for _, cfg := range d.src.Manifest.Sampling {
		if ti, ok := d.src.Find(c.ID, "sampling_"+cfg.Name, model.NoLayer); ok {
			if err := d.add(ti, sampling.Process(logits, c.Tokens, cfg.Params())); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *dumper) dumpGeneration(ctx context.Context, c references.Case) error {
	gen := d.src.Manifest.Generation
	if gen == nil {
		return nil
	}
	if d.man.Generation == nil {
		d.man.Generation = &references.Generation{N: gen.N}
	}
	res, err := greedyContinuation(ctx, d.m, c, gen.N, d.opt)
	if err != nil {
		return err
	}
	d.man.Generation.Results = append(d.man.Generation.Results, res)
	return nil
}

func (d *dumper) dumpLoglikelihood(ctx context.Context) error {
	for i, ll := range d.src.Manifest.Loglikelihood {
		dec, err := d.opt.decoder(d.m)
		if err != nil {
			return err
		}
		got, err := generation.LoglikelihoodTokens(ctx, dec, ll.ContextTokens, ll.ContinuationTokens)
		if err != nil {
			return fmt.Errorf("loglikelihood[%d]: %w", i, err)
		}
		ll.LL, ll.LLF64, ll.IsGreedy = got.LL, nil, got.IsGreedy
		d.man.Loglikelihood = append(d.man.Loglikelihood, ll)
	}
	return nil
}
