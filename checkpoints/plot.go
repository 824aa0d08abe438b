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

// PlotFormats are the image formats WritePlot can write.
var PlotFormats = map[string]bool{"svg": true, "png": true, "pdf": true}

// plotFloor keeps exact matches (error 0) drawable on a log axis.
const plotFloor = 1e-6

// WritePlot draws, for each checkpoint, the worst error across layers as a
// fraction of its tolerance (max |got−want| / (atol + rtol·|want|)), on a
// log scale with the tolerance line at 1: a point above it is a failing
// tensor. Tensors after the last block are drawn at x = n_layer.
func (r *Report) WritePlot(w io.Writer, nLayer int, format string) error {
	if !PlotFormats[format] {
		return fmt.Errorf("plot format %q: want svg, png or pdf", format)
	}
	p := plot.New()
	p.Title.Text = "llorch-check: error relative to tolerance, per layer"
	p.X.Label.Text = "layer (head: ln_f and logits, after the blocks)"
	p.Y.Label.Text = "max |got−want| / (atol + rtol·|want|)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = powerTicks{}
	p.X.Tick.Marker = layerTicks(nLayer)
	// The free band right of the data holds the legend.
	p.X.Min, p.X.Max = -0.2, float64(nLayer)+0.6+0.25*float64(nLayer+1)
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
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, format)
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

// powerTicks labels each power of ten as 1e-05, not 9.999999e-06.
type powerTicks struct{}

func (powerTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		ticks = append(ticks, plot.Tick{Value: math.Pow(10, float64(e)), Label: fmt.Sprintf("1e%d", e)})
	}
	return ticks
}

// layerTicks labels 0..n-1 by layer and n as the head.
type layerTicks int

func (n layerTicks) Ticks(_, _ float64) []plot.Tick {
	ticks := make([]plot.Tick, 0, int(n)+1)
	for l := 0; l < int(n); l++ {
		ticks = append(ticks, plot.Tick{Value: float64(l), Label: fmt.Sprint(l)})
	}
	return append(ticks, plot.Tick{Value: float64(n), Label: "head"})
}
