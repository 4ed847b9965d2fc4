package harness

import (
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

// xyLines draws xy for every target in rows; points whose X or Y is 0 (not
// measured) are left out.
func xyLines(path string, rows []*Row, xy XYPlot) error {
	p := plot.New()
	p.Title.Text = xy.Title
	p.X.Label.Text, p.Y.Label.Text = xy.XAxis, xy.YAxis
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for i, t := range targetOrder(rows) {
		var pts plotter.XYs
		for _, r := range rows {
			if r.Target.Name != t {
				continue
			}
			if x, y := xy.X(r), xy.Y(r); x > 0 && y > 0 {
				pts = append(pts, plotter.XY{X: x, Y: y})
			}
		}
		if len(pts) == 0 {
			continue
		}
		slices.SortFunc(pts, func(a, b plotter.XY) int {
			switch {
			case a.X < b.X:
				return -1
			case a.X > b.X:
				return 1
			}
			return 0
		})
		line, marks, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		line.Color, marks.Color = plotutil.Color(i), plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		marks.Shape = plotutil.Shape(i)
		p.Add(line, marks)
		p.Legend.Add(t, line, marks)
	}
	return savePlot(p, 9*vg.Inch, 5.5*vg.Inch, path)
}
