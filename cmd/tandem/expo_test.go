package main

import (
	"math"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestExpoFormat(t *testing.T) {
	info := newFamily("t_info", "Release and mode.", "version", "mode")
	hits := newFamily("t_hits_total", "Hits, by slab.\nSecond line \\ here.", "slab")
	up := newFamily("t_up", "Up.")
	tests := []struct {
		name string
		add  func(e *expo)
		want string
	}{
		{"labels sorted by name", func(e *expo) { e.add(info, gaugeValue, 1, "1.0", "pool") },
			"# HELP t_info Release and mode.\n# TYPE t_info gauge\nt_info{mode=\"pool\",version=\"1.0\"} 1\n"},
		{"a family's samples together, families in order of first sample", func(e *expo) {
			e.add(hits, counterValue, 3, "1")
			e.add(up, gaugeValue, 1)
			e.add(hits, counterValue, 4, "2")
		}, "# HELP t_hits_total Hits, by slab.\\nSecond line \\\\ here.\n# TYPE t_hits_total counter\n" +
			"t_hits_total{slab=\"1\"} 3\nt_hits_total{slab=\"2\"} 4\n" +
			"# HELP t_up Up.\n# TYPE t_up gauge\nt_up 1\n"},
		{"label values escaped", func(e *expo) { e.add(info, gaugeValue, 0, "a\"b\\c\nd", "x") },
			"# HELP t_info Release and mode.\n# TYPE t_info gauge\nt_info{mode=\"x\",version=\"a\\\"b\\\\c\\nd\"} 0\n"},
		{"values", func(e *expo) {
			for _, v := range []float64{0, -1, 0.25, 67108864, 1e21, math.Inf(1), math.Inf(-1), math.NaN()} {
				e.add(up, gaugeValue, v)
			}
		}, "# HELP t_up Up.\n# TYPE t_up gauge\nt_up 0\nt_up -1\nt_up 0.25\nt_up 6.7108864e+07\nt_up 1e+21\n" +
			"t_up +Inf\nt_up -Inf\nt_up NaN\n"},
		{"nothing collected", func(*expo) {}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e expo
			tt.add(&e)
			if got := string(e.appendTo(nil)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestStdlogWriter(t *testing.T) {
	var b strings.Builder
	w := stdlogWriter{zerolog.New(&b).With().Str("component", "metrics").Logger()}
	line := "ERROR: metrics: cannot open /proc/self/io\n"
	if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	want := `{"level":"warn","component":"metrics","message":"ERROR: metrics: cannot open /proc/self/io"}` + "\n"
	if b.String() != want {
		t.Errorf("got %s, want %s", b.String(), want)
	}
}
