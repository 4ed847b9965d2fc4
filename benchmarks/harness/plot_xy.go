package harness

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// XYPlot draws Y against X, one line per target through its points (in
// order of X), every target on one chart: the trace scenario's hit ratio
// against peak RSS, where a curve says more than a point.
type XYPlot struct {
	Name         string // file name suffix: <scenario>-<Name>.png
	Title        string
	XAxis, YAxis string
	X, Y         func(*Row) float64
}

// xyLines draws xy for every target in rows, each point labelled with its
// point's label (e.g. "-m 32"); points whose X or Y is 0 (not measured) are
// left out.
func xyLines(path string, rows []*Row, xy XYPlot) error {
	p := plot.New()
	p.Title.Text = xy.Title
	p.X.Label.Text, p.Y.Label.Text = xy.XAxis, xy.YAxis
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	lo, hi := plotter.XY{X: math.Inf(1), Y: math.Inf(1)}, plotter.XY{X: math.Inf(-1), Y: math.Inf(-1)}
	for i, t := range targetOrder(rows) {
		var pts plotter.XYs
		var labels []string
		for _, r := range rows {
			if r.Target.Name != t {
				continue
			}
			if x, y := xy.X(r), xy.Y(r); x > 0 && y > 0 {
				pts = append(pts, plotter.XY{X: x, Y: y})
				labels = append(labels, r.Point)
				lo.X, lo.Y, hi.X, hi.Y = min(lo.X, x), min(lo.Y, y), max(hi.X, x), max(hi.Y, y)
			}
		}
		if len(pts) == 0 {
			continue
		}
		idx := make([]int, len(pts))
		for j := range idx {
			idx[j] = j
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(pts[a].X, pts[b].X) })
		sorted, names := make(plotter.XYs, len(pts)), make([]string, len(pts))
		for j, k := range idx {
			sorted[j], names[j] = pts[k], labels[k]
		}
		pts = sorted
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: names})
		if err != nil {
			return err
		}
		for j := range lab.TextStyle {
			lab.TextStyle[j].Color = plotutil.Color(i)
			lab.TextStyle[j].Font.Size = vg.Points(8)
		}
		lab.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(-10)}
		p.Add(lab)
		if err := addSeries(p, i, t, pts); err != nil {
			return err
		}
	}
	if lo.X <= hi.X {
		// Room around the points for their labels and the legend.
		mx, my := max((hi.X-lo.X)*0.08, hi.X*0.02), max((hi.Y-lo.Y)*0.15, 0.01)
		p.X.Min, p.X.Max = lo.X-mx, hi.X+2*mx
		p.Y.Min, p.Y.Max = lo.Y-my, hi.Y+2*my
	}
	return savePlot(p, 9*vg.Inch, 5.5*vg.Inch, path)
}

// addSeries adds pts to p as line i with its marks, in plotutil's i-th colour, dashes and shape,
// under name in the legend.
func addSeries(p *plot.Plot, i int, name string, pts plotter.XYer) error {
	line, marks, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.Color, marks.Color = plotutil.Color(i), plotutil.Color(i)
	line.Dashes = plotutil.Dashes(i)
	marks.Shape = plotutil.Shape(i)
	p.Add(line, marks)
	p.Legend.Add(name, line, marks)
	return nil
}
