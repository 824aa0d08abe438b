package server_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// servedModel is one tiny model behind its own server, with the model,
// tokenizer and reference set its answers are checked against.
type servedModel struct {
	name string
	ts   *testServer
	m    *model.Model
	tok  *tokenizer.Tokenizer
	set  *references.Set
}

// everyModel serves GPT-2 and every Llama-family tiny model
// (fixture.Served), GPT-2 first, each with its own chat template: what
// every client test runs on, since a client defect may show on one
// family only (a SentencePiece space, a BOS, an EOS id). A test calls it
// once and runs its subtests per model on the servers it returns.
func everyModel(t *testing.T) []servedModel { return everyModelWith(t, server.Config{}) }

// everyModelWith is everyModel with servers configured as cfg.
func everyModelWith(t *testing.T, cfg server.Config) []servedModel {
	t.Helper()
	m, tok, set := tiny.Load(t)
	out := []servedModel{{"tiny-gpt2", start(t, cfg), m, tok, set}}
	for _, name := range fixture.Served() {
		f := loadFamily(t, name)
		srv := server.New(cfg)
		require.NoError(t, srv.SetModelChat(f.m, f.tok, f.own))
		out = append(out, servedModel{name, serve(t, srv), f.m, f.tok, f.set})
	}
	return out
}

// familyModel is a Llama-family tiny model as loaded from testdata.
type familyModel struct {
	m   *model.Model
	tok *tokenizer.Tokenizer
	own server.ChatFormatter // its tokenizer_config.json's template
	set *references.Set
}

// families holds each family's model once loaded: loaded once per test
// binary and shared by every test, as tiny.Load shares GPT-2's, since a
// model, tokenizer and template are read-only once loaded (a test that
// changes one loads its own).
var families struct {
	sync.Mutex
	loaded map[string]*familyModel
}

// loadFamily is testdata/NAME's model, tokenizer, chat template and
// reference set, one of fixture.Served.
func loadFamily(t *testing.T, name string) *familyModel {
	t.Helper()
	families.Lock()
	defer families.Unlock()
	if f, ok := families.loaded[name]; ok {
		return f
	}
	m, tok := tiny.Family(t, name)
	own, err := server.ModelChatTemplate(m)
	require.NoError(t, err)
	require.NotNil(t, own, "%s: a chat template", name)
	set, err := references.Open(fixture.FamilyReferences(name))
	require.NoError(t, err, name)
	f := &familyModel{m, tok, own, set}
	if families.loaded == nil {
		families.loaded = map[string]*familyModel{}
	}
	families.loaded[name] = f
	return f
}

// eos is the model's first end-of-sequence token, the one a generation
// ends on.
func (s servedModel) eos() int { return s.m.Config.EOSTokens()[0] }

// textResults are the set's greedy results whose case has a prompt's
// text: a case the reference derives from another's tokens (past-window,
// across-longrope) has only ids, which the text routes cannot take.
func (s servedModel) textResults(t *testing.T) []references.GenerationResult {
	t.Helper()
	var out []references.GenerationResult
	for _, r := range s.set.Manifest.Generation.Results {
		c, ok := s.set.Case(r.Case)
		require.True(t, ok, "%s: case %s", s.name, r.Case)
		if c.Prompt != nil {
			out = append(out, r)
		}
	}
	require.NotEmpty(t, out, "%s: no case has a prompt", s.name)
	return out
}

// continuation is the text the reference result's tokens add to their
// prompt, as the server returns a completion (a SentencePiece piece's
// leading space kept).
func (s servedModel) continuation(t *testing.T, r references.GenerationResult) string {
	t.Helper()
	text, err := s.tok.DecodeContinuation(r.Tokens)
	require.NoError(t, err, "%s: case %s", s.name, r.Case)
	if r.Text != nil {
		require.Equal(t, *r.Text, text, "%s: case %s: the reference's own text", s.name, r.Case)
	}
	return text
}

// chatIDs is a conversation as the server prompts the model with it: the
// model's own chat template's rendering (GPT-2's, DefaultChatTemplate)
// encoded as the server encodes it, so that a chat answer can be compared
// with the completion of those ids.
func (s servedModel) chatIDs(t *testing.T, msgs ...server.ChatMessage) []int {
	t.Helper()
	f, err := server.ModelChatTemplate(s.m)
	require.NoError(t, err)
	if f == nil {
		f, err = server.ParseChatTemplate("default", server.DefaultChatTemplate)
		require.NoError(t, err)
	}
	text, err := f.Format(msgs)
	require.NoError(t, err)
	if f.Special() {
		return s.tok.EncodeSpecial(text)
	}
	return s.tok.EncodePrompt(text)
}
