package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writePlots draws the throughput plots (one per plotted phase and point
// group) and the latency-percentile plot into dir, and returns their file
// names.
func writePlots(dir string, sc *Scenario, rows []*Row) ([]string, error) {
	var files []string
	groups := pointGroups(sc)
	for _, phase := range sc.PlotPhases {
		for _, g := range groups {
			name := fmt.Sprintf("%s-%s", sc.Name, phase)
			title := fmt.Sprintf("%s: %s throughput", sc.Name, phase)
			if len(groups) > 1 {
				name += "-" + g
				title += fmt.Sprintf(" (%s client threads)", g)
			}
			name += ".png"
			var err error
			if sc.Bars {
				err = throughputBars(filepath.Join(dir, name), title, sc, rows, phase)
			} else {
				err = throughputLines(filepath.Join(dir, name), title, sc, rows, phase, g)
			}
			if err != nil {
				return files, fmt.Errorf("plot %s: %w", name, err)
			}
			files = append(files, name)
		}
	}
	for _, mp := range sc.MetricPlots {
		name := fmt.Sprintf("%s-%s.png", sc.Name, mp.Name)
		if err := metricBars(filepath.Join(dir, name), sc, rows, mp); err != nil {
			return files, fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, name)
	}
	for _, xy := range sc.XYPlots {
		name := fmt.Sprintf("%s-%s.png", sc.Name, xy.Name)
		if err := xyLines(filepath.Join(dir, name), rows, xy); err != nil {
			return files, fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, name)
	}
	for _, cp := range sc.CustomPlots {
		name := fmt.Sprintf("%s-%s.png", sc.Name, cp.Name)
		if err := cp.Draw(filepath.Join(dir, name), rows); err != nil {
			return files, fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, name)
	}
	if len(sc.HitPhases) > 0 {
		name := sc.Name + "-hits.png"
		if err := hitBars(filepath.Join(dir, name), sc, rows); err != nil {
			return files, fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, name)
	}
	if sc.LatencyPhase != "" {
		name := sc.Name + "-latency.png"
		drawn, err := latencyBars(filepath.Join(dir, name), sc, rows)
		if err != nil {
			return files, fmt.Errorf("plot %s: %w", name, err)
		}
		if drawn {
			files = append(files, name)
		}
	}
	return files, nil
}

// pointGroups lists the distinct point groups in order ("" when ungrouped).
func pointGroups(sc *Scenario) []string {
	var gs []string
	seen := map[string]bool{}
	for _, p := range sc.Points {
		if !seen[p.Group] {
			seen[p.Group] = true
			gs = append(gs, p.Group)
		}
	}
	return gs
}

// targetOrder lists the targets present in rows, in first-seen order.
func targetOrder(rows []*Row) []string {
	var ts []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Target.Name] {
			seen[r.Target.Name] = true
			ts = append(ts, r.Target.Name)
		}
	}
	return ts
}

// spreadXYs is a line with min/max error bars.
type spreadXYs struct {
	x, med, lo, hi []float64
}

func (s *spreadXYs) Len() int                        { return len(s.x) }
func (s *spreadXYs) XY(i int) (float64, float64)     { return s.x[i], s.med[i] }
func (s *spreadXYs) YError(i int) (float64, float64) { return s.med[i] - s.lo[i], s.hi[i] - s.med[i] }

func throughputLines(path, title string, sc *Scenario, rows []*Row, phase, group string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = sc.XLabel
	p.Y.Label.Text = "requests/s (median, bars: min-max)"
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Tick.Marker = commaTicks{}
	setXAxis(p, sc, group)
	maxY, lines := 0.0, 0
	for i, t := range targetOrder(rows) {
		s := &spreadXYs{}
		for _, r := range rows {
			a, ok := r.Phases[phase]
			if r.Target.Name != t || r.Group != group || !ok {
				continue
			}
			s.x = append(s.x, r.X)
			s.med = append(s.med, a.ReqPerSec.Median)
			s.lo = append(s.lo, a.ReqPerSec.Min)
			s.hi = append(s.hi, a.ReqPerSec.Max)
			maxY = max(maxY, a.ReqPerSec.Max)
		}
		if s.Len() == 0 {
			continue
		}
		if err := addSeries(p, i, t, s); err != nil {
			return err
		}
		eb, err := plotter.NewYErrorBars(s)
		if err != nil {
			return err
		}
		eb.Color = plotutil.Color(i)
		p.Add(eb)
		lines++
	}
	p.Y.Min = 0
	// Head room for the legend, which sits inside the plot area.
	p.Y.Max = maxY * (1.1 + 0.045*float64(lines))
	return savePlot(p, 9*vg.Inch, 5.5*vg.Inch, path)
}

// maxPointTicks is the most point values labelled one by one on an X axis;
// with more, the axis gets the usual (log) ticks.
const maxPointTicks = 10

// setXAxis scales the X axis of a line plot and puts its ticks on the
// points' own values (1, 2, 4 ... client threads), so no tick falls between
// two counts (1.5 threads). Both ends get a margin so the end labels fit.
func setXAxis(p *plot.Plot, sc *Scenario, group string) {
	var xs []float64
	for _, pt := range sc.Points {
		if pt.Group == group && !slices.Contains(xs, pt.X) {
			xs = append(xs, pt.X)
		}
	}
	slices.Sort(xs)
	if len(xs) == 0 {
		return
	}
	lo, hi := xs[0], xs[len(xs)-1]
	if sc.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = lo/1.25, hi*1.25
	} else {
		m := max((hi-lo)*0.04, 0.5)
		p.X.Min, p.X.Max = lo-m, hi+m
	}
	if len(xs) <= maxPointTicks {
		p.X.Tick.Marker = pointTicks(xs)
	}
}

// pointTicks labels exactly the values xs.
func pointTicks(xs []float64) plot.ConstantTicks {
	ts := make(plot.ConstantTicks, len(xs))
	for i, x := range xs {
		ts[i] = plot.Tick{Value: x, Label: thousands(x)}
	}
	return ts
}

// plotMargin is the white border around every plot, so titles and the
// outermost tick labels are never cut by the image's edge.
var plotMargin = vg.Points(10)

// savePlot writes p as a w x h PNG at path, inside a margin, with its title
// shrunk until it fits the width.
func savePlot(p *plot.Plot, w, h vg.Length, path string) error {
	fitTitle(p, w-2*plotMargin)
	p.Title.Padding = vg.Points(6)
	c := vgimg.New(w, h)
	p.Draw(draw.Crop(draw.New(c), plotMargin, -plotMargin, plotMargin, -plotMargin))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fitTitle shrinks the title's font until the title is at most width wide.
func fitTitle(p *plot.Plot, width vg.Length) {
	st := &p.Title.TextStyle
	for st.Width(p.Title.Text) > width && st.Font.Size > 6 {
		st.Font.Size *= 0.9
	}
}

// groupedHBars draws horizontal bars: one category per label, one bar per
// series inside each category.
func groupedHBars(path, title, xlabel string, labels, series []string, val func(cat, ser int) float64) error {
	p, h, err := hbars(title, xlabel, labels, series, val)
	if err != nil {
		return err
	}
	return savePlot(p, 9*vg.Inch, h, path)
}

// hbars builds groupedHBars' plot and returns it with its height.
func hbars(title, xlabel string, labels, series []string, val func(cat, ser int) float64) (*plot.Plot, vg.Length, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Legend.Top = true
	p.X.Tick.Marker = commaTicks{}
	const barW = 9
	w := vg.Points(barW)
	n := len(series)
	maxX := 0.0
	for si, s := range series {
		vs := make(plotter.Values, len(labels))
		for ci := range labels {
			vs[ci] = val(ci, si)
			maxX = max(maxX, vs[ci])
		}
		bars, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, 0, err
		}
		bars.Horizontal = true
		bars.Color = plotutil.Color(si)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Points(float64(barW) * (float64(si) - float64(n-1)/2))
		p.Add(bars)
		p.Legend.Add(s, bars)
	}
	p.NominalY(labels...)
	// A whole unit per category, so the outer bars stay inside the axes.
	p.Y.Min, p.Y.Max = -0.5, float64(len(labels))-0.5
	p.X.Min = 0
	p.X.Max = maxX * 1.3 // room on the right for the legend
	p.Add(plotter.NewGrid())
	// Each category gets its bars plus a gap, whatever the count.
	h := vg.Points(float64(len(labels))*(float64(n*barW)+20)) + 1.3*vg.Inch
	return p, h, nil
}

func throughputBars(path, title string, sc *Scenario, rows []*Row, phase string) error {
	targets := targetOrder(rows)
	var points []string
	for _, pt := range sc.Points {
		points = append(points, pt.Label)
	}
	find := func(t, pt string) *PhaseAgg {
		for _, r := range rows {
			if r.Target.Name == t && r.Point == pt {
				return r.Phase(phase)
			}
		}
		return &PhaseAgg{}
	}
	return groupedHBars(path, title, "requests/s (median)", targets, points,
		func(ti, pi int) float64 { return find(targets[ti], points[pi]).ReqPerSec.Median })
}

// metricBars draws mp.Value for every target, one bar per point.
func metricBars(path string, sc *Scenario, rows []*Row, mp MetricPlot) error {
	targets := targetOrder(rows)
	var points []string
	for _, pt := range sc.Points {
		points = append(points, pt.Label)
	}
	val := func(ti, pi int) float64 {
		for _, r := range rows {
			if r.Target.Name == targets[ti] && r.Point == points[pi] {
				return mp.Value(r.Phase(mp.Phase))
			}
		}
		return 0
	}
	return groupedHBars(path, mp.Title, mp.Axis, targets, points, val)
}

// hitBars draws the median hit ratio of each target, one bar per phase in
// sc.HitPhases, at the scenario's last point.
func hitBars(path string, sc *Scenario, rows []*Row) error {
	point := sc.Points[len(sc.Points)-1].Label
	var targets []string
	var aggs []*Row
	for _, r := range rows {
		if r.Point == point {
			targets = append(targets, r.Target.Name)
			aggs = append(aggs, r)
		}
	}
	title := fmt.Sprintf("%s: hit ratio (gets that hit / gets)", sc.Name)
	p, h, err := hbars(title, "hit ratio (median over repetitions)", targets, sc.HitPhases,
		func(ti, pi int) float64 { return aggs[ti].Phase(sc.HitPhases[pi]).HitPct.Median / 100 })
	if err != nil {
		return err
	}
	p.X.Tick.Marker = plot.DefaultTicks{}
	p.X.Min, p.X.Max = 0, 1.2 // a ratio: the whole 0..1 range, room for the legend
	return savePlot(p, 9*vg.Inch, h, path)
}

// latencyBars draws p50/p99/p99.9 per target at the scenario's latency
// point; it reports false when no target has data there.
func latencyBars(path string, sc *Scenario, rows []*Row) (bool, error) {
	point := sc.LatencyPoint
	if point == "" {
		point = sc.Points[len(sc.Points)-1].Label
	}
	var targets []string
	var lats []LatAgg
	for _, r := range rows {
		if a, ok := r.Phases[sc.LatencyPhase]; ok && r.Point == point {
			targets = append(targets, r.Target.Name)
			lats = append(lats, a.MainLatency())
		}
	}
	if len(targets) == 0 {
		return false, nil
	}
	pcts := []string{"p50", "p99", "p99.9"}
	title := fmt.Sprintf("%s: %s latency at %s = %s", sc.Name, sc.LatencyPhase, sc.XLabel, point)
	err := groupedHBars(path, title, "µs (median over repetitions)", targets, pcts, func(ti, pi int) float64 {
		l := lats[ti]
		return [...]float64{l.P50Us, l.P99Us, l.P999Us}[pi]
	})
	return err == nil, err
}

// commaTicks are gonum's default ticks labelled like 12,000.
type commaTicks struct{}

// Ticks implements plot.Ticker.
func (commaTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = thousands(ts[i].Value)
		}
	}
	return ts
}
