package model

// NoLayer is the Layer of a captured tensor that does not belong to a block.
const NoLayer = -1

// Captured is one intermediate tensor seen by a Probe during a forward pass.
// Data aliases the model's scratch buffers: it is valid only during the
// Capture call, and a probe that keeps it must copy it.
type Captured struct {
	Checkpoint int    // the checkpoint number (docs/spec.md)
	Layer      int    // block index, or NoLayer
	Name       string // tensor name as in references/FORMAT.md
	Shape      []int
	Data       []float32 // row-major, len = product of Shape
	// Rows, when set, are the positions Data's rows are of: a tensor
	// computed at those positions only (ForwardOptions.LogitRows).
	Rows []int
	// Off is where Data starts in the row-major tensor of Shape. A tensor
	// a pass does not hold whole (attention scores and probabilities past
	// ForwardOptions.ProbeValues) comes in consecutive parts, Off 0 first,
	// the last ending at the product of Shape; any other comes whole.
	Off int
}

// Whole says c holds its whole tensor, not one of its parts.
func (c Captured) Whole() bool { return c.Off == 0 && len(c.Data) == elements(c.Shape) }

// Last says c holds its tensor's last values: a whole tensor, or its
// last part.
func (c Captured) Last() bool { return c.Off+len(c.Data) == elements(c.Shape) }

// elements is the number of values of a tensor of the shape.
func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Probe observes the tensors of checkpoints 1–9 as the forward pass
// computes them. A nil Probe costs one pointer comparison per tensor.
type Probe interface {
	Capture(t Captured)
}

// ProbeFunc adapts a function to the Probe interface.
type ProbeFunc func(t Captured)

// Capture calls f(t).
func (f ProbeFunc) Capture(t Captured) { f(t) }
