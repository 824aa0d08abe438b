//go:build llamacpp

package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tensors"
)

// A graph tensor of llama.cpp's gpt2 builder (src/models/gpt2.cpp) and the
// reference tensor it is. Keys ending in "-" take the layer; attn_out has
// no name of its own there (build_attn's bias add), so it is found as the
// node whose second operand is the layer's attn_output.bias.
var dumpMap = []dumpEntry{
	{"inpL", tensors.Embeddings},
	{"attn_norm-", tensors.LN1},
	{"Qcur-", tensors.Q},
	{"Kcur-", tensors.K},
	{"Vcur-", tensors.V},
	{"kq_soft_max-", tensors.Probs},
	{"src1:blk.%d.attn_output.bias", tensors.AttnOut},
	{"ffn_norm-", tensors.LN2},
	{"ffn_gelu-", tensors.GELU},
	{"ffn_out-", tensors.MLPOut},
	{"l_out-", tensors.BlockOut},
	{"result_norm", tensors.LNF},
	{"result_output", tensors.Logits},
}

// dumpEntry maps a llama.cpp graph node to a tensor of the table, whose
// checkpoint and layering it takes.
type dumpEntry struct{ key, name string }

func (e dumpEntry) kind() tensors.Kind {
	k, _ := tensors.Lookup(e.name)
	return k
}

func layerKey(key string, i int) string {
	if strings.Contains(key, "%d") {
		return fmt.Sprintf(key, i)
	}
	return fmt.Sprintf("%s%d", key, i)
}

// dump runs llama.cpp on a GGUF file over a reference set's cases and
// writes what its graph callback sees as a partial dump (FORMAT.md,
// "Dumps from other engines") for `llorch-check diff BASELINE OUT`.
func dump(args []string) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	model := fs.String("model", "", "GGUF file written by llorch-check convert from the baseline's weights")
	baseline := fs.String("baseline", "", "reference set whose cases and logit rows to dump")
	out := fs.String("out", "", "directory to write (must not exist, or be empty)")
	openEngine := engineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" || *baseline == "" || *out == "" {
		return errors.New("dump: -model, -baseline and -out are required")
	}
	base, err := references.Open(*baseline)
	if err != nil {
		return err
	}
	dims, err := base.Manifest.ModelConfig()
	if err != nil {
		return err
	}
	e, o, err := openEngine(*model)
	if err != nil {
		return err
	}
	defer e.freeModel()
	// llama.cpp loaded the GGUF; it is the baseline's model only if it was
	// converted from the baseline's weights, which convert records.
	src, ok := e.metaString("llorch.source.sha256")
	if !ok {
		return fmt.Errorf("%s has no llorch.source.sha256: not written by llorch-check convert, so nothing ties it to %s's weights", *model, *baseline)
	}
	if want := base.Manifest.Model.WeightsSHA256; !strings.EqualFold(src, want) {
		return fmt.Errorf("%s was converted from weights with sha256 %s; %s was made from %s", *model, src, *baseline, want)
	}
	ggufSHA, err := references.FileSHA256(*model)
	if err != nil {
		return err
	}
	var keys []string
	for _, m := range dumpMap {
		if !m.kind().PerLayer {
			keys = append(keys, m.key)
			continue
		}
		for i := range dims.NLayer {
			keys = append(keys, layerKey(m.key, i))
		}
	}
	capt := newCapture(e, keys)
	defer capt.free()
	ctx, err := e.newContext(o, capt.c)
	if err != nil {
		return err
	}
	defer e.freeContext(ctx)
	w, err := references.NewWriter(*out, false)
	if err != nil {
		return err
	}
	defer w.Abort()
	d := &dumper{e: e, dims: dims, w: w}
	for _, c := range base.Manifest.Cases {
		e.clear(ctx)
		if err := e.decode(ctx, c.Tokens, 0, true); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		got, err := capt.take()
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		logits, _ := base.Find(c.ID, tensors.Logits, references.NoLayer)
		if err := d.writeCase(c, got, logits.Rows); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		if err := d.stepLogits(ctx, capt, c); err != nil {
			return fmt.Errorf("case %s, incremental step: %w", c.ID, err)
		}
	}
	fileType, _ := e.metaString("general.file_type")
	m := references.Manifest{
		FormatVersion: references.FormatVersion,
		Model:         base.Manifest.Model,
		Generator: map[string]any{
			"script": "cmd/llamacpp-ggml dump", "partial": true, "float64_twins": false,
			"engine":  "llama.cpp release v0.5.0 (node-llama-cpp 3.22.1's prebuilt libraries), C API, graph callback cb_eval",
			"context": o.String(), "gguf": *model, "gguf_sha256": ggufSHA, "gguf_file_type": fileType,
			"weights":            "the GGUF's llorch.source.sha256 is the baseline's weights_sha256",
			tensors.LastLogprobs: "log-softmax of llama.cpp's float32 logits, in float64, rounded to float32",
		},
		Cases:         base.Manifest.Cases,
		Tensors:       d.entries,
		Sampling:      []references.Sampling{},
		Greedy:        []references.Greedy{},
		Loglikelihood: []references.Loglikelihood{},
	}
	m.Model.Path = *model
	if err := w.Commit(m); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %d tensors of %d cases (llama.cpp, %s) to %s\n", len(d.entries), len(m.Cases), o, *out)
	return nil
}

type dumper struct {
	e       *engine
	dims    references.ModelDims
	w       *references.Writer
	entries []references.TensorInfo
}

func (d *dumper) add(caseID string, checkpoint, layer int, name string, shape, rows []int, data []float32) error {
	t := references.TensorInfo{Case: caseID, Checkpoint: checkpoint, Name: name, DType: "float32", Shape: shape, Rows: rows,
		File: caseID + "/" + name + ".npy"}
	if layer >= 0 {
		t.Layer = &layer
		t.File = fmt.Sprintf("%s/l%02d_%s.npy", caseID, layer, name)
	}
	if err := d.w.AddTensor(t, data); err != nil {
		return err
	}
	d.entries = append(d.entries, t)
	return nil
}

// writeCase maps one case's captured graph tensors to reference tensors
// in FORMAT.md's forward order. A required tensor llama.cpp did not
// compute under its expected name is an error: the mapping no longer fits
// this llama.cpp.
func (d *dumper) writeCase(c references.Case, got map[string][]captured, rows []int) error {
	T, C, H := len(c.Tokens), d.dims.NEmbd, d.dims.NHead
	emit := func(cp int, name, key string, layer int) error {
		if err := d.mapTensor(c.ID, cp, layer, name, got[key], T, C, H, C/H, rows); err != nil {
			return fmt.Errorf("%s (llama.cpp %s): %w", name, key, err)
		}
		return nil
	}
	if err := emit(dumpMap[0].kind().Checkpoint, dumpMap[0].name, dumpMap[0].key, -1); err != nil {
		return err
	}
	for i := range d.dims.NLayer {
		for _, m := range dumpMap {
			if m.kind().PerLayer {
				if err := emit(m.kind().Checkpoint, m.name, layerKey(m.key, i), i); err != nil {
					return err
				}
			}
		}
	}
	for _, m := range dumpMap[1:] {
		if !m.kind().PerLayer {
			if err := emit(m.kind().Checkpoint, m.name, m.key, -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// mapTensor writes one captured tensor in the reference layout; optional
// tensors llama.cpp did not compute (probs under flash attention) are
// skipped.
func (d *dumper) mapTensor(caseID string, cp, layer int, name string, cands []captured, T, C, H, D int, rows []int) error {
	want := map[string][4]int{
		tensors.Embeddings: {C, T, 1, 1}, tensors.LN1: {C, T, 1, 1}, tensors.AttnOut: {C, T, 1, 1}, tensors.LN2: {C, T, 1, 1},
		tensors.GELU: {4 * C, T, 1, 1}, tensors.MLPOut: {C, T, 1, 1}, tensors.BlockOut: {C, T, 1, 1}, tensors.LNF: {C, T, 1, 1},
		tensors.Q: {D, H, T, 1}, tensors.K: {D, H, T, 1}, tensors.V: {D, H, T, 1}, tensors.Logits: {d.dims.VocabSize, T, 1, 1},
	}[name]
	var t *captured
	for i, c := range cands {
		match := c.ne == want
		if name == "probs" { // [n_kv,T,H]: n_kv is the cache's padded size
			match = c.ne[0] >= T && c.ne[1] == T && c.ne[2] == H && c.ne[3] == 1
		}
		if match {
			t = &cands[i]
		}
	}
	if t == nil {
		if references.DumpOptional(name) {
			return nil
		}
		var seen []string
		for _, c := range cands {
			seen = append(seen, fmt.Sprint(c.ne))
		}
		return fmt.Errorf("not computed with ne %v (seen: %v)", want, seen)
	}
	switch name {
	case "q", "k", "v": // ggml [D,H,T] (D fastest) → [H,T,D]
		out := make([]float32, H*T*D)
		for h := range H {
			for p := range T {
				copy(out[(h*T+p)*D:(h*T+p+1)*D], t.data[(p*H+h)*D:(p*H+h+1)*D])
			}
		}
		return d.add(caseID, cp, layer, name, []int{H, T, D}, nil, out)
	case "probs": // ggml [n_kv,T,H]: the cache's first T cells are positions 0..T-1
		nkv := t.ne[0]
		out := make([]float32, H*T*T)
		for h := range H {
			for p := range T {
				copy(out[(h*T+p)*T:(h*T+p+1)*T], t.data[(h*T+p)*nkv:(h*T+p)*nkv+T])
			}
		}
		return d.add(caseID, cp, layer, name, []int{H, T, T}, nil, out)
	case tensors.Logits:
		return d.addLogits(caseID, t.data, T, rows)
	}
	return d.add(caseID, cp, layer, name, []int{t.ne[1], t.ne[0]}, nil, t.data)
}

// stepLogits is checkpoint 3's step_logits: a prefill of all tokens but
// the last, then the last alone through llama.cpp's KV cache. The cache
// contents themselves (k_cache, v_cache) are not dumped: llama.cpp keeps
// them as F16 by default, and they are optional.
func (d *dumper) stepLogits(ctx unsafe.Pointer, capt capture, c references.Case) error {
	T := len(c.Tokens)
	if T < 2 {
		return nil // FORMAT.md: a one-token case has no checkpoint 3
	}
	d.e.clear(ctx)
	if err := d.e.decode(ctx, c.Tokens[:T-1], 0, false); err != nil {
		return err
	}
	if _, err := capt.take(); err != nil {
		return err
	}
	if err := d.e.decode(ctx, c.Tokens[T-1:], T-1, false); err != nil {
		return err
	}
	got, err := capt.take()
	if err != nil {
		return err
	}
	out := got["result_output"]
	if len(out) != 1 || out[0].ne != [4]int{d.dims.VocabSize, 1, 1, 1} {
		return fmt.Errorf("result_output of the step: %d tensors, want one of ne [%d 1 1 1]", len(out), d.dims.VocabSize)
	}
	return d.add(c.ID, tensors.Checkpoint(tensors.StepLogits), -1, tensors.StepLogits, []int{d.dims.VocabSize}, nil, out[0].data)
}

// addLogits keeps the baseline's rows of the full logits, and the last
// row as checkpoint 9's last_logits and its log-softmax.
func (d *dumper) addLogits(caseID string, all []float32, T int, rows []int) error {
	V := d.dims.VocabSize
	kept := all
	n := T
	if rows != nil {
		kept = make([]float32, 0, len(rows)*V)
		for _, r := range rows {
			kept = append(kept, all[r*V:(r+1)*V]...)
		}
		n = len(rows)
	}
	if err := d.add(caseID, tensors.Checkpoint(tensors.Logits), -1, tensors.Logits, []int{n, V}, rows, kept); err != nil {
		return err
	}
	last := all[(T-1)*V : T*V]
	if err := d.add(caseID, tensors.Checkpoint(tensors.LastLogits), -1, tensors.LastLogits, []int{V}, nil, last); err != nil {
		return err
	}
	lp := sampling.LogSoftmax(last) // float64: adds no rounding of its own to llama.cpp's logits
	out := make([]float32, V)
	for i, x := range lp {
		out[i] = float32(x)
	}
	return d.add(caseID, tensors.Checkpoint(tensors.LastLogprobs), -1, tensors.LastLogprobs, []int{V}, nil, out)
}
