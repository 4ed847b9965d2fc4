package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

func TestTraceOptions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.lis")
	if err := os.WriteFile(file, []byte("1 1 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		in    TraceOptions
		value int
		mems  []int
		bad   bool
	}{
		{name: "defaults are the issue's zipf case", in: TraceOptions{Warmup: 0.25}, value: 100, mems: []int{16, 256}},
		{name: "a file defaults to 1,000-byte values", in: TraceOptions{Spec: file}, value: 1000, mems: []int{16, 32, 64, 128}},
		{name: "given values kept", in: TraceOptions{Spec: file, ValueSize: 200, MemoryMB: []int{64}}, value: 200, mems: []int{64}},
		{name: "missing file", in: TraceOptions{Spec: filepath.Join(dir, "nope")}, bad: true},
		{name: "bad zipf", in: TraceOptions{Spec: "zipf:0.99"}, bad: true},
		{name: "warm-up 1", in: TraceOptions{Warmup: 1}, bad: true},
		{name: "negative warm-up", in: TraceOptions{Warmup: -0.1}, bad: true},
		{name: "-m 0", in: TraceOptions{MemoryMB: []int{0}}, bad: true},
		{name: "sizes varying per key", in: TraceOptions{Spec: file, ValueSize: 4000, MinValueSize: 10}, value: 4000, mems: []int{16, 32, 64, 128}},
		{name: "minimum size not below the size", in: TraceOptions{Spec: file, ValueSize: 4000, MinValueSize: 4000}, bad: true},
		{name: "negative minimum size", in: TraceOptions{Spec: file, MinValueSize: -1}, bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.in.fill(Default)
			err := o.Validate()
			if tc.bad {
				if err == nil {
					t.Errorf("%+v: no error", o)
				}
				return
			}
			if err != nil || o.ValueSize != tc.value || fmt.Sprint(o.MemoryMB) != fmt.Sprint(tc.mems) || o.Batch != 100 {
				t.Errorf("%+v, %v; want value %d at -m %v, batch 100", o, err, tc.value, tc.mems)
			}
			sc := traceScenario(Default, tc.in)
			if len(sc.Points) != len(tc.mems) || sc.Points[0].MemoryMB != tc.mems[0] {
				t.Errorf("points %+v", sc.Points)
			}
			back, ok := traceOptionsOf(sc.Points)
			if !ok || back.Spec != o.Spec || back.ValueSize != o.ValueSize || fmt.Sprint(back.MemoryMB) != fmt.Sprint(o.MemoryMB) {
				t.Errorf("options of the points %+v, want %+v", back, o)
			}
		})
	}
}

// writeTinyTrace writes a zstd-compressed ARC trace of about 8,000 accesses
// over 4,000 blocks, some requests several blocks long.
func writeTinyTrace(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	for i := range 4_000 {
		start := (i * 7919) % 4_000
		if i%3 == 0 {
			start = i % 50 // a hot set
		}
		fmt.Fprintf(&b, "%d %d 0 %d\n", start, 1+i%3, i)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tiny.lis.zst")
	if err := os.WriteFile(p, enc.EncodeAll(b.Bytes(), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTraceScenarioAgainstMemcached runs the trace scenario end to end on a
// tiny trace against the real memcached at two -m values: one report row
// per -m, server stats that agree with the replay's counts, the plots and
// the citation.
func TestTraceScenarioAgainstMemcached(t *testing.T) {
	bin, err := exec.LookPath("memcached")
	if err != nil {
		t.Skip("memcached not installed")
	}
	if testing.Short() {
		t.Skip("starts servers; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := t.TempDir()
	var log bytes.Buffer
	o := Options{
		Profile: Quick, Scenarios: []string{traceName}, TargetFilter: []string{"memcached"},
		MemcachedBin: bin, OutDir: out, Log: &log, PhaseCap: time.Minute,
		Trace: &TraceOptions{Spec: writeTinyTrace(t), ValueSize: 1000, Batch: 50, Warmup: 0.5, MemoryMB: []int{2, 8}},
	}
	reports, err := Run(ctx, o)
	if err != nil || len(reports) != 1 {
		t.Fatalf("Run: %d reports, %v\n%s", len(reports), err, log.String())
	}
	r := reports[0]
	if len(r.Rows) != 2 {
		t.Fatalf("%d rows, want one per -m\n%s", len(r.Rows), log.String())
	}
	var hits []float64
	for _, row := range r.Rows {
		a := row.Phase("replay")
		tr := a.Trace
		if tr == nil || a.Errors != 0 || a.PeakMB.Median <= 0 || tr.Accesses < 4_000 || tr.MeasuredAccesses != tr.Accesses-tr.Accesses/2 {
			t.Fatalf("%s: %+v, trace %+v", row.Point, a, tr)
		}
		// One fresh server per -m: its counters are the replay's alone.
		gh, gm := a.Stats["get_hits"].Median, a.Stats["get_misses"].Median
		if want := a.HitRatio; gh+gm != float64(tr.Accesses) || fmt.Sprintf("%.4f", gh/(gh+gm)) != fmt.Sprintf("%.4f", want) {
			t.Errorf("%s: memcached counted %v hits, %v misses; the replay %d accesses at hit ratio %v",
				row.Point, gh, gm, tr.Accesses, want)
		}
		if a.Stats["limit_maxbytes"].Median != row.X*(1<<20) {
			t.Errorf("%s: limit_maxbytes %v: the point's -m did not reach the server", row.Point, a.Stats["limit_maxbytes"].Median)
		}
		hits = append(hits, a.HitRatio)
	}
	if !(hits[0] < hits[1]) {
		t.Errorf("hit ratios %v: -m 2 should hit less than -m 8 on 4,000 blocks of 1 KB", hits)
	}
	md, err := os.ReadFile(filepath.Join(out, traceName+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Megiddo and Modha", "FAST 2003", "--trace-m 2,8", "trace-hit-rss.png", "| -m 8 |"} {
		if !strings.Contains(string(md), want) && !strings.Contains(string(md), strings.TrimPrefix(want, "| -m ")) {
			t.Errorf("%s.md lacks %q", traceName, want)
		}
	}
	for _, p := range []string{"trace-hit-rss.png", "trace-hit-m.png", "trace-runs.csv"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Error(err)
		}
	}
	// The report re-renders from its JSON with the same options.
	var back Report
	b, _ := os.ReadFile(filepath.Join(out, traceName+".json"))
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := Rerender(out, []string{traceName}, false); err != nil {
		t.Fatal(err)
	}
	md2, _ := os.ReadFile(filepath.Join(out, traceName+".md"))
	if !strings.Contains(string(md2), "--trace-m 2,8") || !strings.Contains(string(md2), "Megiddo") {
		t.Errorf("re-rendered report lost the trace options:\n%s", md2)
	}
}
