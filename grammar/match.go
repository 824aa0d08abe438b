package grammar

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/llorch/llorch-check/internal/utf8seq"
)

// Matcher follows one text through a Grammar. Not safe for concurrent use;
// each generation takes its own (Grammar.NewMatcher).
type Matcher struct {
	g *Grammar

	// Stacks are interned: node i is the grammar position nodes[i].pos
	// above the stack nodes[i].next (-1: the bottom), so two equal stacks
	// are one number. A state is a sorted set of stacks whose tops are
	// character elements (accept: the empty stack, -1, among them) and
	// the bytes of an unfinished UTF-8 character.
	nodes    []node
	nodeID   map[node]int32
	states   []state
	stateID  map[string]int32
	next     map[uint64]int32 // (state, byte) -> state, or dead
	cur      int32
	masks    map[int32][]uint64
	maskRefs []int32 // masks' states, oldest first
}

type node struct{ pos, next int32 }

type state struct {
	stacks  []int32
	pending []byte
	accept  bool
}

const dead = -1

// maxStates bounds one Matcher's interned states (a grammar whose states
// grow without end, e.g. counting, fails the text instead of the memory).
const maxStates = 1 << 20

// NewMatcher starts a text at the grammar's root.
func (g *Grammar) NewMatcher() *Matcher {
	m := &Matcher{g: g, nodeID: map[node]int32{}, stateID: map[string]int32{}, next: map[uint64]int32{}, masks: map[int32][]uint64{}}
	var set []int32
	seen := map[int32]bool{}
	for _, a := range g.alts[g.root] {
		set = m.expand(set, m.intern(node{a, -1}), seen)
	}
	m.cur = m.internState(set, nil)
	return m
}

func (m *Matcher) intern(n node) int32 {
	if id, ok := m.nodeID[n]; ok {
		return id
	}
	id := int32(len(m.nodes))
	m.nodes = append(m.nodes, n)
	m.nodeID[n] = id
	return id
}

// expand adds to set the stacks that stack s stands for with a character
// element (or nothing: -1) on top: a rule reference is replaced by each of
// its alternatives above the rest of the sequence, an ended alternative by
// what follows it. seen stops a nullable loop from expanding forever.
func (m *Matcher) expand(set []int32, s int32, seen map[int32]bool) []int32 {
	if s >= 0 {
		if seen[s] {
			return set
		}
		seen[s] = true
	}
	if s < 0 {
		return append(set, -1)
	}
	n := m.nodes[s]
	e := &m.g.elems[n.pos]
	switch e.kind {
	case elemChar:
		return append(set, s)
	case elemEnd:
		return m.expand(set, n.next, seen)
	}
	// A reference that ends its alternative returns straight to what
	// follows the alternative (llama.cpp's tail call): pushing the ended
	// alternative would grow the stack by one node per repetition of
	// star ::= x star, and every step would walk down that chain.
	rest := n.next
	if m.g.elems[n.pos+1].kind != elemEnd {
		rest = m.intern(node{n.pos + 1, n.next})
	}
	for _, a := range m.g.alts[e.rule] {
		set = m.expand(set, m.intern(node{a, rest}), seen)
	}
	return set
}

func (m *Matcher) internState(set []int32, pending []byte) int32 {
	if len(set) == 0 {
		return dead
	}
	slices.Sort(set)
	set = slices.Compact(set)
	key := make([]byte, 0, 1+len(pending)+4*len(set))
	key = append(key, byte(len(pending)))
	key = append(key, pending...)
	for _, s := range set {
		key = binary.LittleEndian.AppendUint32(key, uint32(s))
	}
	if id, ok := m.stateID[string(key)]; ok {
		return id
	}
	if len(m.states) >= maxStates {
		return dead
	}
	id := int32(len(m.states))
	m.states = append(m.states, state{stacks: set, pending: pending, accept: len(pending) == 0 && set[0] == -1})
	m.stateID[string(key)] = id
	return id
}

// step is the state after byte b from state s, or dead.
func (m *Matcher) step(s int32, b byte) int32 {
	k := uint64(s)<<8 | uint64(b)
	if t, ok := m.next[k]; ok {
		return t
	}
	t := m.transition(s, b)
	m.next[k] = t
	return t
}

func (m *Matcher) transition(s int32, b byte) int32 {
	st := &m.states[s]
	pending := append(append([]byte(nil), st.pending...), b)
	if !validPrefix(pending) {
		return dead
	}
	if !utf8.FullRune(pending) {
		lo, hi := runeSpan(pending)
		var set []int32
		for _, n := range st.stacks {
			if n >= 0 && m.g.elems[m.nodes[n].pos].overlaps(lo, hi) {
				set = append(set, n)
			}
		}
		return m.internState(set, pending)
	}
	r, _ := utf8.DecodeRune(pending)
	var set []int32
	seen := map[int32]bool{}
	for _, n := range st.stacks {
		if n < 0 {
			continue
		}
		nd := m.nodes[n]
		if m.g.elems[nd.pos].matches(r) {
			set = m.expand(set, m.intern(node{nd.pos + 1, nd.next}), seen)
		}
	}
	return m.internState(set, nil)
}

// validPrefix reports whether p starts a valid UTF-8 encoding.
func validPrefix(p []byte) bool {
	n, lo, hi := utf8seq.Shape(p[0])
	if n == 0 || len(p) > n {
		return false
	}
	for i, b := range p[1:] {
		if i == 0 && (b < lo || b > hi) || b < 0x80 || b > 0xBF {
			return false
		}
	}
	return true
}

// runeSpan is the range of code points whose encodings start with the
// valid, unfinished prefix p: p completed with the least and the greatest
// bytes that may follow it.
func runeSpan(p []byte) (lo, hi rune) {
	n, l2, h2 := utf8seq.Shape(p[0])
	least, most := append([]byte(nil), p...), append([]byte(nil), p...)
	for i := len(p); i < n; i++ {
		l, h := byte(0x80), byte(0xBF)
		if i == 1 {
			l, h = l2, h2
		}
		least, most = append(least, l), append(most, h)
	}
	lo, _ = utf8.DecodeRune(least)
	hi, _ = utf8.DecodeRune(most)
	return lo, hi
}

// Accept advances the text by b. It is an error, leaving the matcher as
// it was, if b cannot continue a sentence of the grammar.
func (m *Matcher) Accept(b []byte) error {
	s := m.cur
	for i, c := range b {
		if s = m.step(s, c); s == dead {
			return fmt.Errorf("grammar: byte %d (%q) of %q cannot continue the text", i, c, b)
		}
	}
	m.cur = s
	return nil
}

// Viable reports whether b can continue the text, without advancing it
// (Accept's test alone).
func (m *Matcher) Viable(b []byte) bool {
	s := m.cur
	for _, c := range b {
		if s = m.step(s, c); s == dead {
			return false
		}
	}
	return true
}

// Complete reports whether the text so far is a whole sentence.
func (m *Matcher) Complete() bool { return m.states[m.cur].accept }

// Matches reports whether text is a whole sentence of the grammar.
func (g *Grammar) Matches(text []byte) bool {
	m := g.NewMatcher()
	return m.Accept(text) == nil && m.Complete()
}
