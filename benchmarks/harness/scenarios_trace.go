package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tandemcache/tandem/benchmarks/trace"
)

// traceName is the trace scenario's name.
const traceName = "trace"

// arcCitation is the condition of use of the ARC traces: cite the paper
// wherever results from them appear.
const arcCitation = `Nimrod Megiddo and Dharmendra S. Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", ` +
	`USENIX FAST 2003`

// TraceOptions configure the trace scenario. Zero fields take the
// profile's defaults (see DefaultTraceOptions).
type TraceOptions struct {
	// Spec is an ARC trace file (".zst" read compressed) or
	// "zipf:theta:keys:requests[:seed]" (trace.ParseSpec).
	Spec      string
	ValueSize int // bytes per value (default 1,000 for a file, 100 for zipf)
	// MinValueSize, when above 0 and below ValueSize, varies the values: MinValueSize to
	// ValueSize bytes, a fixed size per key (trace.Config.MinValueSize).
	MinValueSize int
	Batch        int     // keys per multi-get (default 100)
	Warmup       float64 // fraction of the accesses before the measured part, in [0, 1)
	MemoryMB     []int   // the -m of each point
}

// DefaultTraceOptions are the trace scenario's defaults at profile p: the
// issue's Zipf 0.99 case (1M keys, 4M requests, the first quarter a warm-up,
// 100-byte values at -m 16 and 256), scaled down for Quick.
func DefaultTraceOptions(p Profile) TraceOptions {
	return TraceOptions{
		Spec:      pick(p, "zipf:0.99:50000:200000", "zipf:0.99:1000000:4000000", "zipf:0.99:1000000:4000000"),
		ValueSize: 100,
		Batch:     100,
		Warmup:    0.25,
		MemoryMB:  pick(p, []int{2, 4}, []int{16, 256}, []int{16, 32, 64, 128, 256}),
	}
}

// fill completes o with p's defaults; a file's defaults are 1,000-byte
// values (the OLTP trace's) at -m 16, 32, 64 and 128.
func (o TraceOptions) fill(p Profile) TraceOptions {
	d := DefaultTraceOptions(p)
	if o.Spec == "" {
		o.Spec = d.Spec
	}
	file := !strings.HasPrefix(o.Spec, "zipf:")
	if o.ValueSize <= 0 {
		o.ValueSize = d.ValueSize
		if file {
			o.ValueSize = 1000
		}
	}
	if o.Batch <= 0 {
		o.Batch = d.Batch
	}
	if len(o.MemoryMB) == 0 {
		o.MemoryMB = d.MemoryMB
		if file {
			o.MemoryMB = pick(p, []int{8, 16}, []int{16, 32, 64, 128}, []int{16, 32, 64, 128})
		}
	}
	return o
}

// Validate reports options the scenario cannot run with.
func (o TraceOptions) Validate() error {
	spec, err := trace.ParseSpec(o.Spec)
	if err != nil {
		return err
	}
	if !spec.IsZipf() {
		if _, err := os.Stat(spec.Path); err != nil {
			return fmt.Errorf("harness: trace: %w", err)
		}
	}
	if !(o.Warmup >= 0 && o.Warmup < 1) {
		return fmt.Errorf("harness: trace warm-up fraction %v outside [0, 1)", o.Warmup)
	}
	for _, m := range o.MemoryMB {
		if m < 1 {
			return fmt.Errorf("harness: trace -m %d: want >= 1", m)
		}
	}
	if o.MinValueSize < 0 || o.MinValueSize >= o.ValueSize && o.MinValueSize > 0 {
		return fmt.Errorf("harness: trace minimum value size %d: want 0 or below the value size %d", o.MinValueSize, o.ValueSize)
	}
	if o.ValueSize > 1<<20 || o.Batch > 10_000 {
		return fmt.Errorf("harness: trace value size %d (max 1 MiB) or batch %d (max 10,000) too large", o.ValueSize, o.Batch)
	}
	return nil
}

// TraceLoad is a trace phase: the trace replayed look-aside on one
// connection (trace.Replay) instead of a loadgen run.
type TraceLoad struct {
	Spec         string  `json:"spec"`
	ValueSize    int     `json:"value_size"`
	MinValueSize int     `json:"min_value_size,omitempty"` // sizes vary per key from this to ValueSize
	Batch        int     `json:"batch"`
	Warmup       float64 `json:"warmup_fraction"`
}

// sizes names the value sizes of o: "1,000" or "0-4,500 (per key)".
func (o TraceOptions) sizes() string {
	if o.MinValueSize > 0 {
		return thousands(float64(o.MinValueSize)) + "-" + thousands(float64(o.ValueSize)) + " (fixed per key)"
	}
	return thousands(float64(o.ValueSize))
}

// TraceAgg aggregates the trace counts of one phase over repetitions.
type TraceAgg struct {
	Accesses         int64 `json:"accesses"`          // per replay
	MeasuredAccesses int64 `json:"measured_accesses"` // per replay, after the warm-up
	// MeasuredHitPct is the hit ratio after the warm-up, in percent;
	// MeasuredHitDiff the same minus the baseline's, as a ratio.
	MeasuredHitPct  Stat    `json:"measured_hit_pct"`
	MeasuredHitDiff float64 `json:"measured_hit_ratio_minus_baseline,omitempty"`
	SetsRefused     int64   `json:"sets_refused"` // sum over repetitions
	Sets            Stat    `json:"sets"`
	// RepeatPct is the median share of accesses, in percent, that missed
	// a key already missed earlier in the same batch (trace.Result).
	RepeatPct Stat `json:"repeat_miss_pct"`
}

// aggregateTrace folds the trace counts of ms into a.
func aggregateTrace(a *PhaseAgg, ms []Measurement) {
	var hit, sets, rep []float64
	for _, m := range ms {
		if m.Trace == nil {
			continue
		}
		if a.Trace == nil {
			a.Trace = &TraceAgg{Accesses: m.Trace.Accesses, MeasuredAccesses: m.Trace.MeasuredAccesses}
		}
		hit = append(hit, 100*m.Trace.MeasuredHitRatio())
		sets = append(sets, float64(m.Trace.Sets))
		if m.Trace.Accesses > 0 {
			rep = append(rep, 100*float64(m.Trace.RepeatMisses)/float64(m.Trace.Accesses))
		}
		a.Trace.SetsRefused += m.Trace.SetsRefused
	}
	if a.Trace != nil {
		a.Trace.MeasuredHitPct, a.Trace.Sets, a.Trace.RepeatPct = newStat3(hit), NewStat(sets), newStat3(rep)
	}
}

// traceStats are the server stats recorded after a replay.
var traceStats = []string{"curr_items", "bytes", "evictions", "limit_maxbytes", "get_hits", "get_misses"}

// TraceTargets are the trace scenario's targets: tandem pool and inline at
// -t 2 (the cache is the same in every mode) and memcached -t 2, as in issue
// #24's table.
func TraceTargets() []Target {
	return []Target{TandemTarget("pool", 2, 0), TandemTarget("inline", 2, 0), MemcachedTarget(2)}
}

// traceScenario: scenario 12, hit ratio against peak RSS on a trace (issue
// #24). The options must be valid (Validate); the profile fills what they
// leave out.
func traceScenario(p Profile, o TraceOptions) Scenario {
	o = o.fill(p)
	spec, _ := trace.ParseSpec(o.Spec)
	var what, citeNote string
	if spec.IsZipf() {
		what = fmt.Sprintf("a synthetic Zipf(%g) stream of %s requests over %s keys (seed %d)",
			spec.Theta, thousands(float64(spec.Requests)), thousands(float64(spec.Keys)), spec.Seed)
	} else {
		what = fmt.Sprintf("the ARC-format trace `%s`", filepath.Base(spec.Path))
		citeNote = "The ARC traces (OLTP and others) were published with " + arcCitation +
			"; their condition of use is to cite the paper wherever results from them appear."
	}
	mems := make([]string, len(o.MemoryMB))
	for i, m := range o.MemoryMB {
		mems[i] = strconv.Itoa(m)
	}
	ph := Phase{Name: "replay", Report: true, Stats: traceStats,
		Trace: &TraceLoad{Spec: o.Spec, ValueSize: o.ValueSize, MinValueSize: o.MinValueSize, Batch: o.Batch, Warmup: o.Warmup}}
	sc := Scenario{
		Name: traceName,
		Title: fmt.Sprintf("12. Trace replay: hit ratio against peak RSS, %s, %s B values, `-m` %s",
			traceTitle(spec), o.sizes(), strings.Join(mems, ", ")),
		Source: "no outside post: issue #24 (cache more than memcached on the same RAM). " +
			"ARC traces: " + arcCitation + ".",
		Reproduces: fmt.Sprintf("a cache in front of a database, fed %s: look-aside on one connection, the "+
			"accesses in batches of %d, each batch one multi-get (`get k1 ... k%d`), then a `set` of each distinct "+
			"key the batch missed with a %s-byte value. In an ARC trace each line is `start_block count ignored "+
			"request_number` and each of the `count` 512-byte blocks from `start_block` on is one access, its block "+
			"number the key. Every target runs at each `-m` (%s) on a fresh server; hit ratio over the whole trace "+
			"and after a warm-up of the first %.0f%% of the accesses, the server's peak RSS (VmHWM) and its "+
			"`curr_items` after the replay.", what, o.Batch, o.Batch, o.sizes(),
			strings.Join(mems, ", "), 100*o.Warmup),
		Notes: []string{
			"`-m` is set per point (the `-m` column): the run-wide `-m` in the servers line below does not apply, " +
				"and the command in the targets table is the last point's.",
			"`hit ratio` counts every access of the trace (cold start included); `hit after warm-up` only the " +
				"accesses after the warm-up fraction. Both count what the server answered: a key asked twice in one " +
				"batch that misses counts two misses (and is set once). `repeat misses` is the share of accesses that " +
				"were such second misses: a client that ran each access after the previous one's set would hit " +
				"there, so `hit ratio` + `repeat misses` is the hit ratio of a one-request-at-a-time replay (nearly: " +
				"the order of sets differs).",
			"The sets of a batch travel in the same write as the next batch's get, so one batch costs one round " +
				"trip; replies are all read and counted (a set answered SERVER_ERROR or NOT_STORED is `sets refused`).",
			"`peak RSS MB` is VmHWM after the replay; `peak vs mc` divides it by memcached's at the same `-m`; " +
				"`anon+shmem MB` is the largest RssAnon+RssShmem sampled every 100 ms during the replay (the memory " +
				"the machine cannot reclaim: VmHWM also counts the binary's file-backed pages), and " +
				"`anon+shmem vs mc` divides it by memcached's; " +
				"`hit vs mc` is the hit ratio minus memcached's at the same `-m`. `items`, `stats MB` and " +
				"`evictions` are the server's `curr_items`, `bytes` and `evictions` after the replay; `peak/item B` " +
				"is peak RSS over `curr_items`.",
			"Hit ratio does not depend on concurrency: one connection replays the trace in order. The servers' " +
				"background work (memcached's LRU maintainer thread, the Go collector) still moves it by about " +
				"0.001 between repetitions.",
		},
		XLabel:         "-m (MB)",
		ServerPerPoint: true,
		Targets:        TraceTargets(),
		Columns: []Column{
			{"-m", func(r *Row) string { return thousands(r.X) }},
			colHit("hit ratio", "replay"), colHitDiff("hit vs mc", "replay"),
			{"hit after warm-up", func(r *Row) string {
				t := r.Phase("replay").Trace
				if t == nil {
					return "–"
				}
				return fmt.Sprintf("%.3f", t.MeasuredHitPct.Median/100)
			}},
			{"repeat misses", func(r *Row) string {
				if t := r.Phase("replay").Trace; t != nil {
					return fmt.Sprintf("%.3f", t.RepeatPct.Median/100)
				}
				return "–"
			}},
			colPeak("replay"),
			colVs("peak vs mc", "replay", func(a *PhaseAgg) float64 { return a.PeakRatio }),
			colUnreclaim("replay"),
			colVs("anon+shmem vs mc", "replay", func(a *PhaseAgg) float64 { return a.UnreclaimRatio }),
			colStat("items", "replay", "curr_items", 1), colStat("stats MB", "replay", "bytes", 1<<20),
			colPeakPerItem("peak/item B", "replay"), colStat("evictions", "replay", "evictions", 1),
			{"sets refused", func(r *Row) string {
				if t := r.Phase("replay").Trace; t != nil {
					return thousands(float64(t.SetsRefused))
				}
				return "–"
			}},
			colRate("req/s", "replay"), colErrors("replay"),
		},
		XYPlots: []XYPlot{
			{Name: "hit-rss", Title: fmt.Sprintf("%s, %s B values: hit ratio against server peak RSS",
				plotName(spec), o.sizes()),
				XAxis: "server peak RSS, MB (VmHWM)", YAxis: "hit ratio (whole trace)",
				X: func(r *Row) float64 { return r.Phase("replay").PeakMB.Median },
				Y: func(r *Row) float64 { return r.Phase("replay").HitPct.Median / 100 }},
			{Name: "hit-m", Title: fmt.Sprintf("%s, %s B values: hit ratio against -m",
				plotName(spec), o.sizes()),
				XAxis: "-m (MB)", YAxis: "hit ratio (whole trace)",
				X: func(r *Row) float64 { return r.X },
				Y: func(r *Row) float64 { return r.Phase("replay").HitPct.Median / 100 }},
		},
		ReproduceArgs: fmt.Sprintf("--trace %s --trace-value %d%s --trace-batch %d --trace-warmup %g --trace-m %s",
			o.Spec, o.ValueSize, map[bool]string{true: fmt.Sprintf(" --trace-value-min %d", o.MinValueSize)}[o.MinValueSize > 0],
			o.Batch, o.Warmup, strings.Join(mems, ",")),
	}
	if citeNote != "" {
		sc.Notes = append([]string{citeNote}, sc.Notes...)
	}
	for _, m := range o.MemoryMB {
		sc.Points = append(sc.Points, Point{Label: "-m " + strconv.Itoa(m), X: float64(m), MemoryMB: m, Phases: []Phase{ph}})
	}
	return sc
}

// traceTitle names a trace for a heading.
func traceTitle(s trace.Spec) string {
	if s.IsZipf() {
		return fmt.Sprintf("Zipf(%g) over %s keys, %s requests", s.Theta, thousands(float64(s.Keys)),
			thousands(float64(s.Requests)))
	}
	return fmt.Sprintf("ARC trace %s (Megiddo and Modha, FAST 2003)", strings.TrimSuffix(filepath.Base(s.Path), ".zst"))
}

// plotName names a trace in a plot title, with the ARC citation for a file.
func plotName(s trace.Spec) string {
	if s.IsZipf() {
		return fmt.Sprintf("Zipf(%g), %s keys", s.Theta, thousands(float64(s.Keys)))
	}
	return fmt.Sprintf("trace %s (ARC; Megiddo and Modha, FAST 2003)", strings.TrimSuffix(filepath.Base(s.Path), ".zst"))
}

// traceOptionsOf recovers the options a trace scenario's points were made
// with (for re-rendering a report).
func traceOptionsOf(points []Point) (TraceOptions, bool) {
	var o TraceOptions
	for _, p := range points {
		if len(p.Phases) == 0 || p.Phases[0].Trace == nil {
			return o, false
		}
		t := p.Phases[0].Trace
		o.Spec, o.ValueSize, o.MinValueSize, o.Batch, o.Warmup = t.Spec, t.ValueSize, t.MinValueSize, t.Batch, t.Warmup
		o.MemoryMB = append(o.MemoryMB, p.MemoryMB)
	}
	return o, len(points) > 0
}
