package checkpoints

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

var svgText = regexp.MustCompile(`<text x="([-0-9.e]+)"[^>]*>([^<]*)</text>`)

// TestPlotLayout: the legend sits right of every axis label (never over the
// data) and inside the picture, and the y axis spans the decades around
// the data and the tolerance line, not a fixed floor far below them.
func TestPlotLayout(t *testing.T) {
	r := &Report{}
	for layer, ratio := range []float64{2e-2, 3e-1} {
		l := layer
		r.Results = append(r.Results, Result{Checkpoint: 1, Name: "ln_1", Layer: &l, TolRatio: Float(ratio), stats: &Stats{}})
	}
	var buf bytes.Buffer
	require.NoError(t, r.WritePlot(&buf, 2, "svg"))

	xs := map[string]float64{}
	for _, m := range svgText.FindAllStringSubmatch(buf.String(), -1) {
		x, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		xs[m[2]] = x
	}
	require.Contains(t, xs, "head")
	for _, entry := range []string{"1 Norm", "tolerance (1)"} {
		require.Contains(t, xs, entry)
		require.Greater(t, xs[entry], xs["head"]+20, "legend entry %q over the data", entry)
		width := plot.NewLegend().TextStyle.Width(entry).Points()
		require.Less(t, xs[entry]+width, 9*72.0, "legend entry %q cut off at the right edge", entry)
	}
	for _, tick := range []string{"1e-2", "1e-1", "1e0", "1e1"} {
		require.Contains(t, xs, tick)
	}
	require.NotContains(t, xs, "1e-3", "the y axis starts below the data's decade")
	require.NotContains(t, xs, "1e2")
}

// TestPlotLegendRoomForOtherFonts: a renderer without Liberation Serif
// sets the legend in its own font, DejaVu Serif on most Linux systems,
// 27-29% wider for these labels (rsvg-convert cut "11 Sampling
// distribut"): every entry still ends inside the picture at 1.3 times its
// laid-out width.
func TestPlotLegendRoomForOtherFonts(t *testing.T) {
	r := &Report{}
	for _, cp := range All() {
		for l := range 2 {
			r.Results = append(r.Results, Result{Checkpoint: cp.Number, Name: "t", Layer: &l, TolRatio: 0.5, stats: &Stats{}})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, r.WritePlot(&buf, 2, "svg"))
	style := plot.NewLegend().TextStyle
	entries := 0
	for _, m := range svgText.FindAllStringSubmatch(buf.String(), -1) {
		if !legendEntry.MatchString(m[2]) {
			continue
		}
		entries++
		x, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		require.LessOrEqual(t, x+1.3*style.Width(m[2]).Points(), 9*72.0, "legend entry %q set 30%% wider runs off the picture", m[2])
	}
	require.Equal(t, len(All())+1, entries, "every checkpoint and the tolerance line in the legend")
}

var legendEntry = regexp.MustCompile(`^(\d+ .+|tolerance \(1\))$`)

// TestPlotHeadPointsUnjoined: a checkpoint's entries after the blocks
// (checkpoint 3's step logits, the head's tensors) are drawn as points
// apart from its layers' line, not as one more layer on it.
func TestPlotHeadPointsUnjoined(t *testing.T) {
	xys := plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 2, Y: 3}}
	line, head := layerLine(xys, 2)
	require.Equal(t, plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}}, line)
	require.Equal(t, plotter.XYs{{X: 2, Y: 3}}, head)

	r := &Report{}
	for layer := range 2 {
		l := layer
		r.Results = append(r.Results, Result{Checkpoint: 3, Name: "k_cache", Layer: &l, TolRatio: 0.1, stats: &Stats{}})
	}
	r.Results = append(r.Results, Result{Checkpoint: 3, Name: "step_logits", TolRatio: 0.2, stats: &Stats{}})
	var buf bytes.Buffer
	require.NoError(t, r.WritePlot(&buf, 2, "svg"))
	// The markers are circles (d="Mx+2.5,y A..."); a line that joined the
	// head's would have a vertex at its centre, the rightmost marker's.
	svg := buf.String()
	marker := regexp.MustCompile(`<path d="M([-0-9.e]+),([-0-9.e]+)A2\.5,2\.5`)
	// The data area's clip rectangle is the first path; the legend's
	// markers lie right of it.
	area := regexp.MustCompile(`<path d="M0,0L([-0-9.e]+),0`).FindStringSubmatch(svg)
	require.NotNil(t, area)
	right, err := strconv.ParseFloat(area[1], 64)
	require.NoError(t, err)
	headX, headY := -1.0, ""
	for _, m := range marker.FindAllStringSubmatch(svg, -1) {
		x, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		if x-2.5 > headX && x < right {
			headX, headY = x-2.5, m[2]
		}
	}
	require.Greater(t, headX, 0.0)
	vertex := "L" + strconv.FormatFloat(headX, 'g', 5, 64) + "," + headY
	for _, m := range regexp.MustCompile(`<path d="([^"A]*)"`).FindAllStringSubmatch(svg, -1) {
		require.NotContains(t, m[1], vertex, "a line runs to the head's point")
	}
}
