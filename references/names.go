package references

import "github.com/llorch/llorch-check/tensors"

// SamplingPrefix starts the name of a checkpoint 11 tensor; the rest is the
// name of a configuration in Manifest.Sampling.
const SamplingPrefix = tensors.SamplingPrefix

// TensorDims are the dimensions the tensor table's shapes depend on.
func (d ModelDims) TensorDims() tensors.Dims {
	return tensors.Dims{NEmbd: d.NEmbd, NHead: d.NHead, VocabSize: d.VocabSize,
		NKVHead: d.NKVHead, HeadDim: d.HeadDim, NInner: d.NInner,
		NExperts: d.NExperts, TopK: d.TopK, MoEInner: d.MoEInner}
}
