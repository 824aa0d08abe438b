package probe

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKLBound: the top-k bound is exact when nothing is left out, zero
// for an engine that is the truth, and never above the full divergence.
func TestKLBound(t *testing.T) {
	ln := math.Log
	s := scored{ids: []int32{1, 2}, lp64: []float64{ln(0.5), ln(0.3)}, target: 1, tlp64: ln(0.5)}
	for _, tc := range []struct {
		name string
		alts []alt
		lp   float64
		want float64
	}{
		{"the truth itself", []alt{{1, ln(0.5)}, {2, ln(0.3)}}, ln(0.5), 0},
		// 0.5 ln(0.5/0.4) + 0.3 ln(0.3/0.4) + 0.2 ln(0.2/0.2)
		{"two listed", []alt{{1, ln(0.4)}, {2, ln(0.4)}}, ln(0.4), 0.5*ln(1.25) + 0.3*ln(0.75)},
		// token 7 is unknown to the truth's top K: it joins the rest on both sides
		{"one unknown", []alt{{1, ln(0.4)}, {7, ln(0.4)}}, ln(0.4), 0.5*ln(0.5/0.4) + 0.5*ln(0.5/0.6)},
		// the next token's own log-probability counts when it is not listed
		{"target only", nil, ln(0.25), 0.5*ln(2) + 0.5*ln(0.5/0.75)},
		{"nothing known", nil, math.NaN(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, klBound(s, tc.alts, tc.lp), 1e-12)
		})
	}

	rng := rand.New(rand.NewPCG(1, 2))
	const V = 50
	for trial := range 20 {
		p, q := randomLogDist(rng, V), randomLogDist(rng, V)
		full := 0.0
		for i := range V {
			full += math.Exp(p[i]) * (p[i] - q[i])
		}
		order := make([]int, V)
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
		sv := scored{target: order[3], tlp64: p[order[3]]}
		for _, id := range order {
			sv.ids, sv.lp64 = append(sv.ids, int32(id)), append(sv.lp64, p[id])
		}
		var all []alt
		for id := range V {
			all = append(all, alt{ID: id, LogProb: q[id]})
		}
		require.InDelta(t, full, klBound(sv, all, q[order[3]]), 1e-9, "trial %d: every token listed", trial)
		for _, k := range []int{1, 5, 20} {
			require.LessOrEqual(t, klBound(sv, all[:k], q[order[3]]), full+1e-12, "trial %d: top %d", trial, k)
		}
	}
}

func randomLogDist(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	m := math.Inf(-1)
	for i := range v {
		v[i] = 3 * rng.NormFloat64()
		m = max(m, v[i])
	}
	sum := 0.0
	for _, x := range v {
		sum += math.Exp(x - m)
	}
	for i := range v {
		v[i] -= m + math.Log(sum)
	}
	return v
}

func TestStat(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(100 - i)
	}
	s := stat(v, v)
	require.Equal(t, 50.5, float64(s.Mean))
	require.InDelta(t, math.Sqrt(841.6666666666666)/10, float64(s.Sigma), 1e-12)
	require.Equal(t, []float64{50, 90, 99, 100}, []float64{float64(s.P50), float64(s.P90), float64(s.P99), float64(s.Max)})

	sh := shareOf(90, 100)
	require.InDelta(t, 0.9, float64(sh.Value), 1e-15)
	require.InDelta(t, 0.03, float64(sh.Sigma), 1e-15)
}
