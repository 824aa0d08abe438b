package main

import (
	"math/rand/v2"
	"strings"
)

// words are common lower-case English words that GPT-2's BPE and the
// Llama-family SentencePiece vocabularies hold as one token each after a
// space, so a prompt of n words is close to n tokens on either server
// without asking either to tokenize it (TestWordsAreOneTokenEach checks
// GPT-2's merges when the bench model is present).
var words = strings.Fields(`
the of and to in is was for on that with as by at from his her they this
are have had not but be one all were when there been who more their time
which would will about into could some after first other than them only new
two over made its also years people most any such back water where health
many way then what these may like day long much well little great work life
very old world still just man state good should while found take year both
city own last part each simple school under used being three war house
against between place know high those make men small few home even large
around since end down during head left number same because music church
game point open ocean another group play family name once every line power
hand light body word night story field dark food money land book women
town river party side court young black early street front white heart road
turned given told seen taken asked held kept brought set sent began called
named moved wrote built paid lost stood fell ran sat knew felt heard saw
king queen army ship train horse garden window door table chair paper glass
stone fire wind rain snow summer winter spring morning evening village
market island forest mountain valley bridge tower castle letter voice song
dance color green blue red yellow brown silver gold iron wood plant farm
`)

// prompt returns n words drawn with rng: distinct draws give prompts that
// share, at most, a chance first word or two, so no server can reuse a
// previous request's prompt.
func prompt(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// The kinds of prompt, each drawn from its own stream of the generator.
const (
	kindShort  = iota // a level's distinct prompts (or suffixes)
	kindLong          // the long-prompt scenario's long prompt of a level
	kindPrefix        // the shared-prefix scenario's one prefix
	kindWarmUp        // the uncounted first request
)

// newRNG is the seeded generator of one prompt: the scenario (in seed),
// the kind, the level and the request index pick it, so a rerun sends the
// same prompts and no two requests of a run, across levels too, send the
// same one (a repeated prompt is a cache hit for llama-server).
func newRNG(seed uint64, kind, level, index int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(kind)<<56|uint64(level)<<28|uint64(index)))
}
