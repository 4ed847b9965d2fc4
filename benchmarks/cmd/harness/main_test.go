package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	code := run([]string{"--quick", "--targets", "memcached", "--no-install", "--out", out, "--strict", "--max-time", "50s"}, &log)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, log.String())
	}
	for _, name := range harness.ScenarioNames() {
		b, err := os.ReadFile(filepath.Join(out, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var r harness.Report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s.json: %v", name, err)
		}
		if got := strings.Join(r.Measured(), ","); got != "memcached-t1,memcached-t2" {
			t.Errorf("%s: measured %q", name, got)
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
		csv, err := os.ReadFile(filepath.Join(out, name+"-runs.csv"))
		if err != nil || strings.Count(string(csv), "\n") < 3 {
			t.Errorf("%s-runs.csv: %v\n%s", name, err, csv)
		}
		if _, err := os.Stat(filepath.Join(out, name+".md")); err != nil {
			t.Error(err)
		}
	}
}

func TestFlags(t *testing.T) {
	var log bytes.Buffer
	if code := run([]string{"--quick", "--full"}, &log); code != 2 {
		t.Errorf("--quick --full: exit %d, want 2", code)
	}
	if code := run([]string{"--scenario", "nope", "--out", t.TempDir()}, &log); code != 1 {
		t.Errorf("unknown scenario: exit %d, want 1", code)
	}
	if code := run([]string{"--help"}, &log); code != 2 || !strings.Contains(log.String(), "-server-cpus") {
		t.Errorf("--help: exit %d\n%s", code, log.String())
	}
}
