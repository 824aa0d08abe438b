package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// maxIntegral is the largest integral part a schema's number is written
// with (16 digits, as the integer rule): bounds beyond it are clamped.
const maxIntegral = 9999999999999999

// fraction says which fractional parts ("." digits) a stretch of numbers
// may have: at most max digits (0: none); if zeros, only zeros; if
// nonzero, a digit other than 0 among the first within (the value is
// above its integral part by at least 10^-within, which a float64 keeps
// apart from the integer).
type fraction struct {
	max, within    int
	nonzero, zeros bool
}

var anyFraction = fraction{max: 16}

func (f fraction) and(g fraction) (fraction, bool) {
	h := fraction{max: min(f.max, g.max), nonzero: f.nonzero || g.nonzero, zeros: f.zeros || g.zeros}
	if h.nonzero && h.zeros {
		return h, false
	}
	switch {
	case f.nonzero && g.nonzero:
		h.within = min(f.within, g.within)
	case f.nonzero:
		h.within = f.within
	case g.nonzero:
		h.within = g.within
	}
	if h.nonzero {
		h.within = min(h.within, h.max)
		if h.within == 0 {
			return h, false
		}
	}
	return h, true
}

func (f fraction) gbnf() string {
	switch {
	case f.nonzero:
		return fmt.Sprintf(` "." "0"{0,%d} [1-9] [0-9]{0,%d}`, f.within-1, f.max-f.within)
	case f.max > 0 && f.zeros:
		return fmt.Sprintf(` ("." "0"{1,%d})?`, f.max)
	case f.max > 0:
		return fmt.Sprintf(` ("." [0-9]{1,%d})?`, f.max)
	}
	return ""
}

// stretch is the numbers with integral part lo..hi and a fraction f.
type stretch struct {
	lo, hi int64
	f      fraction
}

// bound is one side of a range: a whole number, exclusive or not; nil
// pointers mean no bound.
type bound struct {
	v         int64
	exclusive bool
}

// magnitudes are the stretches of numbers I.F ≥ 0 (I the integral part)
// with least < I.F (≤ if not exclusive) and I.F < most (≤): the integral
// part's range and, at each end, the fraction the bound leaves.
func magnitudes(least, most *bound) []stretch {
	// Significant digits a float64 keeps apart: 15, less the integral's.
	within := func(i int64) int { return max(15-len(strconv.FormatInt(i, 10)), 0) }
	low := []stretch{{0, maxIntegral, anyFraction}}
	if least != nil {
		l := least.v
		switch {
		case l < 0 || l == 0 && !least.exclusive:
		case least.exclusive:
			low = []stretch{{l, l, fraction{max: 16, nonzero: true, within: within(l)}}, {l + 1, maxIntegral, anyFraction}}
		default:
			low = []stretch{{l, maxIntegral, anyFraction}}
		}
	}
	high := []stretch{{0, maxIntegral, anyFraction}}
	if most != nil {
		h := most.v
		switch {
		case h < 0 || h == 0 && most.exclusive:
			return nil
		case most.exclusive:
			high = []stretch{{0, h - 2, anyFraction}, {h - 1, h - 1, fraction{max: within(h - 1)}}}
		default:
			high = []stretch{{0, h - 1, anyFraction}, {h, h, fraction{max: 16, zeros: true}}}
		}
	}
	var out []stretch
	for _, a := range low {
		for _, b := range high {
			s := stretch{max(a.lo, b.lo), min(a.hi, b.hi), fraction{}}
			var ok bool
			if s.f, ok = a.f.and(b.f); ok && s.lo <= s.hi {
				out = append(out, s)
			}
		}
	}
	return out
}

// rangeRule is GBNF for the integers (integer) or numbers without an
// exponent (number) between the bounds: the non-negative ones unsigned,
// the negative ones as "-" and their magnitude, so that -0 is never
// written, each stretch of integral parts through intRange.
func rangeRule(lo, hi *bound, integer bool) (string, error) {
	neg := func(b *bound) *bound {
		if b == nil {
			return nil
		}
		return &bound{-b.v, b.exclusive}
	}
	var alts []string
	add := func(sign string, ss []stretch) {
		for _, s := range ss {
			f := s.f
			if integer {
				var ok bool
				if f, ok = f.and(fraction{}); !ok {
					continue
				}
			}
			alts = append(alts, sign+intRange(s.lo, s.hi)+f.gbnf())
		}
	}
	add(`"-" `, magnitudes(maxBound(neg(hi), &bound{0, true}), neg(lo)))
	add("", magnitudes(lo, hi))
	if len(alts) == 0 {
		return "", fmt.Errorf("no %s lies within the bounds", map[bool]string{true: "integer", false: "number"}[integer])
	}
	return "(" + strings.Join(alts, " | ") + ")", nil
}

// maxBound is the tighter of two lower bounds (nil: none).
func maxBound(a, b *bound) *bound {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.v > b.v || a.v == b.v && a.exclusive:
		return a
	}
	return b
}

// minBound is the tighter of two upper bounds (nil: none).
func minBound(a, b *bound) *bound {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.v < b.v || a.v == b.v && a.exclusive:
		return a
	}
	return b
}

// intRange is GBNF for the decimal integers lo..hi (0 ≤ lo ≤ hi),
// without leading zeros: one alternative per count of digits, each a
// range of equal-length digit strings.
func intRange(lo, hi int64) string {
	var alts []string
	for n := len(strconv.FormatInt(lo, 10)); n <= len(strconv.FormatInt(hi, 10)); n++ {
		least, most := pow10(n-1), pow10(n)-1
		if n == 1 {
			least = 0
		}
		a, b := max(lo, least), min(hi, most)
		alts = append(alts, sameLength(strconv.FormatInt(a, 10), strconv.FormatInt(b, 10)))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// sameLength is GBNF for the digit strings from x to y, of one length:
// a shared leading digit, then the three stretches x[0] and more, the
// digits between with anything after, y[0] and less.
func sameLength(x, y string) string {
	if x == "" {
		return `""`
	}
	if x[0] == y[0] {
		rest := ""
		if len(x) > 1 {
			rest = " " + sameLength(x[1:], y[1:])
		}
		return fmt.Sprintf(`[%c]%s`, x[0], rest)
	}
	n := len(x) - 1
	zeros, nines := strings.Repeat("0", n), strings.Repeat("9", n)
	any := ""
	if n > 0 {
		any = fmt.Sprintf(" [0-9]{%d}", n)
	}
	from, to := x[0], y[0]
	var alts []string
	if x[1:] != zeros {
		alts = append(alts, fmt.Sprintf(`[%c] %s`, x[0], sameLength(x[1:], nines)))
		from++
	}
	last := ""
	if y[1:] != nines {
		last = fmt.Sprintf(`[%c] %s`, y[0], sameLength(zeros, y[1:]))
		to--
	}
	if from <= to {
		alts = append(alts, fmt.Sprintf(`[%c-%c]%s`, from, to, any))
	}
	if last != "" {
		alts = append(alts, last)
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

// numberFormats are OpenAPI's formats of a number that every number
// written here has (16 digits a part, an exponent of 2): the others, such
// as int32, would bound it, and are refused rather than ignored.
var numberFormats = []string{"int64", "float", "double"}

// readBound reads bound keyword k's value: a whole number, clamped to
// one past the 16 digits numbers are written with (a bound further out
// leaves the same numbers). An integer's fractional bound is rounded
// inwards and made inclusive (exclusiveMinimum 1.5 is minimum 2); a
// number's must be whole.
func readBound(v any, k string, integer bool) (*bound, error) {
	n, _ := v.(json.Number)
	lower := k == "minimum" || k == "exclusiveMinimum"
	b := &bound{exclusive: strings.HasPrefix(k, "exclusive")}
	// A float64 first: an exact reading of 1e999999 takes a tenth of a
	// second, and a bound that far out leaves what one past 16 digits does.
	f, err := strconv.ParseFloat(string(n), 64)
	if n == "" || err != nil && !math.IsInf(f, 0) {
		return nil, fmt.Errorf("must be a number")
	}
	if math.Abs(f) > 2*maxIntegral {
		b.v = int64(math.Copysign(maxIntegral+1, f))
		return b, nil
	}
	r, ok := new(big.Rat), true
	mantissa, _, _ := strings.Cut(strings.ToLower(string(n)), "e")
	switch {
	case f == 0 && strings.Trim(mantissa, "-0.") != "":
		// Below float64's least but not 0: it rounds as ±0.5 does.
		r.SetFrac64(1, 2)
		if strings.HasPrefix(mantissa, "-") {
			r.Neg(r)
		}
	default:
		_, ok = r.SetString(string(n))
	}
	if !ok {
		return nil, fmt.Errorf("must be a number")
	}
	q := new(big.Int).Quo(r.Num(), r.Denom()) // towards zero
	if !r.IsInt() {
		if !integer {
			return nil, fmt.Errorf("%s is not supported: a number's bounds must be whole numbers here (an integer's may be any)", n)
		}
		if lower == (r.Sign() > 0) { // round away from zero
			q.Add(q, big.NewInt(int64(r.Sign())))
		}
		b.exclusive = false
	}
	limit := big.NewInt(maxIntegral + 1)
	switch {
	case q.Cmp(limit) > 0:
		b.v = maxIntegral + 1
	case q.Cmp(new(big.Int).Neg(limit)) < 0:
		b.v = -maxIntegral - 1
	default:
		b.v = q.Int64()
	}
	return b, nil
}
