package checkpoints

import (
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/llorch/llorch-check/tensors"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // png for draw.NewFormattedCanvas
	_ "gonum.org/v1/plot/vg/vgpdf"
	_ "gonum.org/v1/plot/vg/vgsvg"
)

// PlotFormats are the image formats WritePlot can write.
var PlotFormats = map[string]bool{"svg": true, "png": true, "pdf": true}

// otherFonts is how much wider than its own font the plot leaves room for
// its legend to be set by another renderer.
const otherFonts = 1.4

// plotFloor keeps exact matches (error 0) drawable on a log axis.
const plotFloor = 1e-6

// WritePlot draws, for each checkpoint, the worst error across layers as a
// fraction of its tolerance (max |got−want| / (atol + rtol·|want|)), on a
// log scale with the tolerance line at 1: a point above it is a failing
// tensor. Tensors after the last block are drawn at x = n_layer. The
// legend has its own strip right of the axes, so it never covers data.
func (r *Report) WritePlot(w io.Writer, nLayer int, format string) error {
	if !PlotFormats[format] {
		return fmt.Errorf("plot format %q: want svg, png or pdf", format)
	}
	p := plot.New()
	p.Title.Text = "llorch-check: worst error relative to tolerance, per layer"
	p.X.Label.Text = "layer (head: the final norm and logits, after the blocks)"
	p.Y.Label.Text = "|got−want| / (atol + rtol·|want|)"
	// log10 of the ratio on a linear axis: gonum centres an axis label on
	// the linear midpoint of the range, which on its log scale sits near the
	// top and squeezes the axes down.
	p.Y.Tick.Marker = powerTicks{}
	p.X.Tick.Marker = layerTicks(nLayer)
	p.X.Min, p.X.Max = -0.3, float64(nLayer)+0.3

	series := r.seriesByCheckpoint(nLayer)
	nums := make([]int, 0, len(series))
	for n := range series {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	labels := []string{"tolerance (1)"}
	lo, hi := 0.0, 0.0 // the tolerance line (10^0) is always in view
	for i, n := range nums {
		cp, _ := ByNumber(n)
		for j := range series[n] {
			series[n][j].Y = math.Log10(series[n][j].Y)
			lo, hi = math.Min(lo, series[n][j].Y), math.Max(hi, series[n][j].Y)
		}
		label := fmt.Sprintf("%d %s", n, cp.Name)
		labels = append(labels, label)
		line, head := layerLine(series[n], nLayer)
		if err := addSeries(p, label, i, line, head); err != nil {
			return err
		}
	}
	tol := plotter.NewFunction(func(float64) float64 { return 0 })
	tol.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	tol.Width = vg.Points(1.5)
	p.Add(tol)
	p.Legend.Add(labels[0], tol)
	// Whole decades around the data, one spare above so a failing point
	// stands clear of the line.
	p.Y.Min, p.Y.Max = math.Floor(lo), math.Ceil(hi)+1

	width, height := 9*vg.Inch, 5*vg.Inch
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	legend := p.Legend
	p.Legend = plot.NewLegend()
	legend.Top, legend.Left = true, true
	// Renderers without Liberation Serif set the text in a font of their
	// own: DejaVu Serif, Linux's usual one, sets the labels 29% wider than
	// they are laid out here (rsvg-convert cut "11 Sampling distribut"),
	// so the strip leaves room for the widest one set wider by otherFonts.
	var widest vg.Length
	for _, l := range labels {
		widest = max(widest, legend.TextStyle.Width(l))
	}
	strip := legend.Rectangle(dc).Size().X + widest*(otherFonts-1) + vg.Points(24)
	p.Draw(draw.Crop(dc, 0, -strip, 0, 0))
	legend.Draw(draw.Crop(dc, width-strip+vg.Points(12), 0, 0, -vg.Points(36)))
	_, err = c.WriteTo(w)
	return err
}

// layerLine splits a checkpoint's points into the line through its layers
// and the points after them (x = nLayer: the head's tensors, checkpoint
// 3's step logits), which belong to no layer and are drawn unjoined.
func layerLine(xys plotter.XYs, nLayer int) (line, head plotter.XYs) {
	for _, xy := range xys {
		if int(xy.X) >= nLayer {
			head = append(head, xy)
		} else {
			line = append(line, xy)
		}
	}
	return line, head
}

// addSeries draws series i's line with points, and its head points in the
// same colour and shape without a line; one legend entry.
func addSeries(p *plot.Plot, label string, i int, line, head plotter.XYs) error {
	color, shape := plotutil.Color(i), plotutil.Shape(i)
	if len(line) > 0 {
		l, pts, err := plotter.NewLinePoints(line)
		if err != nil {
			return err
		}
		l.Color, l.Dashes, pts.Color, pts.Shape = color, plotutil.Dashes(i), color, shape
		p.Add(l, pts)
		p.Legend.Add(label, l, pts)
	}
	if len(head) > 0 {
		pts, err := plotter.NewScatter(head)
		if err != nil {
			return err
		}
		pts.Color, pts.Shape = color, shape
		p.Add(pts)
		if len(line) == 0 {
			p.Legend.Add(label, pts)
		}
	}
	return nil
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
			if res.Name == tensors.Embeddings {
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

// powerTicks labels the integer e of a log10 axis as 1e<e>.
type powerTicks struct{}

func (powerTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := int(math.Ceil(lo)); e <= int(math.Floor(hi)); e++ {
		ticks = append(ticks, plot.Tick{Value: float64(e), Label: fmt.Sprintf("1e%d", e)})
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
