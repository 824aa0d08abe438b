package model

import (
	"fmt"
	"math"
)

// naiveForward is an independent float64 GPT-2 written as plain loops over
// the whole sequence, straight from docs/spec.md. It returns [T][V]
// logits and, per layer, the full-sequence keys and values as [H][T][D].
func naiveForward(c Config, w *testWeights, tokens []int) (logits [][]float64, ks, vs [][][][]float64) {
	C, H, D, I, V := c.NEmbd, c.NHead, c.NEmbd/c.NHead, c.NInner, c.VocabSize
	T := len(tokens)
	W := func(name string) []float64 { return w.data[name] }
	x := make([][]float64, T)
	for t, tok := range tokens {
		x[t] = make([]float64, C)
		for i := 0; i < C; i++ {
			x[t][i] = W("wte.weight")[tok*C+i] + W("wpe.weight")[t*C+i]
		}
	}
	ln := func(row, g, b []float64) []float64 {
		var mean, v float64
		for _, a := range row {
			mean += a
		}
		mean /= float64(len(row))
		for _, a := range row {
			v += (a - mean) * (a - mean)
		}
		v /= float64(len(row))
		out := make([]float64, len(row))
		for i, a := range row {
			out[i] = (a-mean)/math.Sqrt(v+c.LayerNormEpsilon)*g[i] + b[i]
		}
		return out
	}
	// y = x·W + b with W stored [in,out].
	lin := func(row, wt, b []float64, out int) []float64 {
		y := make([]float64, out)
		for j := 0; j < out; j++ {
			s := b[j]
			for i, a := range row {
				s += a * wt[i*out+j]
			}
			y[j] = s
		}
		return y
	}
	for l := 0; l < c.NLayer; l++ {
		p := fmt.Sprintf("h.%d.", l)
		q := make([][]float64, T)
		k := make([][]float64, T)
		v := make([][]float64, T)
		for t := 0; t < T; t++ {
			qkv := lin(ln(x[t], W(p+"ln_1.weight"), W(p+"ln_1.bias")), W(p+"attn.c_attn.weight"), W(p+"attn.c_attn.bias"), 3*C)
			q[t], k[t], v[t] = qkv[:C], qkv[C:2*C], qkv[2*C:]
		}
		lk := make([][][]float64, H)
		lv := make([][][]float64, H)
		for h := 0; h < H; h++ {
			for t := 0; t < T; t++ {
				lk[h] = append(lk[h], k[t][h*D:(h+1)*D])
				lv[h] = append(lv[h], v[t][h*D:(h+1)*D])
			}
		}
		ks, vs = append(ks, lk), append(vs, lv)
		for t := 0; t < T; t++ {
			merged := make([]float64, C)
			for h := 0; h < H; h++ {
				sc := make([]float64, t+1)
				mx := math.Inf(-1)
				for j := 0; j <= t; j++ {
					for d := 0; d < D; d++ {
						sc[j] += q[t][h*D+d] * k[j][h*D+d]
					}
					sc[j] /= math.Sqrt(float64(D))
					mx = math.Max(mx, sc[j])
				}
				var sum float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				for j := range sc {
					for d := 0; d < D; d++ {
						merged[h*D+d] += sc[j] / sum * v[j][h*D+d]
					}
				}
			}
			attn := lin(merged, W(p+"attn.c_proj.weight"), W(p+"attn.c_proj.bias"), C)
			for i := range attn {
				x[t][i] += attn[i]
			}
			f := lin(ln(x[t], W(p+"ln_2.weight"), W(p+"ln_2.bias")), W(p+"mlp.c_fc.weight"), W(p+"mlp.c_fc.bias"), I)
			for i, a := range f {
				f[i] = 0.5 * a * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(a+0.044715*a*a*a)))
			}
			mo := lin(f, W(p+"mlp.c_proj.weight"), W(p+"mlp.c_proj.bias"), C)
			for i := range mo {
				x[t][i] += mo[i]
			}
		}
	}
	for t := 0; t < T; t++ {
		hf := ln(x[t], W("ln_f.weight"), W("ln_f.bias"))
		row := make([]float64, V)
		for tok := 0; tok < V; tok++ {
			for i := 0; i < C; i++ {
				row[tok] += hf[i] * W("wte.weight")[tok*C+i]
			}
		}
		logits = append(logits, row)
	}
	return logits, ks, vs
}
