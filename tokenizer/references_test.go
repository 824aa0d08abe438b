package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manifest is the part of a reference set (references/FORMAT.md) that
// involves the tokenizer.
type manifest struct {
	Model struct {
		Path string `json:"path"`
	} `json:"model"`
	Cases []struct {
		ID     string  `json:"id"`
		Prompt *string `json:"prompt"`
		Tokens []int   `json:"tokens"`
	} `json:"cases"`
	Generation struct {
		Results []struct {
			Case   string  `json:"case"`
			Tokens []int   `json:"tokens"`
			Text   *string `json:"text"`
		} `json:"results"`
	} `json:"generation"`
	Loglikelihood []struct {
		Context            string `json:"context"`
		Continuation       string `json:"continuation"`
		ContextTokens      []int  `json:"context_tokens"`
		ContinuationTokens []int  `json:"continuation_tokens"`
	} `json:"loglikelihood"`
}

// The reference sets made by PyTorch and the Python tokenizer must agree
// with this package: prompts encode to the recorded tokens, the greedy
// generations decode to the recorded text, loglikelihood pairs split alike.
func TestReferenceSets(t *testing.T) {
	sets, _ := filepath.Glob("../testdata/references/*/manifest.json")
	if len(sets) == 0 {
		t.Skip("no reference sets in testdata/references")
	}
	for _, path := range sets {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var m manifest
			require.NoError(t, json.Unmarshal(data, &m))
			tok, err := Load(filepath.Join("..", filepath.FromSlash(m.Model.Path)))
			if errors.Is(err, ErrNoTokenizer) {
				t.Skip(err)
			}
			require.NoError(t, err)
			for _, c := range m.Cases {
				if c.Prompt != nil {
					want := tok.Encode(*c.Prompt)
					if bos, add := tok.BOS(); add { // a Llama prompt starts with <s>, as HF's tokenizer adds it
						want = append([]int{bos}, want...)
					}
					assert.Equal(t, c.Tokens, want, "case %s prompt", c.ID)
				}
			}
			require.NotEmpty(t, m.Generation.Results)
			for _, r := range m.Generation.Results {
				if r.Text == nil {
					continue
				}
				var ids []int // <|endoftext|> ends a generation and is not text
				for _, id := range r.Tokens {
					if id != tok.EOT() {
						ids = append(ids, id)
					}
				}
				text, err := tok.Decode(ids)
				require.NoError(t, err)
				assert.Equal(t, *r.Text, text, "generation of case %s", r.Case)
				assert.Equal(t, *r.Text, streamText(t, tok, ids), "streamed generation of case %s", r.Case)
			}
			for _, p := range m.Loglikelihood {
				ctx, cont := loglikelihoodSplit(tok, p.Context, p.Continuation)
				assert.Equal(t, p.ContextTokens, ctx, "context %q", p.Context)
				assert.Equal(t, p.ContinuationTokens, cont, "continuation %q", p.Continuation)
			}
		})
	}
}

// loglikelihoodSplit is lm-evaluation-harness's tokenization of a pair, as
// pytorch/dump_references.py does it.
func loglikelihoodSplit(tok *Tokenizer, context, continuation string) ([]int, []int) {
	if context == "" {
		return []int{tok.EOT()}, tok.Encode(continuation)
	}
	trimmed := strings.TrimRightFunc(context, isPythonSpace)
	continuation = context[len(trimmed):] + continuation
	whole := tok.Encode(trimmed + continuation)
	ctx := tok.Encode(trimmed)
	return ctx, whole[len(ctx):]
}

// isPythonSpace is str.isspace(), which rstrip() uses: Unicode White_Space
// plus the separators U+001C..U+001F.
func isPythonSpace(r rune) bool {
	return r >= 0x1c && r <= 0x1f || unicode.IsSpace(r)
}
