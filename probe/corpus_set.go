package probe

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/llorch/llorch-check/internal/regularfile"
	"github.com/llorch/llorch-check/references"
)

// corpusFile is a corpus set's manifest (references/FORMAT.md, "Corpus
// sets"), written by dump_references.py --corpus.
const corpusFile = "corpus.json"

// corpusSet is PyTorch's distributions over a chunked corpus: at each of
// P scored positions, the float64 truth's K most likely tokens with both
// forwards' log-probabilities there, and the next token's.
type corpusSet struct {
	dir      string
	manifest struct {
		FormatVersion int                  `json:"format_version"`
		Kind          string               `json:"kind"`
		Model         references.ModelInfo `json:"model"`
		Tokens        []int                `json:"tokens"`
		NCtx          int                  `json:"n_ctx"`
		Chunks        int                  `json:"chunks"`
		ScoredFrom    int                  `json:"scored_from"`
		Positions     int                  `json:"positions"`
		TopK          int                  `json:"top_k"`
	}
	ids     []int32   // [P, K]
	lp32    []float32 // [P, K]
	lp64    []float64 // [P, K]
	targets []int32   // [P]
	tlp32   []float32 // [P]
	tlp64   []float64 // [P]
	top1    []int32   // [P], PyTorch float32's argmax
	kl32    []float64 // [P], PyTorch float32's exact KL from the truth
}

// openCorpus reads a corpus set and checks it describes the same weights
// as the reference set.
func openCorpus(dir string, set *references.Set) (*corpusSet, error) {
	c := &corpusSet{dir: dir}
	path := filepath.Join(dir, corpusFile)
	data, err := regularfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--corpus %s: %w (a corpus set is written by pytorch/dump_references.py --corpus FILE.txt)", dir, err)
	}
	m := &c.manifest
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	P, K := m.Positions, m.TopK
	perChunk := m.NCtx - 1 - m.ScoredFrom
	switch {
	case m.FormatVersion != 1 || m.Kind != "corpus":
		return nil, fmt.Errorf("%s: format_version %d, kind %q: want 1, \"corpus\"", path, m.FormatVersion, m.Kind)
	case m.NCtx < 2 || m.ScoredFrom < 0 || perChunk < 1:
		return nil, fmt.Errorf("%s: n_ctx %d, scored_from %d: no position is scored", path, m.NCtx, m.ScoredFrom)
	case m.Chunks < 1 || len(m.Tokens) != m.Chunks*m.NCtx:
		return nil, fmt.Errorf("%s: %d tokens for %d chunks of n_ctx %d", path, len(m.Tokens), m.Chunks, m.NCtx)
	case P != m.Chunks*perChunk:
		return nil, fmt.Errorf("%s: positions %d, want %d chunks × %d scored", path, P, m.Chunks, perChunk)
	case K < 1:
		return nil, fmt.Errorf("%s: top_k %d, want at least 1", path, K)
	}
	if want := set.Manifest.Model.WeightsSHA256; m.Model.WeightsSHA256 != want {
		return nil, fmt.Errorf("%s: made from weights with sha256 %s, the reference set %s from %s: not the same model", path, m.Model.WeightsSHA256, set.Dir, want)
	}
	read := func(err error) error {
		if err != nil {
			return fmt.Errorf("corpus set %s: %w", dir, err)
		}
		return nil
	}
	pk, p1 := []int{P, K}, []int{P}
	var errs [8]error
	c.ids, errs[0] = references.ReadNPY[int32](dir, "ids.npy", pk)
	c.lp32, errs[1] = references.ReadNPY[float32](dir, "logprobs.npy", pk)
	c.lp64, errs[2] = references.ReadNPY[float64](dir, "logprobs_f64.npy", pk)
	c.targets, errs[3] = references.ReadNPY[int32](dir, "targets.npy", p1)
	c.tlp32, errs[4] = references.ReadNPY[float32](dir, "target_logprobs.npy", p1)
	c.tlp64, errs[5] = references.ReadNPY[float64](dir, "target_logprobs_f64.npy", p1)
	c.top1, errs[6] = references.ReadNPY[int32](dir, "top1.npy", p1)
	c.kl32, errs[7] = references.ReadNPY[float64](dir, "kl_f32.npy", p1)
	for _, err := range errs {
		if err := read(err); err != nil {
			return nil, err
		}
	}
	for i, t := range c.targets {
		chunk, j := i/perChunk, m.ScoredFrom+i%perChunk
		if want := m.Tokens[chunk*m.NCtx+j+1]; int(t) != want {
			return nil, fmt.Errorf("corpus set %s: targets.npy[%d] is %d, the corpus token after chunk %d position %d is %d", dir, i, t, chunk, j, want)
		}
	}
	return c, nil
}

// chunk returns chunk i's tokens.
func (c *corpusSet) chunk(i int) []int {
	n := c.manifest.NCtx
	return c.manifest.Tokens[i*n : (i+1)*n]
}

// row returns position p's K ids and both forwards' log-probabilities.
func (c *corpusSet) row(p int) ([]int32, []float32, []float64) {
	K := c.manifest.TopK
	return c.ids[p*K : (p+1)*K], c.lp32[p*K : (p+1)*K], c.lp64[p*K : (p+1)*K]
}
