package checkpoints

import (
	"encoding/json"
	"math"
	"strconv"
)

// Status of one compared tensor.
const (
	StatusPassed         = "passed"
	StatusFailed         = "failed"
	StatusNotImplemented = "not_implemented"
)

// Result is the outcome for one (case, checkpoint, layer, tensor).
type Result struct {
	Checkpoint     int      `json:"checkpoint"`
	CheckpointName string   `json:"checkpoint_name"`
	Name           string   `json:"name"`
	Layer          *int     `json:"layer"`
	Case           string   `json:"case"`
	Shape          []int    `json:"shape"`
	Status         string   `json:"status"`
	Passed         bool     `json:"passed"`
	Atol           float64  `json:"atol"`
	Rtol           float64  `json:"rtol"`
	Compared       int      `json:"compared"`
	Mismatches     int      `json:"mismatches"`
	Flips          int      `json:"rounding_flips,omitempty"` // a float16 cache's elements one step away at a rounding midpoint (compareCacheF16)
	MaxAbsErr      Float    `json:"max_abs_err"`
	MaxRelErr      Float    `json:"max_rel_err"`
	TolRatio       Float    `json:"tolerance_ratio"`
	Cosine         Float    `json:"cosine"`
	BudgetRatio    *Float   `json:"budget_ratio"`
	GoErrF64       *Float   `json:"go_err_f64"`
	RefErrF64      *Float   `json:"torch_err_f64"`
	Worst          *Element `json:"worst"`
	Message        string   `json:"message,omitempty"`
	// ServerMargin is, for a greedy check of an engine that parted from
	// the reference, the engine's top-1 − top-2 log-probability at that
	// step, where its API shows it: how near a tie the flip was.
	ServerMargin *Float `json:"server_margin,omitempty"`
	// RoutingFlip names a mixture of experts' routing that parted from the
	// reference's (the experts tensor; routing.go).
	RoutingFlip *RoutingFlip `json:"routing_flip,omitempty"`
	rank        int          // forward order, for bisect
	caseIndex   int          // order of the case in the manifest
	stats       *Stats       // nil when not compared
}

// Element locates one tensor element for a person: Axes names each index.
type Element struct {
	Index []int    `json:"index"`
	Axes  []string `json:"axes"`
	Got   Float    `json:"got"`
	Want  Float    `json:"want"`
}

// LayerIndex is the result's layer, or -1 when it is not per layer.
func (r Result) LayerIndex() int {
	if r.Layer == nil {
		return -1
	}
	return *r.Layer
}

// Float marshals NaN and ±Inf as the strings "NaN", "Infinity" and
// "-Infinity", which encoding/json refuses to write as numbers.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler, accepting MarshalJSON's output.
func (f *Float) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := strconv.ParseFloat(s, 64)
		*f = Float(v)
		return err
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*f = Float(v)
	return err
}

func floatPtr(v float64) *Float {
	f := Float(v)
	return &f
}
