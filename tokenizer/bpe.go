package tokenizer

// Byte-pair merging of one piece. A piece starts as one token per byte; the
// adjacent pair with the lowest merge rank is merged, repeatedly, until no
// adjacent pair has a merge. Equal ranks mean the same pair, and those
// merge left to right, as in OpenAI's encoder.py.

// pairKey packs two token ids into a map key.
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// merge is the result of merging a pair: its priority and the new token.
type merge struct {
	rank int32
	id   int32
}

// heapThreshold is the piece length (in bytes) above which the O(n log n)
// heap merger is used; below it the quadratic scan is faster.
const heapThreshold = 48

// bpe appends the tokens of piece to out.
func (t *Tokenizer) bpe(out []int32, piece string) []int32 {
	if len(piece) > heapThreshold {
		return t.bpeHeap(out, piece)
	}
	var buf [heapThreshold]int32
	ids := buf[:len(piece)]
	for i := 0; i < len(piece); i++ {
		ids[i] = t.byteID[piece[i]]
	}
	for len(ids) > 1 {
		best, at := merge{rank: -1}, -1
		for i := 0; i+1 < len(ids); i++ {
			m, ok := t.merges[pairKey(ids[i], ids[i+1])]
			if ok && (at < 0 || m.rank < best.rank) {
				best, at = m, i
			}
		}
		if at < 0 {
			break
		}
		// Merge every occurrence of the pair, left to right; none precede at.
		a, b := ids[at], ids[at+1]
		w := at
		for r := at; r < len(ids); {
			if r+1 < len(ids) && ids[r] == a && ids[r+1] == b {
				ids[w] = best.id
				r += 2
			} else {
				ids[w] = ids[r]
				r++
			}
			w++
		}
		ids = ids[:w]
	}
	return append(out, ids...)
}

// symbol is a node of the doubly linked list bpeHeap merges in place.
type symbol struct {
	id         int32
	prev, next int32 // indices, -1 at the ends
	dead       bool
}

// candidate is a possible merge of symbol pos with its successor.
type candidate struct {
	rank, pos, id int32
}

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || c.rank == d.rank && c.pos < d.pos
}

// bpeHeap is bpe for long pieces (a megabyte of "aaaa..." must not take
// quadratic time).
func (t *Tokenizer) bpeHeap(out []int32, piece string) []int32 {
	ids := make([]int32, len(piece))
	for i := range ids {
		ids[i] = t.byteID[piece[i]]
	}
	return mergeIDs(out, ids, t.merges)
}

// mergeIDs merges ids by rank in O(n log n) and appends the result to out.
// Candidates are ordered by (rank, position), so equal pairs still merge
// left to right; entries made stale by an earlier merge are recognised and
// dropped when popped. Hugging Face's BPE (Word::merge_all) works the same
// way, which is why SentencePiece vocabularies from tokenizer.json use it
// too (spm_ranked.go).
func mergeIDs(out []int32, ids []int32, merges map[uint64]merge) []int32 {
	n := len(ids)
	if n == 0 {
		return out
	}
	syms := make([]symbol, n)
	for i := range syms {
		syms[i] = symbol{id: ids[i], prev: int32(i - 1), next: int32(i + 1)}
	}
	syms[n-1].next = -1
	h := make(candHeap, 0, n)
	push := func(pos int32) {
		nx := syms[pos].next
		if nx < 0 {
			return
		}
		if m, ok := merges[pairKey(syms[pos].id, syms[nx].id)]; ok {
			h.push(candidate{rank: m.rank, pos: pos, id: m.id})
		}
	}
	for i := range int32(n - 1) {
		push(i)
	}
	for len(h) > 0 {
		c := h.pop()
		s := &syms[c.pos]
		if s.dead || s.next < 0 {
			continue
		}
		right := &syms[s.next]
		if m, ok := merges[pairKey(s.id, right.id)]; !ok || m.id != c.id {
			continue // stale: a neighbour changed since this was pushed
		}
		s.id = c.id
		right.dead = true
		s.next = right.next
		if s.next >= 0 {
			syms[s.next].prev = c.pos
		}
		if s.prev >= 0 {
			push(s.prev)
		}
		push(c.pos)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out
}

// candHeap is a binary min-heap; container/heap's interface calls cost more
// than the merging itself here.
type candHeap []candidate

func (h *candHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *candHeap) pop() candidate {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < len(s) && s[l].less(s[small]) {
			small = l
		}
		if r := l + 1; r < len(s) && s[r].less(s[small]) {
			small = r
		}
		if small == i {
			break
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
	*h = s
	return top
}
