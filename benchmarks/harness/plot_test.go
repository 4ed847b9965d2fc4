package harness

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// TestXTicksAreThePoints: a thread sweep's axis is labelled at the thread
// counts measured, never between them (no "1.5 threads").
func TestXTicksAreThePoints(t *testing.T) {
	for _, p := range []Profile{Quick, Default} {
		for _, sc := range Scenarios(p) {
			if sc.Bars || len(sc.PlotPhases) == 0 {
				continue
			}
			for _, g := range pointGroups(&sc) {
				pl := plot.New()
				setXAxis(pl, &sc, g)
				ticks := pl.X.Tick.Marker.Ticks(pl.X.Min, pl.X.Max)
				for _, tk := range ticks {
					if tk.Label != "" && tk.Value != float64(int64(tk.Value)) {
						t.Errorf("%s/%s group %q: tick %q at %v", p, sc.Name, g, tk.Label, tk.Value)
					}
				}
				if _, pts := pl.X.Tick.Marker.(plot.ConstantTicks); pts &&
					(pl.X.Min >= ticks[0].Value || pl.X.Max <= ticks[len(ticks)-1].Value) {
					t.Errorf("%s/%s: axis %v..%v leaves no margin around ticks %v", p, sc.Name, pl.X.Min, pl.X.Max, ticks)
				}
			}
		}
	}
}

func TestFitTitle(t *testing.T) {
	p := plot.New()
	p.Title.Text = strings.Repeat("a long title that would not fit ", 8)
	w := 9 * vg.Inch
	fitTitle(p, w)
	if got := p.Title.TextStyle.Width(p.Title.Text); got > w {
		t.Errorf("title %v wide after fitTitle, want <= %v", got, w)
	}
	short := plot.New()
	short.Title.Text = "short"
	size := short.Title.TextStyle.Font.Size
	fitTitle(short, w)
	if short.Title.TextStyle.Font.Size != size {
		t.Errorf("a short title was shrunk")
	}
}

func TestSavePlotWritesAPNG(t *testing.T) {
	p := plot.New()
	p.Title.Text = "t"
	path := filepath.Join(t.TempDir(), "p.png")
	if err := savePlot(p, 4*vg.Inch, 3*vg.Inch, path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width < 100 || cfg.Height < 100 {
		t.Errorf("png %+v, %v", cfg, err)
	}
}
