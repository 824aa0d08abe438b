package checkpoints

import (
	"fmt"
	"io"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotFloor keeps exact matches (error 0) drawable on a log axis.
const plotFloor = 1e-6

// WritePlot draws, for each checkpoint, the worst error across layers as a
// fraction of its tolerance (max |got−want| / (atol + rtol·|want|)), on a
// log scale with the tolerance line at 1: a point above it is a failing
// tensor. Tensors after the last block are drawn at x = n_layer.
func (r *Report) WritePlot(w io.Writer, nLayer int) error {
	p := plot.New()
	p.Title.Text = "llorch-check: error relative to tolerance, per layer"
	p.X.Label.Text = fmt.Sprintf("layer (%d = after the blocks: ln_f, logits)", nLayer)
	p.Y.Label.Text = "max |got−want| / (atol + rtol·|want|)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = -0.2, float64(nLayer)+0.2
	p.Legend.Top = true

	series := r.seriesByCheckpoint(nLayer)
	nums := make([]int, 0, len(series))
	for n := range series {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	var args []any
	maxY := 10.0
	for _, n := range nums {
		cp, _ := ByNumber(n)
		args = append(args, fmt.Sprintf("%d %s", n, cp.Name), series[n])
		for _, xy := range series[n] {
			maxY = math.Max(maxY, xy.Y*2)
		}
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return err
	}
	tol := plotter.NewFunction(func(float64) float64 { return 1 })
	tol.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	tol.Width = vg.Points(1.5)
	p.Add(tol)
	p.Legend.Add("tolerance", tol)
	p.Y.Min, p.Y.Max = plotFloor, maxY
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "svg")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// seriesByCheckpoint takes, per checkpoint and layer, the worst ratio over
// cases and tensors.
func (r *Report) seriesByCheckpoint(nLayer int) map[int]plotter.XYs {
	worst := map[int]map[int]float64{}
	for _, res := range r.Results {
		if res.Status == StatusNotImplemented || res.stats == nil {
			continue
		}
		x := res.LayerIndex()
		if x < 0 {
			if res.Name == "embeddings" {
				x = 0
			} else {
				x = nLayer
			}
		}
		if worst[res.Checkpoint] == nil {
			worst[res.Checkpoint] = map[int]float64{}
		}
		v := float64(res.TolRatio)
		if math.IsInf(v, 0) || math.IsNaN(v) {
			v = 1e6 // off the chart but drawn
		}
		worst[res.Checkpoint][x] = math.Max(worst[res.Checkpoint][x], math.Max(v, plotFloor))
	}
	out := map[int]plotter.XYs{}
	for n, byX := range worst {
		xs := make([]int, 0, len(byX))
		for x := range byX {
			xs = append(xs, x)
		}
		sort.Ints(xs)
		for _, x := range xs {
			out[n] = append(out[n], plotter.XY{X: float64(x), Y: byX[x]})
		}
	}
	return out
}
