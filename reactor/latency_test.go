package reactor

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestLatencySampler(t *testing.T) {
	observe := func(time.Duration) {}
	tests := []struct {
		name    string
		observe func(time.Duration)
		calls   int
		want    int
	}{
		{"off", nil, 1000, 0},
		{"one in 64", observe, 64 * 10, 10},
		{"fewer than 64 from fd offset 0", observe, 63, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLatencySampler(0)
			got := 0
			for range tc.calls {
				if !l.start(tc.observe).IsZero() {
					got++
				}
			}
			if got != tc.want {
				t.Fatalf("%d calls sampled %d, want %d", tc.calls, got, tc.want)
			}
		})
	}
	l := newLatencySampler(0)
	if n := testing.AllocsPerRun(1000, func() { l.start(observe) }); n != 0 {
		t.Errorf("start allocates %v times", n)
	}
}

// BenchmarkLatencySampler is the per-batch cost the request path pays for
// the latency histogram: off (no observer) and on (1 in 64 timed).
func BenchmarkLatencySampler(b *testing.B) {
	var sink time.Duration
	observe := func(d time.Duration) { sink += d }
	for _, bc := range []struct {
		name    string
		observe func(time.Duration)
	}{{"off", nil}, {"on", observe}} {
		b.Run(bc.name, func(b *testing.B) {
			l := newLatencySampler(0)
			b.ReportAllocs()
			for b.Loop() {
				t0 := l.start(bc.observe)
				if bc.observe != nil {
					observeSince(bc.observe, t0)
				}
			}
		})
	}
	_ = sink
}

// BenchmarkActivityNow is the timestamp OnTraffic records per read event
// for --idle-timeout and "stats conns": the exact clock, and a coarse one.
func BenchmarkActivityNow(b *testing.B) {
	var coarse atomic.Int64
	coarse.Store(time.Now().Unix())
	for _, bc := range []struct {
		name string
		cfg  Config
	}{
		{"exact", Config{}},
		{"coarse", Config{Clock: coarse.Load}},
		{"idle-timeout", Config{Clock: coarse.Load, IdleTimeout: time.Minute}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var gc gconn
			b.ReportAllocs()
			for b.Loop() {
				gc.lastActive.Store(bc.cfg.activityNow())
			}
		})
	}
}
