package grammar

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIntegerRanges: for ranges of every shape (one side, both, across
// zero, digit-count boundaries, exclusive, fractional, beyond 16 digits)
// the grammar takes exactly the integers a direct comparison keeps, on a
// window around each bound and on random draws.
func TestIntegerRanges(t *testing.T) {
	type bounds map[string]string
	cases := []bounds{
		{"minimum": "1"}, {"minimum": "0"}, {"exclusiveMinimum": "0"}, {"maximum": "-1"}, {"maximum": "0"},
		{"minimum": "-5", "maximum": "5"}, {"minimum": "7", "maximum": "1234"}, {"minimum": "99", "maximum": "100"},
		{"minimum": "-1000", "maximum": "-999"}, {"exclusiveMinimum": "-10", "exclusiveMaximum": "10"},
		{"minimum": "1.5", "maximum": "9.5"}, {"exclusiveMinimum": "-2.5", "exclusiveMaximum": "2.5"},
		{"minimum": "10", "exclusiveMinimum": "10"}, {"minimum": "3", "maximum": "3"},
		{"minimum": "123456", "maximum": "9876543"}, {"minimum": "-9007199254740991", "maximum": "9007199254740991"},
		{"minimum": "1e2", "maximum": "1e30"}, {"minimum": "-1e999", "maximum": "0e999999"}, {"minimum": "-0.0"},
		{"exclusiveMinimum": "1e-999999"}, {"exclusiveMinimum": "-1e-999999", "maximum": "1e-999"}, {"maximum": "-20.5"}, {"minimum": "0", "exclusiveMaximum": "1"},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, bs := range cases {
		schema, g := boundedGrammar(t, "integer", bs)
		exact := exactBounds(bs)
		in := func(x *big.Rat) bool { return within(x, exact) }
		var probes []int64
		for _, b := range exact {
			f, _ := b.Float64()
			for d := int64(-30); d <= 30; d++ {
				probes = append(probes, int64(f)+d)
			}
		}
		for range 300 {
			probes = append(probes, r.Int64N(2e6)-1e6, r.Int64N(2e16)-1e16)
		}
		for _, p := range probes {
			text := strconv.FormatInt(p, 10)
			require.Equal(t, in(new(big.Rat).SetInt64(p)) && len(text) <= 17, g.Matches([]byte(text)), "%s: %s", schema, text)
		}
		require.False(t, g.Matches([]byte("-0")), schema)
		require.False(t, g.Matches([]byte("1.0")), schema)
	}
}

// boundedGrammar compiles a schema of type typ with the bounds bs.
func boundedGrammar(t *testing.T, typ string, bs map[string]string) (string, *Grammar) {
	t.Helper()
	schema := fmt.Sprintf(`{"type":%q`, typ)
	for k, v := range bs {
		schema += fmt.Sprintf(`,%q:%s`, k, v)
	}
	schema += "}"
	g, err := FromJSONSchema([]byte(schema))
	require.NoError(t, err, schema)
	return schema, g
}

// exactBounds reads the bounds' values exactly.
func exactBounds(bs map[string]string) map[string]*big.Rat {
	out := map[string]*big.Rat{}
	for k, v := range bs {
		out[k], _ = new(big.Rat).SetString(v)
	}
	return out
}

// within compares x with the bounds exactly.
func within(x *big.Rat, bs map[string]*big.Rat) bool {
	for k, b := range bs {
		c := x.Cmp(b)
		if k == "minimum" && c < 0 || k == "exclusiveMinimum" && c <= 0 || k == "maximum" && c > 0 || k == "exclusiveMaximum" && c >= 0 {
			return false
		}
	}
	return true
}

// TestNumberRanges: whole-number bounds on a number take exactly the
// decimals within them, and no decimal the grammar takes parses (as
// float64, as clients do) to a value outside them.
func TestNumberRanges(t *testing.T) {
	cases := []map[string]string{
		{"minimum": "0"}, {"exclusiveMinimum": "0"}, {"exclusiveMaximum": "0"}, {"minimum": "1", "maximum": "5"},
		{"exclusiveMinimum": "-3", "exclusiveMaximum": "12"}, {"minimum": "-1", "exclusiveMaximum": "1"},
		{"exclusiveMinimum": "99"}, {"maximum": "-7"},
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, bs := range cases {
		schema, g := boundedGrammar(t, "number", bs)
		exact := exactBounds(bs)
		var probes []string
		for _, v := range bs {
			n, _ := strconv.Atoi(v)
			for d := -3; d <= 3; d++ {
				for _, frac := range []string{"", ".0", ".5", ".0001", ".99999999999999", ".9999999999999999", ".0000000000000001"} {
					i := n + d
					probes = append(probes, strconv.Itoa(i)+frac)
					if i == 0 {
						probes = append(probes, "-0"+frac)
					}
				}
			}
		}
		for range 300 {
			probes = append(probes, strconv.FormatFloat(r.Float64()*200-100, 'f', r.IntN(6), 64))
		}
		for _, p := range probes {
			x, _ := new(big.Rat).SetString(p)
			f, _ := strconv.ParseFloat(p, 64)
			got := g.Matches([]byte(p))
			if got {
				require.True(t, within(x, exact), "%s: %s taken, outside", schema, p)
				require.True(t, within(new(big.Rat).SetFloat64(f), exact), "%s: %s taken, parses outside", schema, p)
			} else if len(p) < 8 && p[0] != '-' || len(p) < 8 && x.Sign() != 0 {
				// Short decimals inside the bounds are all taken (long ones
				// near an exclusive bound may be refused: see fraction).
				require.False(t, within(x, exact), "%s: %s refused, inside", schema, p)
			}
		}
	}
}

func TestNumberBoundErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"number","maximum":0.5}`, `#/maximum: 0.5 is not supported: a number's bounds must be whole numbers`},
		{`{"type":"integer","minimum":5,"maximum":4}`, `no integer lies within the bounds (minimum 5, maximum 4)`},
		{`{"type":"integer","exclusiveMinimum":0.2,"exclusiveMaximum":0.8}`, `no integer lies within`},
		{`{"type":"number","exclusiveMinimum":3,"exclusiveMaximum":3}`, `no number lies within`},
		{`{"type":"integer","minimum":1e17}`, `no integer lies within`},
		{`{"type":"integer","minimum":1e999999}`, `no integer lies within`},
		{`{"type":"integer","maximum":-1e999999}`, `no integer lies within`},
		{`{"type":"number","exclusiveMinimum":-1e-999999}`, `#/exclusiveMinimum: -1e-999999 is not supported: a number's bounds must be whole`},
	} {
		_, err := FromJSONSchema([]byte(tc.schema))
		require.ErrorContains(t, err, tc.want, tc.schema)
	}
}
