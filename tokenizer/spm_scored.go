package tokenizer

// llama.cpp's SentencePiece merging (llm_tokenizer_spm_session), for GGUF
// vocabularies, which carry a score per token and no merges: the text
// starts as one symbol per character, and the two neighbours whose joined
// text is a token with the highest score merge, repeatedly (ties: the
// leftmost pair). A symbol left that is not a token is spelled in bytes.
// Characters are cut by their lead byte, as llama.cpp does, except that a
// lead byte claims only the continuation bytes (0x80-0xBF) that follow it:
// the same cut for UTF-8, but llama.cpp's would let a stray lead byte
// swallow the first bytes of the next "▁", which then decode as "▁", not a
// space. Text that is not UTF-8 thus still comes back byte for byte.

type spmSymbol struct {
	start, n   int32 // the symbol's text is text[start:start+n]; n 0 once merged away
	prev, next int32 // neighbours, -1 at the ends
}

type spmBigram struct {
	left, right int32
	score       float32
	size        int32 // bytes of the joined text when queued, to spot stale entries
}

// before orders the queue: higher score first, then the leftmost.
func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || a.score == b.score && a.left < b.left
}

// utf8LenLlama is llama.cpp's unicode_len_utf8: the sequence length a lead
// byte announces, 1 for continuation bytes.
func utf8LenLlama(c byte) int32 {
	switch {
	case c < 0xC0:
		return 1
	case c < 0xE0:
		return 2
	case c < 0xF0:
		return 3
	}
	return 4
}

func (m *spm) appendScored(out []int, text string) []int {
	syms := make([]spmSymbol, 0, len(text))
	for off := int32(0); off < int32(len(text)); {
		n := int32(1)
		for want := utf8LenLlama(text[off]); n < want && off+n < int32(len(text)) && text[off+n]&0xC0 == 0x80; {
			n++
		}
		i := int32(len(syms))
		syms = append(syms, spmSymbol{start: off, n: n, prev: i - 1, next: i + 1})
		off += n
	}
	syms[len(syms)-1].next = -1
	var q bigramHeap
	tryAdd := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		joined := text[syms[l].start : syms[r].start+syms[r].n]
		id, ok := m.vocab[joined]
		if !ok {
			return
		}
		q.push(spmBigram{left: l, right: r, score: m.scores[id], size: int32(len(joined))})
	}
	for i := int32(1); i < int32(len(syms)); i++ {
		tryAdd(i-1, i)
	}
	for len(q) > 0 {
		b := q.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // stale: one side merged since
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		tryAdd(l.prev, b.left)
		tryAdd(b.left, l.next)
	}
	// Merges go into the left symbol, so the first one is never merged away.
	for i := int32(0); i >= 0; i = syms[i].next {
		s := text[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := m.vocab[s]; ok {
			out = append(out, int(id))
			continue
		}
		out = m.appendBytes(out, s)
	}
	return out
}

// bigramHeap is a binary heap ordered by before.
type bigramHeap []spmBigram

func (h *bigramHeap) push(c spmBigram) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bigramHeap) pop() spmBigram {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, best := 2*i+1, i
		if l < len(s) && s[l].before(s[best]) {
			best = l
		}
		if r := l + 1; r < len(s) && s[r].before(s[best]) {
			best = r
		}
		if best == i {
			break
		}
		s[i], s[best] = s[best], s[i]
		i = best
	}
	*h = s
	return top
}
