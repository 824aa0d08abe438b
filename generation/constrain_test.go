package generation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/grammar"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/sampling"
)

// TestGenerateJSONSchema: the tiny model, greedy and sampled with eight
// seeds, writes JSON that parses and matches the schema every time, and
// ends on end of text once the object is whole.
func TestGenerateJSONSchema(t *testing.T) {
	m, tok, _ := tiny.Load(t)
	schema := `{"type":"object","properties":{
		"name":{"type":"string","maxLength":8},
		"age":{"type":"integer"},
		"mood":{"enum":["calm","wild",null]},
		"ok":{"type":"boolean"}},
		"required":["name","age","mood","ok"],"additionalProperties":false}`
	g, err := grammar.FromJSONSchema([]byte(schema))
	require.NoError(t, err)
	prompt := tok.Encode("The answer in JSON:")
	type settings struct {
		name   string
		params sampling.Params
		seed   uint64
	}
	runs := []settings{{"greedy", sampling.Params{Temperature: 0}, 0}}
	for seed := range uint64(8) {
		runs = append(runs, settings{fmt.Sprintf("seed %d", seed), sampling.DefaultParams(), seed})
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			req := generation.Request{Prompt: prompt, MaxTokens: 100, Params: r.params, Seed: &r.seed, Grammar: g}
			res, err := generation.Generate(context.Background(), generation.NewModelDecoder(m), tok, req, nil)
			require.NoError(t, err)
			t.Logf("%d tokens: %s", len(res.Tokens), res.Text)
			require.Equal(t, generation.StopEOS, res.StopReason, "text %q", res.Text)
			var got struct {
				Name *string
				Age  *json.Number
				Mood any
				OK   *bool
			}
			dec := json.NewDecoder(strings.NewReader(res.Text))
			dec.UseNumber()
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&got), "text %q", res.Text)
			require.NotNil(t, got.Name)
			assert.LessOrEqual(t, utf8.RuneCountInString(*got.Name), 8)
			require.NotNil(t, got.Age)
			_, err = got.Age.Int64()
			assert.NoError(t, err, "age %s", *got.Age)
			assert.Contains(t, []any{"calm", "wild", nil}, got.Mood)
			assert.NotNil(t, got.OK)
			assert.True(t, g.Matches([]byte(res.Text)))
		})
	}
}

// TestGenerateGrammarNeedsTokenizer: a grammar is spelled in tokens'
// bytes, so without a tokenizer it is refused by name.
func TestGenerateGrammarNeedsTokenizer(t *testing.T) {
	_, err := generation.Generate(context.Background(), &script{next: []int{1}, ctxLen: 16}, nil,
		generation.Request{Prompt: []int{1}, MaxTokens: 1, Grammar: grammar.JSONObject()}, nil)
	var fe *generation.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "grammar", fe.Field)
}

// TestGenerateGrammarForcesItsText: the fake model wants one token over
// and over; the grammar allows only `{"a":1}` spelled its own way, so
// the argmax among the allowed tokens is taken at every step and the
// generation ends on end of text when the object closes.
func TestGenerateGrammarForcesItsText(t *testing.T) {
	_, tok, _ := tiny.Load(t)
	g, err := grammar.Parse(`root ::= "{\"a\":1}"`)
	require.NoError(t, err)
	want := tok.Encode("!")[0] // never allowed
	s := &script{next: []int{want, want, want, want, want, want, want, want}, ctxLen: 64}
	res, err := generation.Generate(context.Background(), s, tok,
		generation.Request{Prompt: []int{1}, MaxTokens: 20, Params: sampling.Params{Temperature: 0}, Grammar: g}, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, res.Text)
	assert.Equal(t, generation.StopEOS, res.StopReason)
	assert.Equal(t, generation.EOSToken, res.Tokens[len(res.Tokens)-1])
}

func TestMaskLogits(t *testing.T) {
	logits := []float32{1, 2, 3, 4, 5}
	dst := make([]float32, 5)
	n := generation.MaskLogits(dst, logits, []uint64{0b10110})
	assert.Equal(t, 3, n)
	for i, want := range []bool{false, true, true, false, true} {
		if want {
			assert.Equal(t, logits[i], dst[i])
		} else {
			assert.True(t, dst[i] < -1e38, "token %d should be -Inf, is %v", i, dst[i])
		}
	}
	assert.Zero(t, generation.MaskLogits(dst, logits, []uint64{0}))
}
