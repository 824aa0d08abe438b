package checkpoints

import (
	"fmt"
	"math"

	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
)

// RoutingFlip is the first token of a mixture of experts whose chosen
// experts differ from the reference's: at top-k slot Slot the reference
// chose expert Want and Go expert Got. The margins are router logits:
// the reference's of Want over Got, and Go's of Got over Want. When both
// are within checkpoint 6's tolerance of the logits (NearTie), float32
// rounding alone can break the tie either way: a routing flip, which the
// tensors after it inherit, not a numeric failure of the FFN.
type RoutingFlip struct {
	Token     int      `json:"token"`
	Slot      int      `json:"slot"`
	Want      int      `json:"want_expert"`
	Got       int      `json:"got_expert"`
	RefMargin float64  `json:"reference_margin"`
	GoMargin  *float64 `json:"go_margin"` // nil when Go's router logits were not kept
	NearTie   bool     `json:"near_tie"`
}

// explainRouting names a failed experts comparison a routing flip: which
// token, which slot, the two experts and their margins in the
// reference's router logits and in Go's (goLogits [T,E]; nil when Go's
// were not kept, then only the reference's margin is known).
func explainRouting(set *references.Set, ti references.TensorInfo, res *Result, gotIDs, goLogits []float32) error {
	if ti.Name != tensors.Experts || res.Passed || len(ti.Shape) != 2 || len(gotIDs) != ti.Shape[0]*ti.Shape[1] {
		return nil
	}
	wantIDs, err := set.Tensor(ti)
	if err != nil {
		return err
	}
	lt, ok := set.Find(ti.Case, tensors.RouterLogits, ti.LayerIndex())
	if !ok {
		return nil // a set without router logits: the mismatch stands as it is
	}
	refLogits, err := set.Tensor(lt)
	if err != nil {
		return err
	}
	K, E := ti.Shape[1], lt.Shape[1]
	for i := range wantIDs {
		if wantIDs[i] == gotIDs[i] {
			continue
		}
		t, a, b := i/K, int(wantIDs[i]), int(gotIDs[i])
		if a < 0 || a >= E || b < 0 || b >= E {
			return nil // not expert ids: the plain mismatch says enough
		}
		ref := refLogits[t*E : (t+1)*E]
		f := RoutingFlip{Token: t, Slot: i % K, Want: a, Got: b, RefMargin: float64(ref[a]) - float64(ref[b])}
		// Each logit may be off by its tolerance: a margin under the two
		// allowances together is a tie float32 decides.
		allowed := 2*res6Tolerance.Atol + res6Tolerance.Rtol*(math.Abs(float64(ref[a]))+math.Abs(float64(ref[b])))
		f.NearTie = math.Abs(f.RefMargin) <= allowed
		if goLogits != nil && len(goLogits) >= (t+1)*E {
			g := goLogits[t*E : (t+1)*E]
			m := float64(g[b]) - float64(g[a])
			f.GoMargin = &m
			f.NearTie = f.NearTie && math.Abs(m) <= allowed
		}
		res.RoutingFlip = &f
		res.Message = f.String()
		return nil
	}
	return nil
}

// res6Tolerance is checkpoint 6's default tolerance, the router logits'.
var res6Tolerance = func() Tolerance { cp, _ := ByNumber(6); return cp.Tolerance }()

func (f RoutingFlip) String() string {
	kind := "routing flip"
	why := "a near-tie float32 rounding breaks either way, not a numeric failure of the FFN"
	if !f.NearTie {
		kind = "routing differs"
		why = "the margins exceed the router logits' tolerance: the routing itself is wrong"
	}
	goMargin := "Go's router logits not kept"
	if f.GoMargin != nil {
		goMargin = fmt.Sprintf("Go's margin of %d over %d %.3g", f.Got, f.Want, *f.GoMargin)
	}
	return fmt.Sprintf("%s at token %d, slot %d: the reference chose expert %d, Go expert %d; reference's router-logit margin of %d over %d %.3g, %s: %s",
		kind, f.Token, f.Slot, f.Want, f.Got, f.Want, f.Got, f.RefMargin, goMargin, why)
}
