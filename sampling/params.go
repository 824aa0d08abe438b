package sampling

import (
	"fmt"
	"math"
)

// GreedyBelow is the temperature under which decoding is greedy (argmax),
// as docs/spec.md's checkpoint 10 defines it. Dividing by a smaller temperature
// would only overflow on the way to the same argmax.
const GreedyBelow = 1e-6

// Params are the logit-processor settings of one request. The neutral value
// of each processor turns it off: TopK 0, TopP 1, MinP 0, RepetitionPenalty 1
// (see DefaultParams).
//
// Greedy decoding (Temperature < GreedyBelow) uses only the repetition
// penalty, like Hugging Face's greedy search, which drops the warpers
// (temperature, top-k, top-p, min-p). So that Params{Temperature: 0} — the
// zero value with nothing else set — means plain greedy, a zero
// RepetitionPenalty counts as "no penalty" in greedy mode; when sampling it
// is invalid.
//
// LogitBias, PresencePenalty and FrequencyPenalty are OpenAI's: a bias
// added to a token's logit, and penalties subtracted once for a token
// that occurs in the history and once per occurrence. Zero (nil) is off.
type Params struct {
	Temperature       float64
	TopK              int
	TopP              float64
	MinP              float64
	RepetitionPenalty float64
	PresencePenalty   float64
	FrequencyPenalty  float64
	LogitBias         map[int]float64
}

// Limits of OpenAI's API on the bias and the penalties.
const (
	MaxLogitBias = 100
	MaxPenalty   = 2
)

// DefaultParams are plain sampling from the model's distribution:
// temperature 1 and every other processor off.
func DefaultParams() Params {
	return Params{Temperature: 1, TopK: 0, TopP: 1, MinP: 0, RepetitionPenalty: 1}
}

// Greedy reports whether these settings mean argmax decoding.
func (p Params) Greedy() bool { return p.Temperature < GreedyBelow }

// penalty is the repetition penalty to apply, 1 meaning none.
func (p Params) penalty() float64 {
	if p.Greedy() && p.RepetitionPenalty == 0 {
		return 1
	}
	return p.RepetitionPenalty
}

// ParamError is a setting Validate refuses. Param is its API name
// (temperature, top_p, logit_bias); Value the offending value, if any.
type ParamError struct {
	Param   string
	Value   any
	Message string
}

func (e *ParamError) Error() string {
	if e.Value != nil {
		return fmt.Sprintf("%s %v: %s", e.Param, e.Value, e.Message)
	}
	return e.Param + ": " + e.Message
}

func invalid(param string, value any, format string, args ...any) error {
	return &ParamError{Param: param, Value: value, Message: fmt.Sprintf(format, args...)}
}

// Validate rejects settings that are mathematically meaningless for a
// vocabulary of vocabSize tokens; the error is a *ParamError naming the
// setting and its value.
// Product limits (docs/api.md's temperature ≤ 2, say) are the caller's to add.
// In greedy mode top_k, top_p and min_p are not used and not checked.
func (p Params) Validate(vocabSize int) error {
	switch {
	case math.IsNaN(p.Temperature) || math.IsInf(p.Temperature, 0):
		return invalid("temperature", p.Temperature, "must be a finite number")
	case p.Temperature < 0:
		return invalid("temperature", p.Temperature, "must be ≥ 0 (0 is greedy)")
	}
	rp := p.penalty()
	if math.IsNaN(rp) || math.IsInf(rp, 0) || rp <= 0 {
		return invalid("repetition_penalty", p.RepetitionPenalty, "must be a finite number > 0 (1 is off)")
	}
	for _, pen := range []struct {
		name string
		v    float64
	}{{"presence_penalty", p.PresencePenalty}, {"frequency_penalty", p.FrequencyPenalty}} {
		if !(math.Abs(pen.v) <= MaxPenalty) {
			return invalid(pen.name, pen.v, "must be in [-%d, %d] (0 is off)", MaxPenalty, MaxPenalty)
		}
	}
	for id, b := range p.LogitBias {
		if err := CheckLogitBias(id, b, vocabSize); err != nil {
			return &ParamError{Param: "logit_bias", Message: err.Error()}
		}
	}
	if p.Greedy() {
		return nil
	}
	switch {
	case p.TopK < 0:
		return invalid("top_k", p.TopK, "must be ≥ 0 (0 is off)")
	case p.TopK > vocabSize:
		return invalid("top_k", p.TopK, "exceeds the vocabulary size %d", vocabSize)
	case !(p.TopP > 0 && p.TopP <= 1): // also rejects NaN
		return invalid("top_p", p.TopP, "must be in (0, 1] (1 is off)")
	case !(p.MinP >= 0 && p.MinP <= 1):
		return invalid("min_p", p.MinP, "must be in [0, 1] (0 is off)")
	}
	return nil
}

// CheckLogitBias is the rule for one logit_bias entry: a token of the
// vocabulary and a bias within ±MaxLogitBias.
func CheckLogitBias(id int, bias float64, vocabSize int) error {
	switch {
	case id < 0 || id >= vocabSize:
		return fmt.Errorf("token %d is outside the vocabulary [0,%d)", id, vocabSize)
	case !(math.Abs(bias) <= MaxLogitBias):
		return fmt.Errorf("token %d: bias %v must be in [-%d, %d]", id, bias, MaxLogitBias, MaxLogitBias)
	}
	return nil
}
