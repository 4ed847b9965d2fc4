package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTargetArgs(t *testing.T) {
	lim := ServerLimits{MemoryMB: 64, MaxConns: 100}
	pool := TandemTarget("pool", 1, 1)
	if pool.Name != "tandem-pool-t1-w1" {
		t.Errorf("name %q", pool.Name)
	}
	got := strings.Join(pool.Args(1234, lim), " ")
	want := "-p 1234 -l 127.0.0.1 -t 1 -m 64 -c 100 --mode pool --workers 1"
	if got != want {
		t.Errorf("tandem args %q, want %q", got, want)
	}
	mc := MemcachedTarget(2).Args(1234, lim)
	if !slices.Contains(mc, "-U") || (os.Geteuid() == 0) != slices.Contains(mc, "-u") {
		t.Errorf("memcached args %q: want -U 0, and -u root only as root", mc)
	}
	small := TandemTarget("pool", 2, 0)
	small.MemoryMB = 20
	if got, want := strings.Join(small.Args(1234, lim), " "),
		"-p 1234 -l 127.0.0.1 -t 2 -m 20 -c 100 --mode pool"; got != want {
		t.Errorf("args %q, want %q", got, want)
	}
	if n := len(DefaultTargets()); n != 8 {
		t.Errorf("default matrix has %d targets, want 8", n)
	}
}

func TestReadProcSelf(t *testing.T) {
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if s.RSSKB <= 0 || s.HWMKB < s.RSSKB || s.CPUSeconds < 0 {
		t.Errorf("implausible sample %+v", s)
	}
	if _, err := ReadProc(-1); err == nil {
		t.Error("ReadProc(-1): want an error")
	}
}

func TestStartServerFailsCleanly(t *testing.T) {
	// A binary that exits at once must give an error, not a hang or a crash.
	_, err := StartServer(context.Background(), "/bin/false", MemcachedTarget(1), ServerLimits{64, 100}, "")
	if err == nil || !strings.Contains(err.Error(), "exited at start") {
		t.Errorf("err = %v, want 'exited at start'", err)
	}
	_, err = StartServer(context.Background(), "/nonexistent/tandem", TandemTarget("pool", 1, 0), ServerLimits{64, 100}, "")
	if err == nil {
		t.Error("missing binary: want an error")
	}
}

func TestBuildTandemWithoutSources(t *testing.T) {
	dir := t.TempDir()
	_, err := BuildTandem(context.Background(), dir, dir)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}

func TestFindRepo(t *testing.T) {
	wd, _ := os.Getwd()
	root, err := FindRepo(wd)
	if err != nil {
		t.Fatal(err)
	}
	// The server module's root, not the benchmarks module's.
	if _, err := os.Stat(filepath.Join(root, "cmd", "tandem")); err != nil {
		t.Errorf("root %s has no cmd/tandem", root)
	}
	for gomod, want := range map[string]string{
		"module github.com/tandemcache/tandem\n\ngo 1.26\n":       "github.com/tandemcache/tandem",
		"// c\nmodule github.com/tandemcache/tandem/benchmarks\n": "github.com/tandemcache/tandem/benchmarks",
		"module \"example.com/x\"\n":                              "example.com/x",
		"go 1.26\n":                                               "",
	} {
		if got := modulePath([]byte(gomod)); got != want {
			t.Errorf("modulePath(%q) = %q, want %q", gomod, got, want)
		}
	}
	if _, err := FindRepo(t.TempDir()); err == nil {
		t.Error("FindRepo outside the module: want an error")
	}
}

func TestScenarioDefinitions(t *testing.T) {
	for _, p := range []Profile{Quick, Default, Full} {
		for _, sc := range Scenarios(p) {
			if sc.Name == "" || len(sc.Points) == 0 || len(sc.Columns)+len(sc.Tables) == 0 || sc.Source == "" {
				t.Errorf("%s/%s: incomplete", p, sc.Name)
			}
			for _, pt := range sc.Points {
				for _, ph := range pt.Phases {
					if h := ph.Hostile; h != nil {
						if h.Clients < 1 || h.Duration <= 0 || h.ProbeEvery <= 0 || h.ProbeTimeout <= 0 {
							t.Errorf("%s/%s/%s: hostile %+v", p, sc.Name, pt.Label, h)
						}
						continue
					}
					if tl := ph.Trace; tl != nil {
						o := TraceOptions{Spec: tl.Spec, ValueSize: tl.ValueSize, Batch: tl.Batch, Warmup: tl.Warmup,
							MemoryMB: []int{pt.MemoryMB}}
						if err := o.Validate(); err != nil || !sc.ServerPerPoint || tl.ValueSize < 1 || tl.Batch < 1 {
							t.Errorf("%s/%s/%s: trace %+v at -m %d: %v", p, sc.Name, pt.Label, tl, pt.MemoryMB, err)
						}
						continue
					}
					if l := ph.Restart; l != nil {
						if l.Items < 1 || l.ValueSize < 1 || l.Conns < 1 || l.Depth < 1 || l.Dir == "" || !sc.ServerPerPoint ||
							pt.MemoryMB < 1 || len(pt.Phases) != 1 {
							t.Errorf("%s/%s/%s: restart %+v", p, sc.Name, pt.Label, l)
						}
						continue
					}
					if l := ph.RestartHit; l != nil {
						if l.Keys < 1 || l.Warmup < 1 || l.Requests < 1 || l.Window < 1 || l.Batch < 1 || l.Dir == "" ||
							!sc.ServerPerPoint || pt.MemoryMB < 1 || len(pt.Phases) != 1 {
							t.Errorf("%s/%s/%s: restart hit %+v", p, sc.Name, pt.Label, l)
						}
						continue
					}
					if l := ph.Memcslap; l != nil {
						if (l.Test != "get" && l.Test != "set") || l.Concurrency < 1 || l.Execute < 1 {
							t.Errorf("%s/%s/%s: memcslap %+v", p, sc.Name, pt.Label, l)
						}
						continue
					}
					if s := ph.SlowReader; s != nil {
						if s.Requests < 1 || s.Keys < 1 || s.ReadRate <= 0 || s.Stall <= 0 {
							t.Errorf("%s/%s/%s: slow reader %+v", p, sc.Name, pt.Label, s)
						}
						continue
					}
					c := ph.Load
					c.Addr = "127.0.0.1:1"
					if err := c.Validate(); err != nil {
						t.Errorf("%s/%s/%s/%s: %v", p, sc.Name, pt.Label, ph.Name, err)
					}
				}
			}
		}
	}
	if _, err := selectScenarios(Quick, []string{"nope"}); !errors.Is(err, ErrNoScenario) {
		t.Errorf("unknown scenario: err = %v", err)
	}
}

func TestScenarioMemoryLimit(t *testing.T) {
	o := Options{TargetFilter: []string{"memcached", "inline"}}
	o.fill()
	sc := hitRatio(Default)
	ts := o.targetsFor(&sc)
	if len(ts) != 2 {
		t.Fatalf("targets %+v, want inline-t1 and memcached-t1", ts)
	}
	for _, tg := range ts {
		if tg.MemoryMB != 20 || !strings.Contains(strings.Join(tg.Args(1, o.Limits), " "), "-m 20 ") {
			t.Errorf("%s: -m %d, args %q; want the scenario's -m 20", tg.Name, tg.MemoryMB, tg.Args(1, o.Limits))
		}
	}
	if rep := newReport(&sc, &o, Machine{}, nil, nil, time.Now()); rep.Limits.MemoryMB != 20 {
		t.Errorf("report limits %+v, want -m 20", rep.Limits)
	}
	own := Scenario{Targets: []Target{{Name: "x", MemoryMB: 7}}, MemoryMB: 20}
	if got := o.targetsFor(&own); len(got) != 0 {
		t.Errorf("filter ignored: %+v", got)
	}
	o.TargetFilter = nil
	if got := o.targetsFor(&own); got[0].MemoryMB != 7 {
		t.Errorf("a target's own -m was overridden: %+v", got)
	}
	plain := fairness(Default)
	for _, tg := range o.targetsFor(&plain) {
		if tg.MemoryMB != 0 {
			t.Errorf("fairness target %s got -m %d, want the run's", tg.Name, tg.MemoryMB)
		}
	}
}

func TestHitRatioScenario(t *testing.T) {
	for _, tc := range []struct {
		p     Profile
		keys  uint64
		n     int64
		memMB int
	}{{Quick, 100_000, 200_000, 2}, {Default, 1_000_000, 4_000_000, 20}} {
		sc := hitRatio(tc.p)
		if sc.MemoryMB != tc.memMB || sc.Baseline != "memcached-t1" {
			t.Errorf("%s: -m %d baseline %q", tc.p, sc.MemoryMB, sc.Baseline)
		}
		ph := sc.Points[0].Phases
		if len(ph) != 2 || !ph[0].Flush || ph[1].Flush || len(ph[1].Stats) == 0 {
			t.Fatalf("%s: phases %+v: want a flushed warm-up, then a measured phase with stats", tc.p, ph)
		}
		for _, x := range ph {
			c := x.Load
			if c.Workload != "lookaside" || c.Dist != "zipf" || c.ZipfS != 0.99 || c.Keys != tc.keys ||
				c.Requests != tc.n || c.Conns != 16 || c.Depth != 8 || c.ValueSizes[0] != 100 || !c.Verify {
				t.Errorf("%s/%s: %+v", tc.p, x.Name, c)
			}
		}
		if ph[0].Load.KeySeed == ph[1].Load.KeySeed || ph[0].Load.Seed != ph[1].Load.Seed {
			t.Errorf("%s: the measured phase must draw fresh keys over the same values", tc.p)
		}
	}
}

func TestTargetFilter(t *testing.T) {
	o := Options{TargetFilter: []string{"memcached", "pool-t2"}}
	o.fill()
	var names []string
	for _, tg := range o.targetsFor(&Scenario{}) {
		names = append(names, tg.Name)
	}
	want := []string{"tandem-pool-t2", "memcached-t1", "memcached-t2"}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("filtered targets %v, want %v", names, want)
	}
}
