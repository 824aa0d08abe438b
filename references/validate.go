package references

import (
	"encoding/hex"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tensors"
)

// validate checks everything FORMAT.md says about a manifest that can be
// checked without opening another file, and returns the model dimensions
// the shapes were checked against.
func validate(m *Manifest, file string) (ModelDims, error) {
	if m.FormatVersion != FormatVersion {
		return ModelDims{}, errorf(file, "format_version", "unsupported version %d, this build reads version %d", m.FormatVersion, FormatVersion)
	}
	dims, err := m.modelConfig(file)
	if err != nil {
		return dims, err
	}
	v := validator{m: m, dims: dims, p: problems{path: file}, cases: map[string]Case{}}
	v.model()
	v.caseList()
	v.sampling()
	v.tensors()
	v.greedy()
	v.generation()
	v.loglikelihood()
	return dims, v.p.err()
}

type validator struct {
	m     *Manifest
	dims  ModelDims
	p     problems
	cases map[string]Case
}

func (v *validator) model() {
	sha := v.m.Model.WeightsSHA256
	if _, err := hex.DecodeString(sha); err != nil || len(sha) != 64 {
		v.p.add("model.weights_sha256", "want 64 hex digits, got %q", sha)
	}
	if v.m.Model.WeightsFile == "" {
		v.p.add("model.weights_file", "missing")
	}
	switch tf, ts := v.m.Model.TokenizerFile, v.m.Model.TokenizerSHA256; {
	case tf == "" && ts == "":
	case tf == "" || strings.ContainsAny(tf, `/\`) || tf == "." || tf == "..":
		v.p.add("model.tokenizer_file", "want a file name of the model directory beside tokenizer_sha256, got %q", tf)
	default:
		if _, err := hex.DecodeString(ts); err != nil || len(ts) != 64 {
			v.p.add("model.tokenizer_sha256", "want 64 hex digits beside tokenizer_file, got %q", ts)
		}
	}
	if h := v.m.Model.MatricesHeldAs; h != "" && h != Float16 {
		v.p.add("model.matrices_held_as", "want %q or absent, got %q", Float16, h)
	}
}

func (v *validator) caseList() {
	if len(v.m.Cases) == 0 {
		v.p.add("cases", "empty: a reference set needs at least one case")
	}
	for i, c := range v.m.Cases {
		field := fmt.Sprintf("cases[%d]", i)
		switch _, dup := v.cases[c.ID]; {
		case c.ID == "":
			v.p.add(field+".id", "empty")
		case dup:
			v.p.add(field+".id", "duplicate case id %q", c.ID)
		default:
			v.cases[c.ID] = c
		}
		if len(c.Tokens) == 0 {
			v.p.add(field+".tokens", "case %q has no tokens", c.ID)
		}
		if len(c.Tokens) > v.dims.NPositions {
			v.p.add(field+".tokens", "case %q has %d tokens, more than the context length n_positions=%d", c.ID, len(c.Tokens), v.dims.NPositions)
		}
		v.tokens(field+".tokens", fmt.Sprintf("case %q", c.ID), c.Tokens)
	}
}

// tokens reports the first token id outside the vocabulary.
func (v *validator) tokens(field, what string, toks []int) {
	for j, t := range toks {
		if t < 0 || t >= v.dims.VocabSize {
			v.p.add(fmt.Sprintf("%s[%d]", field, j), "%s: token %d outside the vocabulary [0, %d)", what, t, v.dims.VocabSize)
			return
		}
	}
}

func (v *validator) sampling() {
	seen := map[string]bool{}
	for i, s := range v.m.Sampling {
		field := fmt.Sprintf("sampling[%d]", i)
		switch {
		case s.Name == "":
			v.p.add(field+".name", "empty")
		case seen[s.Name]:
			v.p.add(field+".name", "duplicate sampling name %q", s.Name)
		}
		seen[s.Name] = true
		// Written as !(ok) so NaN, which compares false, is rejected too.
		if !(s.Temperature >= 0) || math.IsInf(s.Temperature, 0) {
			v.p.add(field+".temperature", "want a finite value >= 0, got %v", s.Temperature)
		}
		if s.TopK < 0 {
			v.p.add(field+".top_k", "want >= 0 (0 is off), got %d", s.TopK)
		}
		if !(s.TopP > 0 && s.TopP <= 1) {
			v.p.add(field+".top_p", "want 0 < top_p <= 1 (1 is off), got %v", s.TopP)
		}
		if !(s.MinP >= 0 && s.MinP <= 1) {
			v.p.add(field+".min_p", "want 0 <= min_p <= 1 (0 is off), got %v", s.MinP)
		}
		if !(s.RepetitionPenalty > 0) || math.IsInf(s.RepetitionPenalty, 0) {
			v.p.add(field+".repetition_penalty", "want a finite value > 0 (1 is off), got %v", s.RepetitionPenalty)
		}
		if !(math.Abs(s.PresencePenalty) <= sampling.MaxPenalty) {
			v.p.add(field+".presence_penalty", "want -%d..%d (0 is off), got %v", sampling.MaxPenalty, sampling.MaxPenalty, s.PresencePenalty)
		}
		if !(math.Abs(s.FrequencyPenalty) <= sampling.MaxPenalty) {
			v.p.add(field+".frequency_penalty", "want -%d..%d (0 is off), got %v", sampling.MaxPenalty, sampling.MaxPenalty, s.FrequencyPenalty)
		}
		for id, b := range s.LogitBias {
			if n, err := strconv.Atoi(id); err != nil || n < 0 || strconv.Itoa(n) != id {
				v.p.add(field+".logit_bias", "key %q: want a token id", id)
			}
			if !(math.Abs(b) <= sampling.MaxLogitBias) {
				v.p.add(field+".logit_bias", "key %s: want a bias in -%d..%d, got %v", id, sampling.MaxLogitBias, sampling.MaxLogitBias, b)
			}
		}
	}
}

func (v *validator) tensors() {
	if len(v.m.Tensors) == 0 {
		v.p.add("tensors", "empty: a reference set needs at least one tensor")
	}
	keys := map[string]int{}
	files := map[string]string{} // cleaned path -> field that uses it
	twins := 0
	for i, t := range v.m.Tensors {
		field := fmt.Sprintf("tensors[%d]", i)
		v.tensor(field, t)
		if j, dup := keys[t.Key()]; dup {
			v.p.add(field, "duplicate tensor %s, also tensors[%d]", t.Key(), j)
		} else {
			keys[t.Key()] = i
		}
		v.file(field+".file", t.File, files)
		if t.FileF64 != nil {
			twins++
			v.file(field+".file_f64", *t.FileF64, files)
		}
	}
	// The error budget compares every tensor with its twin; a set with some
	// twins missing is a generator bug, not a set "without twins".
	if twins != 0 && twins != len(v.m.Tensors) {
		v.p.add("tensors", "%d of %d tensors have a file_f64: want all or none", twins, len(v.m.Tensors))
	}
}

func (v *validator) tensor(field string, t TensorInfo) {
	key := t.Key()
	c, ok := v.cases[t.Case]
	if !ok {
		v.p.add(field+".case", "%s: no case %q in cases", key, t.Case)
	}
	if t.Checkpoint < 1 || t.Checkpoint > 12 {
		v.p.add(field+".checkpoint", "%s: checkpoint %d outside 1..12", key, t.Checkpoint)
		return
	}
	kind, known := tensors.Lookup(t.Name)
	switch {
	case !known || (kind.Family != "" && kind.Family != v.dims.Family):
		v.p.add(field+".name", "%s: unknown tensor name %q for checkpoint %d of a %s-family model (known: %s)",
			key, t.Name, t.Checkpoint, v.dims.Family, knownNames(v.dims.Family, t.Checkpoint))
		return
	case kind.Checkpoint != t.Checkpoint:
		v.p.add(field+".checkpoint", "%s: %s belongs to checkpoint %d, not %d", key, t.Name, kind.Checkpoint, t.Checkpoint)
		return
	}
	if strings.HasPrefix(t.Name, SamplingPrefix) {
		name := strings.TrimPrefix(t.Name, SamplingPrefix)
		if !slices.ContainsFunc(v.m.Sampling, func(s Sampling) bool { return s.Name == name }) {
			v.p.add(field+".name", "%s: no sampling configuration %q in sampling", key, name)
		}
	}
	switch {
	case kind.PerLayer && t.Layer == nil:
		v.p.add(field+".layer", "%s: %s is per layer, layer is null", key, t.Name)
	case kind.PerLayer && (*t.Layer < 0 || *t.Layer >= v.dims.NLayer):
		v.p.add(field+".layer", "%s: layer %d outside [0, n_layer=%d)", key, *t.Layer, v.dims.NLayer)
	case !kind.PerLayer && t.Layer != nil:
		v.p.add(field+".layer", "%s: %s is not per layer, want layer null, got %d", key, t.Name, *t.Layer)
	}
	if t.DType != "float32" {
		v.p.add(field+".dtype", "%s: want \"float32\", got %q", key, t.DType)
	}
	if !ok {
		return // the shape depends on the case's token count
	}
	n := len(c.Tokens)
	if tensors.IncrementalRun(t.Name) && n < 2 {
		v.p.add(field+".checkpoint", "%s: checkpoint 3 needs at least 2 tokens, case %q has %d", key, t.Case, n)
	}
	want := kind.Shape(v.dims.TensorDims(), n)
	if t.Rows != nil {
		if t.Name != tensors.Logits {
			v.p.add(field+".rows", "%s: only the checkpoint 8 logits tensor may have rows, want null", key)
		} else if v.rows(field+".rows", key, t.Rows, n) {
			want[0] = len(t.Rows)
		}
	}
	if !slices.Equal(t.Shape, want) {
		v.p.add(field+".shape", "%s: want %v (T=%d tokens of case %q, C=%d, H=%d, V=%d), got %v",
			key, want, n, t.Case, v.dims.NEmbd, v.dims.NHead, v.dims.VocabSize, t.Shape)
	}
}

// rows checks that kept positions are sorted, unique, in range and include
// the last position, which checkpoints 9-12 depend on.
func (v *validator) rows(field, key string, rows []int, n int) bool {
	for j, r := range rows {
		if r < 0 || r >= n {
			v.p.add(fmt.Sprintf("%s[%d]", field, j), "%s: row %d outside [0, T=%d)", key, r, n)
			return false
		}
		if j > 0 && r <= rows[j-1] {
			v.p.add(fmt.Sprintf("%s[%d]", field, j), "%s: rows must be sorted and unique, %d follows %d", key, r, rows[j-1])
			return false
		}
	}
	if len(rows) == 0 || rows[len(rows)-1] != n-1 {
		v.p.add(field, "%s: rows must include the last position %d", key, n-1)
		return false
	}
	return true
}

// file checks that a tensor path stays inside the set and is used once.
func (v *validator) file(field, p string, seen map[string]string) {
	if err := checkRelPath(p); err != nil {
		v.p.add(field, "%v", err)
		return
	}
	clean := path.Clean(p)
	if other, dup := seen[clean]; dup {
		v.p.add(field, "%q is also %s", p, other)
		return
	}
	seen[clean] = field
}

// checkRelPath enforces FORMAT.md's "relative, '/' separated, never leaves
// the set directory" lexically; Open additionally resolves symlinks inside
// an os.Root.
func checkRelPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q contains a NUL byte", p)
	case strings.Contains(p, `\`):
		return fmt.Errorf("path %q: use '/' separators", p)
	case path.IsAbs(p) || filepath.IsAbs(p):
		return fmt.Errorf("path %q is absolute, want relative to the set directory", p)
	case !filepath.IsLocal(filepath.FromSlash(p)):
		return fmt.Errorf("path %q leaves the set directory", p)
	case path.Clean(p) == ".":
		return fmt.Errorf("path %q is the set directory itself", p)
	}
	return nil
}

func knownNames(family string, checkpoint int) string {
	names := tensors.FamilyNames(family, checkpoint)
	if len(names) == 0 {
		return "none: its results are in the manifest, not in tensors"
	}
	return strings.Join(names, ", ")
}

func (v *validator) greedy() {
	seen := map[string]bool{}
	for i, g := range v.m.Greedy {
		field := fmt.Sprintf("greedy[%d]", i)
		v.caseRef(field+".case", g.Case)
		if seen[g.Case] {
			v.p.add(field+".case", "duplicate greedy result for case %q", g.Case)
		}
		seen[g.Case] = true
		if g.Token < 0 || g.Token >= v.dims.VocabSize {
			v.p.add(field+".token", "greedy token of case %q: %d outside the vocabulary [0, %d)", g.Case, g.Token, v.dims.VocabSize)
		}
	}
}

func (v *validator) generation() {
	g := v.m.Generation
	if g == nil {
		return
	}
	if g.N < 1 {
		v.p.add("generation.n", "want >= 1, got %d", g.N)
	}
	seen := map[string]bool{}
	for i, r := range g.Results {
		field := fmt.Sprintf("generation.results[%d]", i)
		v.caseRef(field+".case", r.Case)
		if seen[r.Case] {
			v.p.add(field+".case", "duplicate generation result for case %q", r.Case)
		}
		seen[r.Case] = true
		what := fmt.Sprintf("generation of case %q", r.Case)
		v.tokens(field+".tokens", what, r.Tokens)
		if len(r.Tokens) > g.N {
			v.p.add(field+".tokens", "%s: %d tokens, more than n=%d", what, len(r.Tokens), g.N)
		}
		switch r.StopReason {
		case StopMaxTokens:
			if len(r.Tokens) != g.N {
				v.p.add(field+".tokens", "%s: stop_reason %q with %d tokens, want n=%d", what, r.StopReason, len(r.Tokens), g.N)
			}
		case StopEOS:
			if len(r.Tokens) == 0 || r.Tokens[len(r.Tokens)-1] != EOSToken {
				v.p.add(field+".tokens", "%s: stop_reason %q but the last token is not %d", what, r.StopReason, EOSToken)
			}
		case StopContextLength:
		default:
			v.p.add(field+".stop_reason", "%s: want %q, %q or %q, got %q", what, StopMaxTokens, StopEOS, StopContextLength, r.StopReason)
		}
	}
}

func (v *validator) loglikelihood() {
	for i, l := range v.m.Loglikelihood {
		field := fmt.Sprintf("loglikelihood[%d]", i)
		what := fmt.Sprintf("continuation %q", l.Continuation)
		v.tokens(field+".context_tokens", what, l.ContextTokens)
		v.tokens(field+".continuation_tokens", what, l.ContinuationTokens)
		if len(l.ContinuationTokens) == 0 {
			v.p.add(field+".continuation_tokens", "%s: empty", what)
		}
	}
}

func (v *validator) caseRef(field, id string) {
	if _, ok := v.cases[id]; !ok {
		v.p.add(field, "no case %q in cases", id)
	}
}
