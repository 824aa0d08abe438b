package grammar

import "slices"

// Vocab is a model's vocabulary as a trie of its tokens' bytes, built once
// and shared by every Matcher: a mask walks it once, so tokens that share
// a prefix share its transitions, and a prefix the grammar refuses prunes
// every token under it.
type Vocab struct {
	size  int
	eos   []int
	edges []edge  // children of node i: edges[first[i]:first[i+1]]
	first []int32 // len nodes+1
	ends  []int32 // tokens ending at node i: endIDs[endAt[i]:endAt[i+1]]
	endAt []int32
}

type edge struct {
	b     byte
	child int32
}

// NewVocab indexes tokens (id -> bytes). Tokens with no bytes, and those
// in never (the special tokens other than end of text: their text is not
// what they mean), are never allowed; eos are allowed exactly when the
// text is a whole sentence.
func NewVocab(tokens [][]byte, eos, never []int) *Vocab {
	skip := map[int]bool{}
	for _, id := range append(append([]int(nil), eos...), never...) {
		skip[id] = true
	}
	// Build with maps, then flatten in breadth-first order.
	type tnode struct {
		kids map[byte]int32
		ids  []int32
	}
	nodes := []tnode{{kids: map[byte]int32{}}}
	for id, b := range tokens {
		if len(b) == 0 || skip[id] {
			continue
		}
		n := int32(0)
		for _, c := range b {
			k, ok := nodes[n].kids[c]
			if !ok {
				k = int32(len(nodes))
				nodes = append(nodes, tnode{kids: map[byte]int32{}})
				nodes[n].kids[c] = k
			}
			n = k
		}
		nodes[n].ids = append(nodes[n].ids, int32(id))
	}
	v := &Vocab{size: len(tokens), eos: slices.Clone(eos)}
	for _, n := range nodes {
		v.first = append(v.first, int32(len(v.edges)))
		v.endAt = append(v.endAt, int32(len(v.ends)))
		keys := make([]byte, 0, len(n.kids))
		for c := range n.kids {
			keys = append(keys, c)
		}
		slices.Sort(keys)
		for _, c := range keys {
			v.edges = append(v.edges, edge{c, n.kids[c]})
		}
		v.ends = append(v.ends, n.ids...)
	}
	v.first = append(v.first, int32(len(v.edges)))
	v.endAt = append(v.endAt, int32(len(v.ends)))
	return v
}

// maxMasks bounds the masks a Matcher keeps (each Size/8 bytes).
const maxMasks = 64

// Mask returns the tokens that may come next as a bitset over v's ids
// (bit id%64 of word id/64): each token whose bytes keep the text a
// prefix of a sentence, and the end-of-text tokens if the text is whole.
// The slice is the matcher's, valid until the next Mask.
func (m *Matcher) Mask(v *Vocab) []uint64 {
	if mask, ok := m.masks[m.cur]; ok {
		return mask
	}
	var mask []uint64
	if len(m.maskRefs) >= maxMasks { // reuse the oldest's memory
		old := m.maskRefs[0]
		m.maskRefs = m.maskRefs[1:]
		mask = m.masks[old]
		delete(m.masks, old)
		clear(mask)
	} else {
		mask = make([]uint64, (v.size+63)/64)
	}
	set := func(id int32) { mask[id/64] |= 1 << (id % 64) }
	var walk func(n, s int32)
	walk = func(n, s int32) {
		for _, e := range v.edges[v.first[n]:v.first[n+1]] {
			t := m.step(s, e.b)
			if t == dead {
				continue
			}
			for _, id := range v.ends[v.endAt[e.child]:v.endAt[e.child+1]] {
				set(id)
			}
			walk(e.child, t)
		}
	}
	walk(0, m.cur)
	if m.Complete() {
		for _, id := range v.eos {
			if id >= 0 && id < v.size {
				set(int32(id))
			}
		}
	}
	m.masks[m.cur] = mask
	m.maskRefs = append(m.maskRefs, m.cur)
	return mask
}

// Allowed reports whether bit id of mask is set.
func Allowed(mask []uint64, id int) bool {
	return id >= 0 && id/64 < len(mask) && mask[id/64]>>(id%64)&1 != 0
}
