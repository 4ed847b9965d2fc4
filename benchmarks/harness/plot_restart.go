package harness

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// windowLines draws the restart scenario's hit ratio per window against
// the accesses replayed, one line per target and case (no restart, warm
// restart, cold start).
func windowLines(path, title string, rows []*Row) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "accesses replayed after the restart (millions)"
	p.Y.Label.Text = "hit ratio of the window"
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	i := 0
	for _, r := range rows {
		a := r.Phase("hit").RestartHit
		if a == nil || len(a.Windows) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(a.Windows))
		var done float64
		for j, w := range a.Windows {
			done += float64(w.Accesses)
			pts[j] = plotter.XY{X: done / 1e6, Y: w.HitPct.Median / 100}
		}
		if err := addSeries(p, i, r.Target.Name+" "+r.Point, pts); err != nil {
			return err
		}
		i++
	}
	return savePlot(p, 9*vg.Inch, 5.5*vg.Inch, path)
}
