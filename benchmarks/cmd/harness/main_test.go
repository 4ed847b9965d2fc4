package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/benchmarks/harness"
)

// TestQuickAgainstMemcached runs the whole --quick profile against the real
// memcached (tandem targets filtered out so the test does not depend on the
// server build). It proves the harness works end to end; it asserts no
// timings.
func TestQuickAgainstMemcached(t *testing.T) {
	if _, err := exec.LookPath("memcached"); err != nil {
		t.Skip("memcached not installed")
	}
	if testing.Short() {
		t.Skip("starts servers; skipped with -short")
	}
	out := t.TempDir()
	var log bytes.Buffer
	code := run([]string{"--quick", "--targets", "memcached", "--no-install", "--out", out, "--strict", "--max-time", "5m"}, &log)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, log.String())
	}
	_, noMemcslap := exec.LookPath("memcslap")
	for _, sc := range harness.Scenarios(harness.Quick) {
		name := sc.Name
		if name == "memcslap" && noMemcslap != nil {
			continue // its targets are skipped: the client is missing
		}
		want := "memcached-t1,memcached-t2"
		if sc.Targets != nil {
			var mcs []string
			for _, tg := range sc.Targets {
				if tg.Kind == harness.KindMemcached {
					mcs = append(mcs, tg.Name)
				}
			}
			want = strings.Join(mcs, ",")
		}
		b, err := os.ReadFile(filepath.Join(out, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var r harness.Report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s.json: %v", name, err)
		}
		if got := strings.Join(r.Measured(), ","); got != want {
			t.Errorf("%s: measured %q, want %q", name, got, want)
		}
		if len(r.Rows) == 0 || len(r.Plots) == 0 {
			t.Errorf("%s: %d rows, %d plots", name, len(r.Rows), len(r.Plots))
		}
		for _, row := range r.Rows {
			for phase, a := range row.Phases {
				if a.Errors != 0 || a.ReqPerSec.N != 1 || a.ReqPerSec.Median <= 0 {
					t.Errorf("%s %s %s %s: %d errors, %+v", name, row.Target.Name, row.Point, phase, a.Errors, a.ReqPerSec)
				}
			}
		}
		switch name {
		case "hitratio":
			checkHitRatio(t, &r)
		case "memory":
			checkMemory(t, &r)
		case "hostile":
			checkHostile(t, &r)
		case "slowreader":
			checkSlowReader(t, &r)
		case "costs":
			checkCosts(t, &r)
		}
		csv, err := os.ReadFile(filepath.Join(out, name+"-runs.csv"))
		if err != nil || strings.Count(string(csv), "\n") < 1+len(r.Measured()) {
			t.Errorf("%s-runs.csv: %v\n%s", name, err, csv)
		}
		if _, err := os.Stat(filepath.Join(out, name+".md")); err != nil {
			t.Error(err)
		}
	}
}

func TestFlags(t *testing.T) {
	var log bytes.Buffer
	if code := run([]string{"--nope"}, &log); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
	if code := run([]string{"--quick", "--full"}, &log); code != 2 {
		t.Errorf("--quick --full: exit %d, want 2", code)
	}
	if code := run([]string{"--scenario", "nope", "--out", t.TempDir()}, &log); code != 1 {
		t.Errorf("unknown scenario: exit %d, want 1", code)
	}
	if code := run([]string{"--help"}, &log); code != 0 || !strings.Contains(log.String(), "-server-cpus") {
		t.Errorf("--help: exit %d\n%s", code, log.String())
	}
}

// checkHitRatio checks scenario 6's report: memcached at the scenario's -m,
// a plausible hit ratio below 1 (the cache holds ~10% of the keys), and the
// server's item count from stats.
func checkHitRatio(t *testing.T, r *harness.Report) {
	t.Helper()
	if r.Limits.MemoryMB != 2 || len(r.Targets) == 0 || !slices.Contains(r.Targets[0].Command, "2") {
		t.Errorf("hitratio: limits %+v, command %q: want -m 2", r.Limits, r.Targets[0].Command)
	}
	if len(r.Rows) != 1 {
		t.Fatalf("hitratio: %d rows, want 1", len(r.Rows))
	}
	m := r.Rows[0].Phase("measured")
	if m.HitRatio <= 0.3 || m.HitRatio >= 0.99 || m.HitPct.N != 1 {
		t.Errorf("hitratio: measured hit ratio %v (%+v)", m.HitRatio, m.HitPct)
	}
	if w := r.Rows[0].Phase("warmup"); w.HitRatio <= 0 || w.HitRatio > m.HitRatio+0.05 {
		t.Errorf("hitratio: warm-up hit ratio %v against measured %v", w.HitRatio, m.HitRatio)
	}
	items := m.Stats["curr_items"].Median
	if items < 1000 || items > 100_000 || m.Stats["bytes"].Median <= 0 || m.Stats["limit_maxbytes"].Median != 2<<20 {
		t.Errorf("hitratio: stats %+v", m.Stats)
	}
	if !slices.Contains(r.Plots, "hitratio-hits.png") {
		t.Errorf("hitratio: plots %v", r.Plots)
	}
}

// checkMemory checks scenario 7's report: every key of the load phase
// stored, RSS per item measured and compared with itself (memcached is its
// own baseline), and the churn phase adding items.
func checkMemory(t *testing.T, r *harness.Report) {
	t.Helper()
	if len(r.Rows) != 1 {
		t.Fatalf("memory: %d rows, want 1", len(r.Rows))
	}
	load, churn := r.Rows[0].Phase("load"), r.Rows[0].Phase("churn")
	if items := load.Stats["curr_items"].Median; items != 50_000 {
		t.Errorf("memory: %v items after load, want 50000", items)
	}
	if load.RSSPerItem < 100 || load.RSSPerItem > 10_000 || load.RSSPerItemRatio != 1 {
		t.Errorf("memory: RSS/item %v, vs baseline %v", load.RSSPerItem, load.RSSPerItemRatio)
	}
	if items := churn.Stats["curr_items"].Median; items <= 50_000 || items > 100_000 {
		t.Errorf("memory: %v items after churn", items)
	}
	if churn.PeakPerItem <= 0 || churn.P999Ratio != 1 {
		t.Errorf("memory: churn peak/item %v, p99.9 vs baseline %v", churn.PeakPerItem, churn.P999Ratio)
	}
}

// checkHostile checks scenario 8's report: every attacker connected to
// memcached (-c 4096), the probe answered, a peak RSS measured.
func checkHostile(t *testing.T, r *harness.Report) {
	t.Helper()
	if r.Limits.MemoryMB != 64 || r.Limits.MaxConns != 4096 {
		t.Errorf("hostile: limits %+v, want -m 64 -c 4096", r.Limits)
	}
	for _, row := range r.Rows {
		a := row.Phase("attack")
		h := a.Hostile
		if h == nil || h.Connected.Median != row.X || h.ProbeSent == 0 || a.PeakMB.Median <= 0 || h.Exited != 0 {
			t.Errorf("hostile %s at %s: %+v, peak %+v", row.Target.Name, row.Point, h, a.PeakMB)
		}
	}
}

// checkSlowReader checks scenario 9's report: memcached serves the slow
// reader completely, in order, without closing it.
func checkSlowReader(t *testing.T, r *harness.Report) {
	t.Helper()
	for _, row := range r.Rows {
		s := row.Phase("read").SlowReader
		if s == nil || s.Complete != 1 || s.InOrder != 1 || s.Closed != 0 || s.Replies.Median != float64(s.Requests) {
			t.Errorf("slowreader %s: %+v", row.Target.Name, s)
		}
	}
}

// checkCosts checks scenario 11's report: context switches per request
// measured, and syscalls when strace can attach here.
func checkCosts(t *testing.T, r *harness.Report) {
	t.Helper()
	for _, row := range r.Rows {
		run, tr := row.Phase("run"), row.Phase("strace")
		if run.VolCSPerReq.N != 1 || run.VolCSPerReq.Median+run.InvolCSPerReq.Median <= 0 {
			t.Errorf("costs %s %s: context switches %+v %+v", row.Target.Name, row.Point, run.VolCSPerReq, run.InvolCSPerReq)
		}
		if tr.StraceError == "" && tr.SyscallsPerReq["total"] <= 0 {
			t.Errorf("costs %s %s: syscalls %v", row.Target.Name, row.Point, tr.SyscallsPerReq)
		}
	}
}
