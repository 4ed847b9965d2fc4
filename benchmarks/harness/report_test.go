package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/benchmarks/trace"
)

// TestReportWrite renders every scenario's report and plots from synthetic
// measurements, without starting any server.
func TestReportWrite(t *testing.T) {
	dir := t.TempDir()
	o := &Options{Profile: Quick}
	o.fill()
	for _, sc := range Scenarios(Quick) {
		targets := []TargetStatus{
			{Target: MemcachedTarget(1), Measured: true, Version: "1.6.18", Command: []string{"memcached", "-t", "1"}},
			{Target: TandemTarget("pool", 1, 0), Measured: true},
			{Target: TandemTarget("inline", 1, 0), Skipped: "harness: server unavailable: build failed"},
			{Target: TandemTarget("goroutine", 1, 0), Skipped: "harness: server unavailable: build failed"},
		}
		var runs []Measurement
		for rep := range 2 {
			for _, tg := range targets[:2] {
				for i, p := range sc.Points {
					for _, ph := range p.Phases {
						m := meas(tg.Name, p.Label, ph.Name, float64(1000*(i+1)+100*rep), 50)
						m.Rep, m.Requests, m.ServerHWMKB = rep, 1000, 20<<10
						m.ServerVolCS, m.ServerInvolCS, m.ServerCPUPct = 2000, 100, 50
						if ph.Strace {
							m.Syscalls = map[string]int64{"read": 1000, "write": 1000, "futex": 10, "total": 2100}
						}
						if h := ph.Hostile; h != nil {
							m.Hostile = &HostileStats{Clients: h.Clients, Connected: h.Clients, ProbeSent: 500, PeakRSSKB: 30 << 10}
						}
						if s := ph.SlowReader; s != nil {
							m.SlowReader = &SlowReaderStats{Requests: s.Requests, Replies: s.Requests, InOrder: true, Complete: true}
						}
						if l := ph.Restart; l != nil {
							m.Restart = &RestartStats{Loaded: l.Items, ItemsBefore: l.Items, ItemsAfter: l.Items, Warm: true,
								RestartMs: 1234.5, StopMs: 500, PeakKB: 40 << 10, VerifyGets: 10, VerifyHits: 10}
						}
						if l := ph.RestartHit; l != nil {
							m.RestartHit = &RestartHitStats{Mode: l.Mode, Warm: l.Mode == RestartWarm}
							m.Trace = &trace.Result{Accesses: 200, Hits: 150, Windows: []trace.Window{
								{Accesses: 100, Hits: 60, End: time.Second}, {Accesses: 100, Hits: 90, End: 2 * time.Second}}}
						}
						runs = append(runs, m)
					}
				}
			}
		}
		rep := newReport(&sc, o, Machine{NumCPU: 2, Date: "now"}, targets, runs, time.Now())
		if err := rep.Write(dir, &sc, true); err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		md, err := os.ReadFile(filepath.Join(dir, sc.Name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		wants := []string{"| memcached-t1 |", "| tandem-pool-t1 |", "**not measured** (reason 1)",
			"build failed", "same 2 CPUs", "go run -C benchmarks ./cmd/harness --scenario " + sc.Name}
		switch sc.Name {
		case "hostile":
			wants = append(wants, "| 30.0 (30.0-30.0) |", "| 0/1000 |", "| 0/4 |", "| 0/2 |")
		case "slowreader":
			wants = append(wants, "| 5,000/5,000 | 2/2 | 2/2 | 0/2 | 0/2 |")
		case "restart":
			wants = append(wants, "| 2 | 1,23", "| 500 |", "| 20,000/20,000 | 2/2 | 2/2 | 40.0 |",
				"| 0.750 | 0.600 | 0.900 |", "### Hit ratio after a restart")
		case "costs":
			// CPU: 50% of 1 s over 1,000 requests; 2,100 syscalls over 1,000.
			wants = append(wants, "| 500.00 | 2.00 | 0.10 |", "| 2.10 | 1.00 | 1.00 | 0 | 0.010 | 0.090 |")
		default:
			wants = append(wants, "1.00x")
		}
		for _, want := range wants {
			if !strings.Contains(string(md), want) {
				t.Errorf("%s.md lacks %q", sc.Name, want)
			}
		}
		if strings.Count(string(md), "build failed") != 1 {
			t.Errorf("%s.md repeats the shared skip reason", sc.Name)
		}
		if len(rep.Plots) == 0 {
			t.Errorf("%s: no plots", sc.Name)
		}
		for _, p := range rep.Plots {
			if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Size() == 0 {
				t.Errorf("plot %s: %v", p, err)
			}
		}
		var back Report
		b, _ := os.ReadFile(filepath.Join(dir, sc.Name+".json"))
		if err := json.Unmarshal(b, &back); err != nil || len(back.Rows) != len(rep.Rows) {
			t.Errorf("%s.json does not round-trip: %v", sc.Name, err)
		}
	}
}

func TestRerender(t *testing.T) {
	dir := t.TempDir()
	o := &Options{Profile: Quick}
	o.fill()
	sc := singleConn(Quick)
	targets := []TargetStatus{{Target: MemcachedTarget(1), Measured: true}}
	runs := []Measurement{meas("memcached-t1", "one key", "mixed", 1234, 10)}
	if err := newReport(&sc, o, Machine{}, targets, runs, time.Now()).Write(dir, &sc, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "single.md")); err != nil {
		t.Fatal(err)
	}
	if err := Rerender(dir, nil, false); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "single.md"))
	if err != nil || !strings.Contains(string(md), "| memcached-t1 | one key | 1,234 |") {
		t.Errorf("re-rendered single.md: %v\n%s", err, md)
	}
	if err := Rerender(dir, []string{"threads"}, false); err == nil {
		t.Error("re-rendering a scenario without JSON: want an error")
	}
}
