package checkpoints

import (
	"context"
	"slices"

	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
)

// streamed compares each wanted tensor while the forward emits it and
// keeps none of them: a case then holds the model, one tensor and its two
// references, not every tensor of every layer (Qwen2.5-0.5B's run peaked
// at 2.0x file + KV cache holding them all; bench notes 28).
type streamed struct {
	set   *references.Set
	c     references.Case
	opt   Options
	want  []references.TensorInfo
	index map[tensorKey]int // wanted tensor → its place in want
	res   []Result
	done  []bool
	parts map[int]*partCompare // wanted tensors being compared part by part as they come
	err   error                // the first reference that could not be read
	// router keeps each layer's router logits, which explainRouting reads
	// when the layer's experts then part from the reference's.
	router map[int][]float32
}

func newStreamed(set *references.Set, c references.Case, want []references.TensorInfo, opt Options) *streamed {
	s := &streamed{set: set, c: c, opt: opt, want: want, index: map[tensorKey]int{},
		res: make([]Result, len(want)), done: make([]bool, len(want))}
	for i, ti := range want {
		s.index[tensorKey{ti.Name, ti.LayerIndex()}] = i
	}
	return s
}

// inspect compares t if it is wanted; the probe's data is read in place,
// before the forward reuses its buffers.
func (s *streamed) inspect(t model.Captured) {
	if t.Name == tensors.RouterLogits {
		if s.router == nil {
			s.router = map[int][]float32{}
		}
		s.router[t.Layer] = slices.Clone(t.Data)
	}
	i, ok := s.index[tensorKey{t.Name, t.Layer}]
	if !ok || s.done[i] || s.err != nil {
		return
	}
	if !t.Whole() {
		s.inspectPart(i, t)
		return
	}
	progress(s.opt, "case %s: comparing %s (layer %d) as computed", s.c.ID, t.Name, t.Layer)
	s.res[i], s.err = compareCaptured(s.set, s.want[i], &t, s.opt)
	if s.err == nil {
		s.err = explainRouting(s.set, s.want[i], &s.res[i], t.Data, s.router[t.Layer])
	}
	s.done[i] = true
}

// inspectPart compares part t of wanted tensor i (model.Captured.Off),
// judging the tensor once its last part is in.
func (s *streamed) inspectPart(i int, t model.Captured) {
	p := s.parts[i]
	if p == nil {
		progress(s.opt, "case %s: comparing %s (layer %d) as computed, in parts", s.c.ID, t.Name, t.Layer)
		p = newPartCompare(s.want[i], &t, s.opt)
		if s.parts == nil {
			s.parts = map[int]*partCompare{}
		}
		s.parts[i] = p
	}
	s.err = p.add(s.set, &t)
	if t.Last() || p.done() {
		s.res[i], s.done[i] = p.result(s.opt), true
		delete(s.parts, i)
	}
}

// finish compares what the forward did not emit while it ran (checkpoint
// 3's cache contents and step logits, made after it; tensors the model
// never produced) and returns every result in want's order.
func (s *streamed) finish(got *captured) ([]Result, error) {
	if s.err != nil {
		return nil, s.err
	}
	for i, ti := range s.want {
		if s.done[i] {
			continue
		}
		res, err := compareTensor(s.set, ti, got, s.opt)
		if err != nil {
			return nil, err
		}
		s.res[i] = res
	}
	return s.res, nil
}

// captureCompared runs the case's forward comparing as it goes: only the
// names checkpoint 3's incremental run and checkpoints 10–11 read
// afterwards (the last row's logits) are kept.
func captureCompared(ctx context.Context, m *model.Model, set *references.Set, c references.Case, wanted []references.TensorInfo, opt Options) ([]Result, *captured, error) {
	s := newStreamed(set, c, wanted, opt)
	spec := opt.captureFor(wanted, tensors.LastLogits)
	spec.inspect = s.inspect
	spec.names = map[string]bool{tensors.LastLogits: true}
	spec.logitRows = logitRows(wanted)
	got, err := capture(ctx, m, c.Tokens, spec)
	if err != nil {
		return nil, nil, err
	}
	results, err := s.finish(got)
	return results, got, err
}

// logitRows are the positions whose logits the wanted tensors compare:
// the reference's kept rows, none when the logits are not wanted (the
// forward computes the last position's whatever), nil (all) when the
// reference keeps them all.
func logitRows(wanted []references.TensorInfo) []int {
	for _, ti := range wanted {
		if ti.Name == tensors.Logits {
			return ti.Rows
		}
	}
	return []int{}
}
