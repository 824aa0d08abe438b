package tokenizer

// Finding special and user-defined tokens in a text. Gemma 3 has 6415 added
// tokens ("<unused0>" ... "<unused6241>", HTML tags, runs of newlines and
// tabs), so trying each with strings.Index at every match costs thousands
// of scans of the rest of the text per newline; a byte trie finds the
// earliest, longest token in one pass.

// specialTrie holds the texts of t.special; node 0 is the root.
type specialTrie struct {
	root  [256]int32 // first byte -> node, 0 if no token starts with it
	nodes []trieNode
}

type trieNode struct {
	next map[byte]int32
	tok  int32 // index into t.special of the token ending here, or -1
}

func newSpecialTrie(special []specialToken) *specialTrie {
	tr := &specialTrie{nodes: []trieNode{{tok: -1}}}
	for i, sp := range special {
		if sp.text == "" {
			continue
		}
		n := tr.root[sp.text[0]]
		if n == 0 {
			n = tr.add()
			tr.root[sp.text[0]] = n
		}
		for k := 1; k < len(sp.text); k++ {
			c := sp.text[k]
			nx, ok := tr.nodes[n].next[c]
			if !ok {
				nx = tr.add()
				if tr.nodes[n].next == nil {
					tr.nodes[n].next = map[byte]int32{}
				}
				tr.nodes[n].next[c] = nx
			}
			n = nx
		}
		if tr.nodes[n].tok < 0 {
			tr.nodes[n].tok = int32(i)
		}
	}
	return tr
}

func (tr *specialTrie) add() int32 {
	tr.nodes = append(tr.nodes, trieNode{tok: -1})
	return int32(len(tr.nodes) - 1)
}

// find returns the byte offset of the earliest token of special in text
// (the longest of those starting there) and its index, or -1; userOnly
// skips all but user-defined tokens, as Encode matches only those.
func (tr *specialTrie) find(text string, special []specialToken, userOnly bool) (int, int) {
	for i := 0; i < len(text); i++ {
		n := tr.root[text[i]]
		if n == 0 {
			continue
		}
		best := -1
		for k := i + 1; ; k++ {
			if tok := tr.nodes[n].tok; tok >= 0 && (!userOnly || special[tok].user) {
				best = int(tok)
			}
			if k == len(text) {
				break
			}
			nx, ok := tr.nodes[n].next[text[k]]
			if !ok {
				break
			}
			n = nx
		}
		if best >= 0 {
			return i, best
		}
	}
	return -1, -1
}
