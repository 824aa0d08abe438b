package references

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseHeaderDict parses the Python dict literal numpy writes, e.g.
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 64), }   \n",
// accepting only the three keys and literal forms numpy uses.
func parseHeaderDict(b []byte) (npyHeader, error) {
	var h npyHeader
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return h, errors.New("does not end with a newline")
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\t' && c != '\r' || c > 0x7e {
			return h, fmt.Errorf("non-ASCII byte %#x", c)
		}
	}
	p := dictParser{s: string(b)}
	if err := p.expect('{'); err != nil {
		return h, err
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.peek('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, err
		}
		if seen[key] {
			return h, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if err := p.expect(':'); err != nil {
			return h, err
		}
		switch key {
		case "descr":
			h.descr, err = p.str()
		case "fortran_order":
			h.fortran, err = p.boolean()
		case "shape":
			h.shape, err = p.tuple()
		default:
			err = fmt.Errorf("unexpected key %q", key)
		}
		if err != nil {
			return h, err
		}
		p.space()
		if !p.peek(',') {
			break
		}
		p.i++
	}
	if err := p.expect('}'); err != nil {
		return h, err
	}
	if p.space(); p.i != len(p.s) {
		return h, fmt.Errorf("unexpected %q after the dictionary", p.s[p.i:])
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("missing key %q", k)
		}
	}
	return h, nil
}

type dictParser struct {
	s string
	i int
}

func (p *dictParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *dictParser) peek(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

func (p *dictParser) expect(c byte) error {
	p.space()
	if !p.peek(c) {
		return fmt.Errorf("want %q at offset %d", c, p.i)
	}
	p.i++
	return nil
}

// str reads a quoted string without escapes, which numpy never writes here.
func (p *dictParser) str() (string, error) {
	p.space()
	if !p.peek('\'') && !p.peek('"') {
		return "", fmt.Errorf("want a quoted string at offset %d", p.i)
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at offset %d", p.i)
	}
	s := p.s[p.i+1 : p.i+1+end]
	if strings.ContainsRune(s, '\\') {
		return "", fmt.Errorf("escape in string at offset %d", p.i)
	}
	p.i += end + 2
	return s, nil
}

func (p *dictParser) boolean() (bool, error) {
	p.space()
	for _, lit := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.i:], lit) {
			p.i += len(lit)
			return lit == "True", nil
		}
	}
	return false, fmt.Errorf("want True or False at offset %d", p.i)
}

// tuple reads "(a, b, )" style tuples of non-negative integers.
func (p *dictParser) tuple() ([]int, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	shape := []int{}
	for {
		p.space()
		if p.peek(')') {
			p.i++
			return shape, nil
		}
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		d, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
		if err != nil || d > math.MaxInt32 {
			return nil, fmt.Errorf("bad dimension %q at offset %d", p.s[start:p.i], start)
		}
		if len(shape) == maxDims {
			return nil, fmt.Errorf("more than %d dimensions", maxDims)
		}
		shape = append(shape, int(d))
		p.space()
		switch {
		case p.peek(','):
			p.i++
		case p.peek(')'):
		default:
			return nil, fmt.Errorf("want ',' or ')' at offset %d", p.i)
		}
	}
}
