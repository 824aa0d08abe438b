package checkpoints

import (
	"fmt"
	"strings"
)

// StatusCost marks a result of a cost report outside the default
// tolerances: what rounding the model's weights costs against references
// of finer weights. It informs; it neither passes nor fails.
const StatusCost = "cost"

// Cost says a run is a quantisation-cost report, not a validation: the
// model's weights are stored (or held) at a lower precision than those the
// reference set was made from, so the default tolerances, made for float32
// arithmetic on identical weights, would measure the rounding rather than
// the implementation, and no tolerance fitted to that rounding can tell a
// bug from it. The implementation is proven against a reference set of its
// own exact weights (dump_references.py --model FILE.gguf, or
// --weight-dtype f16), at the defaults; this report says what the format
// costs.
type Cost struct {
	Reason string `json:"reason"`
}

// represents reports whether every value of dtype ref is exactly a value of
// dtype stored: F32 holds every F16 and BF16 value; otherwise only a type
// holds itself.
func represents(stored, ref string) bool {
	return stored == ref || stored == "F32"
}

// CostFor returns the cost report's reason for a model stored as modelDType
// against a reference set made from refDType weights (both as
// model.WeightsDType spells them: "F16", "F16+F32", ...), or nil when the
// model holds every reference weight exactly. Mixed types are judged
// conservatively: a stored type must represent every reference type.
func CostFor(modelDType, refDType string) *Cost {
	for _, s := range strings.Split(modelDType, "+") {
		for _, r := range strings.Split(refDType, "+") {
			if !represents(s, r) {
				return &Cost{Reason: fmt.Sprintf("model weights stored as %s, the reference set's as %s", modelDType, refDType)}
			}
		}
	}
	return nil
}

// tolerance is the tolerance of checkpoint cp for this run: an explicit
// override, else the default.
func (o Options) tolerance(cp Checkpoint) Tolerance {
	if t, ok := o.Overrides[cp.Number]; ok {
		return t
	}
	return cp.Tolerance
}

// informational turns a failed result into StatusCost in a cost report.
func (o Options) informational(res Result) Result {
	if o.Cost == nil || res.Status != StatusFailed {
		return res
	}
	res.Status = StatusCost
	res.Message = "cost of the weights' rounding: " + res.Message
	return res
}
