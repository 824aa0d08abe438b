// Package probe checks a running inference server from the outside: it
// asks the server, through whichever HTTP API it speaks, for what that API
// exposes (prompt log-probabilities, log-likelihoods, top alternatives,
// greedy continuations as ids or text) on the cases of a reference set,
// and compares the answers with the references as the checkpoints compare
// llorch-check's own forward pass. It sees no tensor, so it covers
// checkpoints 9 to 12 only, each where the API shows it. A server that is
// unreachable or answers something other than its API is an error (wrapping
// ErrServer), never a pass.
package probe

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
)

// Options say where the server is, how to reach it and which API to speak.
type Options struct {
	Endpoint string // base URL, e.g. http://127.0.0.1:8080
	APIKey   string // sent as a bearer token when set
	Model    string // the "model" field of OpenAI requests; empty: the first of /v1/models, else none
	API      string // one of APIs, or "" / "auto" to detect it
	TopK     int    // alternatives to ask for where the API lists them; 0: DefaultTopK
	Client   *http.Client
	// Tokenizer is the served model's, for APIs that take text prompts
	// (Ollama); nil where none is needed.
	Tokenizer *tokenizer.Tokenizer
	// Corpus is a corpus set (dump_references.py --corpus) to teacher-force
	// for the distribution verdict; empty: none. CorpusChunks > 0 takes
	// only its first chunks.
	Corpus       string
	CorpusChunks int
	// NoInvariance skips the invariance checks (a canary's lighter run).
	NoInvariance bool
	// Progress reports long work (the corpus); nil for silence.
	Progress func(format string, args ...any)
	// DefaultReferences says the set is the command line's default, so
	// the advice's bisect command leaves --references out: it picks the
	// same set, where a path of the built-in copy would not paste.
	DefaultReferences bool
}

// DefaultTopK is what OpenAI's legacy logprobs and TGI's top_n_tokens allow
// by default.
const DefaultTopK = 5

// APIs are the dialects the probe speaks, for --api.
var APIs = []string{"openai", "llamacpp", "ollama", "worker", "llorch", "tgi"}

// dialect is one HTTP API: what it can show, and how to ask.
type dialect struct {
	checks    []int // checkpoints it exposes
	unexposed []int // of 9..12, those it does not
	run       func(ctx context.Context, p *prober) ([]checkpoints.Result, error)
	// engine answers the invariance checks and the corpus verdict; nil
	// when the API cannot (noEngine says why).
	engine   func(p *prober) engine
	noEngine string
}

var dialects = map[string]dialect{
	"openai": {checks: []int{9, 11, 12}, unexposed: []int{10}, run: runOpenAI,
		engine: func(p *prober) engine { return &openAIEngine{p: p} }},
	"llamacpp": {checks: []int{9, 10, 11, 12}, run: runLlamaCpp,
		engine: func(p *prober) engine { return &llamaEngine{p: p} }},
	"ollama": {checks: []int{9, 10, 11, 12}, run: runOllama,
		engine: func(p *prober) engine { return p.engine }},
	"worker": {checks: []int{10, 12}, unexposed: []int{9, 11}, run: runWorker,
		noEngine: "the worker's /execute streams no log-probabilities and takes text prompts only"},
	"llorch": {checks: []int{9, 10, 12}, unexposed: []int{11}, run: runLlorch,
		noEngine: "the batch API's /generate gives text only, without log-probabilities"},
	"tgi": {checks: []int{9, 10, 11, 12}, run: runTGI,
		noEngine: "not implemented for TGI's /generate yet: probe it through its OpenAI route with --api openai"},
}

// prober holds one run's server, options and reference cases.
type prober struct {
	c     *client
	opt   Options
	set   *references.Set
	cases []refCase
	// limits are checks the API did not allow, noted by the dialect.
	limits []checkpoints.Limit
	// engine is the dialect's, where its run made one (Ollama's needs
	// the model name and vocabulary it found).
	engine engine
}

// invariance runs the invariance checks on invarianceCase, or says why
// the set has none to run them on.
func (p *prober) invariance(ctx context.Context, e engine) ([]checkpoints.Invariance, *checkpoints.Limit, error) {
	rc := p.invarianceCase()
	if rc == nil {
		return nil, &checkpoints.Limit{Check: "invariance", Why: "the reference set has no case with a generation that fits twice in the context"}, nil
	}
	inv, err := invariance(ctx, e, rc.Tokens, rc.GenN, p.opt.TopK)
	return inv, nil, err
}

// invarianceCase is the case the invariance checks generate from: the
// longest prompt whose generation fits twice in the context (the
// prefix-extended request adds half of it to the prompt).
func (p *prober) invarianceCase() *refCase {
	ctxLen := 0
	if dims, err := p.set.Manifest.ModelConfig(); err == nil {
		ctxLen = dims.NPositions
	}
	var best *refCase
	for i := range p.cases {
		rc := &p.cases[i]
		if rc.Gen == nil || rc.GenN < 2 || len(rc.Tokens) < 1 || (ctxLen > 0 && len(rc.Tokens)+2*rc.GenN > ctxLen) {
			continue
		}
		if best == nil || len(rc.Tokens) > len(best.Tokens) {
			best = rc
		}
	}
	return best
}

// Run checks the server against every case and log-likelihood pair of set.
func Run(ctx context.Context, set *references.Set, opt Options) (*checkpoints.Report, error) {
	if opt.Client == nil {
		opt.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	if opt.TopK == 0 {
		opt.TopK = DefaultTopK
	}
	if opt.TopK < 2 {
		return nil, fmt.Errorf("top-k %d: want at least 2, so a greedy margin can be measured", opt.TopK)
	}
	opt.Endpoint = strings.TrimRight(opt.Endpoint, "/")
	cases, err := loadCases(set)
	if err != nil {
		return nil, err
	}
	if err := generatedText(cases, opt.Tokenizer); err != nil {
		return nil, err
	}
	var corpus *corpusSet
	if opt.Corpus != "" {
		if corpus, err = openCorpus(opt.Corpus, set); err != nil {
			return nil, err
		}
	}
	p := &prober{c: &client{base: opt.Endpoint, apiKey: opt.APIKey, hc: opt.Client}, opt: opt, set: set, cases: cases}
	name, how := opt.API, "--api"
	if name == "" || name == "auto" {
		if name, how, err = detect(ctx, p.c); err != nil {
			return nil, err
		}
	}
	d, ok := dialects[name]
	if !ok {
		return nil, fmt.Errorf("--api %q: want auto, %s", opt.API, strings.Join(APIs, ", "))
	}
	results, err := d.run(ctx, p)
	if err != nil {
		return nil, err
	}
	api := &checkpoints.API{Name: name, Chosen: how, Checks: d.checks, Unexposed: d.unexposed, Limits: p.limits}
	var eng engine // one per run: it learns what the server refuses
	if d.engine != nil {
		eng = d.engine(p)
	}
	var inv []checkpoints.Invariance
	var lim *checkpoints.Limit
	switch {
	case opt.NoInvariance:
	case d.engine == nil:
		api.Limits = append(api.Limits, checkpoints.Limit{Check: "invariance", Why: d.noEngine})
	default:
		if inv, lim, err = p.invariance(ctx, eng); err != nil {
			return nil, err
		}
		if lim != nil {
			api.Limits = append(api.Limits, *lim)
		}
	}
	var verdict *checkpoints.Corpus
	switch {
	case corpus == nil:
	case d.engine == nil:
		api.Limits = append(api.Limits, checkpoints.Limit{Check: "corpus", Why: d.noEngine})
	default:
		verdict, err = runCorpus(ctx, eng, corpus, opt.TopK, opt.CorpusChunks, opt.Progress)
		if limited(err) {
			api.Limits = append(api.Limits, checkpoints.Limit{Check: "corpus", Why: err.Error()})
		} else if err != nil {
			return nil, err
		}
	}
	rep := checkpoints.NewReport(opt.Endpoint, set.Dir, api, results)
	rep.Emulates = set.Manifest.Emulates()
	rep.SetInvariance(inv)
	rep.Corpus = verdict
	rep.Next = nextSteps(rep, bisectCommand(set.Dir, opt.DefaultReferences))
	return rep, nil
}

// collect runs perCase on every case, then perPair (when not nil) on
// every log-likelihood pair of the set. perPair returns the
// continuation's summed log-probability, or a failed result when the
// server cannot be compared (e.g. it tokenized the pair otherwise).
func (p *prober) collect(ctx context.Context, perCase func(context.Context, *refCase) ([]checkpoints.Result, error),
	perPair func(context.Context, int, references.Loglikelihood) (float64, *checkpoints.Result, error)) ([]checkpoints.Result, error) {
	var out []checkpoints.Result
	for i := range p.cases {
		rc := &p.cases[i]
		rs, err := perCase(ctx, rc)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", rc.ID, err)
		}
		out = append(out, rs...)
	}
	if perPair == nil {
		return out, nil
	}
	for i, ll := range p.set.Manifest.Loglikelihood {
		sum, failed, err := perPair(ctx, i, ll)
		switch {
		case err != nil:
			return nil, fmt.Errorf("loglikelihood[%d]: %w", i, err)
		case failed != nil:
			out = append(out, *failed)
		default:
			out = append(out, loglikelihoodResult(i, ll, sum))
		}
	}
	return out, nil
}

// sumFrom adds the log-probabilities from position from on.
func sumFrom(lps []float64, from int) float64 {
	sum := 0.0
	for _, v := range lps[from:] {
		sum += v
	}
	return sum
}

// tokenCountFailure adds to rs the failed check for a server that
// encoded a prompt into other tokens than the reference did (got of
// them), and says so in each of rs: they compare continuations of
// another prompt.
func tokenCountFailure(rc *refCase, got int, rs []checkpoints.Result) []checkpoints.Result {
	note := fmt.Sprintf("the server encoded the prompt as %d tokens, the reference as %d", got, len(rc.Tokens))
	for i := range rs {
		rs[i].AppendNote(note)
	}
	return append(rs, checkpoints.Failed(12, "prompt_tokens", rc.ID, "%s", note))
}
