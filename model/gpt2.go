package model

import (
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/tensors"
)

// GPT-2's block, as HF's GPT2Block computes it (docs/spec.md), and its
// family's registration.

// gpt2Family is GPT-2 (gpt2): LayerNorm, learned positions, GELU, Conv1D
// matrices.
type gpt2Family struct{}

func init() { register(ArchGPT2, "GPT2LMHeadModel", gpt2Family{}) }

func (gpt2Family) tensorFamily() string { return tensors.GPT2 }

func (gpt2Family) jsonConfig(r rawConfig, _ string) (Config, error) { return r.gpt2Config() }

func (gpt2Family) ggufConfig(md Metadata, _ string) (Config, error) { return gpt2GGUFConfig(md) }

func (gpt2Family) params(m *Model) []Param { return m.gpt2Params() }

func (gpt2Family) matrixShapes(c Config) [4][2]int {
	C, I := c.NEmbd, c.NInner
	return [4][2]int{{C, 3 * C}, {C, C}, {C, I}, {I, C}}
}

func (gpt2Family) positionRows(c Config) int { return c.NPositions }

func (gpt2Family) passWidths(c Config) (ff, act, rot int) { return c.NInner, 0, 0 }

func (gpt2Family) block(ps *pass, l int) { ps.block(l) }

func (gpt2Family) finalNorm(m *Model) (func(dst, x []float32), string) {
	c := m.Config
	return func(dst, x []float32) { layerNorm(dst, x, m.lnfW, m.lnfB, c.NEmbd, c.LayerNormEpsilon) }, tensors.LNF
}

func (gpt2Family) appliesTo(f Fault, _ Config) bool {
	switch f {
	case FaultRopeLayout, FaultRMSNormF16, FaultSwiGLUSwap, FaultGQARepeat, FaultWindowOffByOne, FaultWindowIgnored, FaultLongRopeWrongFactor,
		FaultGemmaNormDouble, FaultNoSoftcap, FaultMoENoRenorm, FaultMoESoftmaxAfterTopK:
		return false
	}
	return true
}

// block is transformer layer l: x += attn(ln_1(x)); x += mlp(ln_2(x)).
func (ps *pass) block(l int) {
	b, f := &ps.m.h[l], ps.m.faultsAt(l)
	ps.attention(l, b, f)
	ps.mlp(l, b, f)
	ps.p.emit(tensors.BlockOut, l, ps.x, ps.R, ps.m.Config.NEmbd)
}

// attention is x += c_proj(attn(c_attn(ln_1(x)))), writing each span's
// keys and values to its cache (past its length, so invisible until the
// pass commits).
func (ps *pass) attention(l int, b *block, f blockFaults) {
	c, R := ps.m.Config, ps.R
	C, H, D := c.NEmbd, c.NHead, c.HeadDim()
	layerNorm(ps.h, ps.x, b.ln1W, b.ln1B, C, f.eps)
	ps.p.emit(tensors.LN1, l, ps.h, R, C)
	conv1D(ps.qkv, ps.h, b.attnW, b.attnB, R, C, 3*C, false)
	if ps.p.on() {
		for i, name := range []string{tensors.Q, tensors.K, tensors.V} {
			splitHeads(ps.headBuf, ps.qkv, 3*C, i*C, R, H, D)
			ps.p.emit(name, l, ps.headBuf, H, R, D)
		}
	}
	ps.attend(l, f, attnJob{scale: f.attnScale(D)})
	conv1D(ps.proj, ps.att, b.projW, b.projB, R, C, C, f.transposedProj)
	ps.p.emit(tensors.AttnOut, l, ps.proj, R, C)
	if f.noResidual {
		copy(ps.x, ps.proj)
	} else {
		kernels.AddShared(ps.x, ps.proj)
	}
}

// mlp is x += c_proj(gelu(c_fc(ln_2(x)))).
func (ps *pass) mlp(l int, b *block, f blockFaults) {
	c, R := ps.m.Config, ps.R
	C, I := c.NEmbd, c.NInner
	layerNorm(ps.h, ps.x, b.ln2W, b.ln2B, C, f.eps)
	ps.p.emit(tensors.LN2, l, ps.h, R, C)
	conv1D(ps.fc, ps.h, b.fcW, b.fcB, R, C, I, false)
	if f.erfGELU {
		geluErf(ps.fc)
	} else {
		geluNew(ps.fc)
	}
	ps.p.emit(tensors.GELU, l, ps.fc, R, I)
	conv1D(ps.proj, ps.fc, b.mlpW, b.mlpB, R, I, C, false)
	ps.p.emit(tensors.MLPOut, l, ps.proj, R, C)
	kernels.AddShared(ps.x, ps.proj)
}
