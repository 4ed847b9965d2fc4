package harness

import (
	"math"
	"testing"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

func TestNewStat(t *testing.T) {
	tests := []struct {
		name   string
		in     []float64
		want   Stat
		spread float64
	}{
		{"empty", nil, Stat{}, 0},
		{"one", []float64{5}, Stat{5, 5, 5, 1}, 0},
		{"odd", []float64{30, 10, 20}, Stat{20, 10, 30, 3}, 100},
		{"even", []float64{4, 1, 3, 2}, Stat{2.5, 1, 4, 4}, 120},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			got := NewStat(in)
			if got != tc.want {
				t.Errorf("NewStat(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
			if math.Abs(got.SpreadPct()-tc.spread) > 1e-9 {
				t.Errorf("SpreadPct = %v, want %v", got.SpreadPct(), tc.spread)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("input modified: %v", in)
				}
			}
		})
	}
}

func meas(target, point, phase string, rps float64, p99 float64) Measurement {
	return Measurement{
		Target: target, Point: point, Phase: phase, ReqPerSec: rps, ElapsedSec: 1, BytesRead: 2048,
		Latency: map[string]loadgen.Summary{"get": {Count: 1, P99Us: p99}},
	}
}

func TestAggregateMediansAndRatios(t *testing.T) {
	sc := &Scenario{Points: []Point{{Label: "1", X: 1, Phases: []Phase{
		{Name: "load", Report: false}, {Name: "get", Report: true},
	}}}}
	mc, pool := MemcachedTarget(2), TandemTarget("pool", 2, 0)
	lone := TandemTarget("inline", 3, 0) // no memcached at -t 3: no ratio
	runs := []Measurement{
		meas(mc.Name, "1", "get", 100, 10), meas(mc.Name, "1", "get", 300, 30), meas(mc.Name, "1", "get", 200, 20),
		meas(pool.Name, "1", "get", 150, 5), meas(pool.Name, "1", "get", 250, 15),
		meas(lone.Name, "1", "get", 10, 1),
		meas(pool.Name, "1", "load", 1e6, 1), // not reported
	}
	rows := Aggregate(sc, []Target{pool, mc, lone}, runs)
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(rows))
	}
	p, m, l := rows[0], rows[1], rows[2]
	if p.Target.Name != pool.Name || m.Target.Name != mc.Name {
		t.Fatalf("row order %s %s, want target order", p.Target.Name, m.Target.Name)
	}
	if _, ok := p.Phases["load"]; ok {
		t.Error("unreported phase aggregated")
	}
	g := p.Phase("get")
	if g.ReqPerSec.Median != 200 || m.Phase("get").ReqPerSec.Median != 200 {
		t.Errorf("medians %v and %v, want 200 and 200", g.ReqPerSec.Median, m.Phase("get").ReqPerSec.Median)
	}
	if g.Ratio != 1 || g.Baseline != mc.Name {
		t.Errorf("ratio %v vs %q, want 1 vs %s", g.Ratio, g.Baseline, mc.Name)
	}
	if got := g.MainLatency().P99Us; got != 10 {
		t.Errorf("p99 median = %v, want 10", got)
	}
	if got := g.ReadKBps.Median; got != 2 {
		t.Errorf("read KB/s = %v, want 2", got)
	}
	if l.Phase("get").Ratio != 0 {
		t.Errorf("target without a memcached at its -t got ratio %v", l.Phase("get").Ratio)
	}
}
