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

func TestAggregateHitRatioStatsAndBaseline(t *testing.T) {
	sc := &Scenario{Baseline: "memcached-t1", Points: []Point{{Label: "z", Phases: []Phase{{Name: "m", Report: true}}}}}
	mc, pool := MemcachedTarget(1), TandemTarget("pool", 2, 0)
	mk := func(target string, hit, items float64) Measurement {
		m := meas(target, "z", "m", 100, 1)
		m.HitRatio, m.Stats = hit, map[string]float64{"curr_items": items}
		return m
	}
	runs := []Measurement{
		mk(mc.Name, 0.7771, 1000), mk(mc.Name, 0.7793, 1010), mk(mc.Name, 0.7780, 990),
		mk(pool.Name, 0.8040, 2000), mk(pool.Name, 0.8050, 2000), mk(pool.Name, 0.8010, 2100),
	}
	rows := Aggregate(sc, []Target{pool, mc}, runs)
	p := rows[0].Phase("m")
	if p.Baseline != mc.Name || p.Ratio != 1 {
		t.Errorf("pool -t 2 compared with %q ratio %v, want the scenario's baseline %s", p.Baseline, p.Ratio, mc.Name)
	}
	if p.HitRatio != 0.804 || p.HitDiff != 0.026 {
		t.Errorf("hit ratio %v diff %v, want 0.804 and +0.026", p.HitRatio, p.HitDiff)
	}
	if p.HitPct != (Stat{Median: 80.4, Min: 80.1, Max: 80.5, N: 3}) {
		t.Errorf("hit pct %+v", p.HitPct)
	}
	if got := p.Stats["curr_items"]; got.Median != 2000 || got.N != 3 {
		t.Errorf("curr_items %+v, want median 2000 over 3", got)
	}
	cells := []struct {
		c    Column
		want string
	}{
		{colHit("h", "m"), "0.804 ±0.002"},
		{colHitDiff("d", "m"), "+0.026"},
		{colStat("i", "m", "curr_items", 1), "2,000"},
		{colStat("b", "m", "nope", 1), "–"},
		{colHit("h", "absent"), "–"},
	}
	for _, tc := range cells {
		if got := tc.c.Cell(rows[0]); got != tc.want {
			t.Errorf("%s cell %q, want %q", tc.c.Header, got, tc.want)
		}
	}
}

func TestPickAndFormatStats(t *testing.T) {
	got := pickStats(map[string]string{"curr_items": "129400", "bytes": "18632000", "version": "1.6.18", "x": "oops"},
		[]string{"curr_items", "bytes", "x", "missing"})
	if len(got) != 2 || got["curr_items"] != 129400 || got["bytes"] != 18632000 {
		t.Errorf("pickStats = %v", got)
	}
	if s := statsString(got); s != "bytes=18632000 curr_items=129400" {
		t.Errorf("statsString = %q", s)
	}
}
