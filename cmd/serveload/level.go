package main

import (
	"context"
	"hash/fnv"
	"sync"
	"time"
)

// settings are the parts of the command line a level runs with.
type settings struct {
	scenario                 string
	requests                 int // per level; 0: max(8, 3 x clients)
	promptTokens, maxTokens  int
	prefixTokens, longTokens int
	seed                     uint64
}

const (
	plain        = "plain"
	sharedPrefix = "shared-prefix"
	longPrompt   = "long-prompt"
)

// requestsFor is the number of requests a level of n clients sends: three
// each by default, so every client waits behind the others at least twice,
// and never fewer than 8 (level 1 would otherwise time three requests).
func (s settings) requestsFor(n int) int {
	if s.requests > 0 {
		return s.requests
	}
	return max(8, 3*n)
}

// scenarioSeed mixes the scenario into the seed: serve.sh runs every
// scenario against one server process, and a prompt repeated from an
// earlier scenario would be a cache hit on llama-server (cache_prompt).
func (s settings) scenarioSeed() uint64 {
	h := fnv.New64a()
	h.Write([]byte(s.scenario))
	return s.seed ^ h.Sum64()
}

// shortRequest is request i of a level of n clients: a distinct prompt,
// after the one shared prefix in the shared-prefix scenario.
func (s settings) shortRequest(n, i int) request {
	p := prompt(newRNG(s.scenarioSeed(), kindShort, n, i), s.promptTokens)
	if s.scenario == sharedPrefix {
		p = s.prefix() + " " + p
	}
	return request{prompt: p, maxTokens: s.maxTokens}
}

// prefix is the shared-prefix scenario's system text: the same for every
// request of every level, as a deployment's system prompt would be.
func (s settings) prefix() string {
	return prompt(newRNG(s.scenarioSeed(), kindPrefix, 0, 0), s.prefixTokens)
}

// longRequest is the long-prompt scenario's one long prompt of a level.
func (s settings) longRequest(n int) request {
	return request{prompt: prompt(newRNG(s.scenarioSeed(), kindLong, n, 0), s.longTokens), maxTokens: s.maxTokens, long: true}
}

// runLevel runs one level: n clients, each sending its next request as
// soon as its previous one ends, until the level's requests are sent.
// In the long-prompt scenario client 0 first waits until one short stream
// is a quarter through its tokens (decoding is under way, the first
// prompts are done), then sends the long prompt, then joins the others.
func runLevel(ctx context.Context, c *client, s settings, n int) (time.Duration, []result) {
	total := s.requestsFor(n)
	jobs := make(chan request, total)
	long := s.scenario == longPrompt
	shorts := total
	if long {
		shorts--
	}
	for i := range shorts {
		jobs <- s.shortRequest(n, i)
	}
	close(jobs)

	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	decoding := make(chan struct{})
	var once sync.Once
	trigger := func() { once.Do(func() { close(decoding) }) }
	start := time.Now()
	worker := func(id int) {
		defer wg.Done()
		if long && id == 0 {
			if n > 1 {
				select {
				case <-decoding:
				case <-ctx.Done():
				}
			}
			r := c.stream(ctx, start, s.longRequest(n), nil)
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		}
		var watch func(int)
		if long {
			quarter := max(s.maxTokens/4, 1)
			watch = func(k int) {
				if k == quarter {
					trigger()
				}
			}
		}
		for req := range jobs {
			r := c.stream(ctx, start, req, watch)
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		}
		if long && id != 0 {
			trigger() // the short jobs ran out first: do not wait forever
		}
	}
	wg.Add(n)
	for id := range n {
		go worker(id)
	}
	wg.Wait()
	return time.Since(start), results
}
