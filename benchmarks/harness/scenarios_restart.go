package harness

import (
	"fmt"
	"strings"
	"time"
)

// restartName is the restart scenario's name.
const restartName = "restart"

// Point groups of the restart scenario: one table each.
const (
	groupRestartTime = "time"
	groupRestartHit  = "hit"
)

// restartGap is the pause between a graceful stop and the next start (see
// RestartLoad.Gap).
const restartGap = 3 * time.Second

// RestartTargets are the restart scenario's targets: tandem pool -t 2 and
// memcached -t 2, as the issue asks.
func RestartTargets() []Target {
	return []Target{TandemTarget("pool", 2, 0), MemcachedTarget(2)}
}

// RestartAgg folds a restart-time phase over repetitions.
type RestartAgg struct {
	Reps int `json:"repetitions"`
	// Warm counts repetitions whose restart restored the items; Complete
	// those where curr_items after equals curr_items before and every
	// verifying get hit.
	Warm       int    `json:"warm"`
	Complete   int    `json:"complete"`
	ColdReason string `json:"cold_reason,omitempty"`
	Loaded     Stat   `json:"loaded"`
	LoadPerSec Stat   `json:"load_per_sec"`
	ItemsAfter Stat   `json:"items_after"`
	Evictions  int64  `json:"evictions"` // largest over repetitions
	// VerifyGets and VerifyHits are summed over repetitions.
	VerifyGets   int64 `json:"verify_gets"`
	VerifyHits   int64 `json:"verify_hits"`
	ColdStartMs  Stat  `json:"cold_start_ms"`
	StopMs       Stat  `json:"stop_ms"`
	SaveMs       Stat  `json:"save_ms"`
	RestartMs    Stat  `json:"restart_ms"`
	ListenMs     Stat  `json:"listen_ms"`
	RestoreMs    Stat  `json:"restore_ms"`
	LoadedPeakMB Stat  `json:"loaded_peak_rss_mb"`
	PeakMB       Stat  `json:"peak_rss_mb"`
	RSSMB        Stat  `json:"rss_mb"`
	AnonMB       Stat  `json:"rss_anon_mb"`
	ShmemMB      Stat  `json:"rss_shmem_mb"`
	FileMB       Stat  `json:"file_mb"`
	FileLenMB    Stat  `json:"file_length_mb"`
	MetaBytes    int64 `json:"meta_bytes"`
}

// RestartHitAgg folds a hit-ratio-after-restart phase over repetitions.
type RestartHitAgg struct {
	Mode       string      `json:"mode"`
	Reps       int         `json:"repetitions"`
	Warm       int         `json:"warm"`
	ColdReason string      `json:"cold_reason,omitempty"`
	WarmupPct  Stat        `json:"warmup_hit_pct"`
	HitPct     Stat        `json:"hit_pct"` // over the whole continuation
	ItemsAfter Stat        `json:"items_after"`
	RestartMs  Stat        `json:"restart_ms"`
	Windows    []WindowAgg `json:"windows"`
}

// WindowAgg is one window of the continuation over repetitions.
type WindowAgg struct {
	Accesses int64 `json:"accesses"`
	HitPct   Stat  `json:"hit_pct"`
	EndSec   Stat  `json:"end_sec"` // from the continuation's start
}

// aggregateRestart folds the restart results of ms into a.
func aggregateRestart(a *PhaseAgg, ms []Measurement) {
	var rs []*RestartStats
	var hs []Measurement
	for _, m := range ms {
		if m.Restart != nil {
			rs = append(rs, m.Restart)
		}
		if m.RestartHit != nil && m.Trace != nil {
			hs = append(hs, m)
		}
	}
	if len(rs) > 0 {
		a.Restart = foldRestart(rs)
	}
	if len(hs) > 0 {
		a.RestartHit = foldRestartHit(hs)
	}
}

func foldRestart(rs []*RestartStats) *RestartAgg {
	g := &RestartAgg{Reps: len(rs)}
	vals := map[string][]float64{}
	add := func(k string, v float64) { vals[k] = append(vals[k], v) }
	mb := func(kb int64) float64 { return float64(kb) / 1024 }
	for _, s := range rs {
		g.Warm += b2i(s.Warm)
		g.Complete += b2i(s.ItemsAfter == s.ItemsBefore && s.ItemsAfter == s.Loaded && s.VerifyHits == s.VerifyGets)
		if g.ColdReason == "" {
			g.ColdReason = s.ColdReason
		}
		g.Evictions = max(g.Evictions, s.Evictions)
		g.VerifyGets += s.VerifyGets
		g.VerifyHits += s.VerifyHits
		g.MetaBytes = max(g.MetaBytes, s.MetaBytes)
		add("loaded", float64(s.Loaded))
		add("load", s.LoadPerSec)
		add("after", float64(s.ItemsAfter))
		add("cold", s.ColdStartMs)
		add("stop", s.StopMs)
		add("save", s.SaveMs)
		add("restart", s.RestartMs)
		if s.ListenMs > 0 { // 0: the log line was not seen (memcached has none)
			add("listen", s.ListenMs)
		}
		if s.RestoreMs > 0 {
			add("restore", s.RestoreMs)
		}
		add("lpeak", mb(s.LoadedPeakKB))
		add("peak", mb(s.PeakKB))
		add("rss", mb(s.RSSKB))
		add("anon", mb(s.AnonKB))
		add("shmem", mb(s.ShmemKB))
		add("file", mb(s.FileKB))
		add("flen", float64(s.FileBytes)/(1<<20))
	}
	g.Loaded, g.LoadPerSec, g.ItemsAfter = NewStat(vals["loaded"]), NewStat(vals["load"]), NewStat(vals["after"])
	g.ColdStartMs, g.StopMs, g.SaveMs = NewStat(vals["cold"]), NewStat(vals["stop"]), NewStat(vals["save"])
	g.RestartMs, g.ListenMs, g.RestoreMs = NewStat(vals["restart"]), NewStat(vals["listen"]), NewStat(vals["restore"])
	g.LoadedPeakMB, g.PeakMB, g.RSSMB = NewStat(vals["lpeak"]), NewStat(vals["peak"]), NewStat(vals["rss"])
	g.AnonMB, g.ShmemMB = NewStat(vals["anon"]), NewStat(vals["shmem"])
	g.FileMB, g.FileLenMB = NewStat(vals["file"]), NewStat(vals["flen"])
	return g
}

func foldRestartHit(ms []Measurement) *RestartHitAgg {
	g := &RestartHitAgg{Mode: ms[0].RestartHit.Mode, Reps: len(ms)}
	var warm, hit, items, restart []float64
	var wins [][]float64
	var ends [][]float64
	for _, m := range ms {
		s := m.RestartHit
		g.Warm += b2i(s.Warm)
		if g.ColdReason == "" {
			g.ColdReason = s.ColdReason
		}
		warm = append(warm, 100*s.Warmup.HitRatio())
		hit = append(hit, 100*m.Trace.HitRatio())
		items = append(items, float64(s.ItemsAfter))
		restart = append(restart, s.RestartMs)
		for i, w := range m.Trace.Windows {
			if i == len(wins) {
				wins, ends = append(wins, nil), append(ends, nil)
				g.Windows = append(g.Windows, WindowAgg{Accesses: w.Accesses})
			}
			wins[i] = append(wins[i], 100*w.HitRatio())
			ends[i] = append(ends[i], w.End.Seconds())
		}
	}
	g.WarmupPct, g.HitPct, g.ItemsAfter, g.RestartMs = NewStat(warm), NewStat(hit), NewStat(items), NewStat(restart)
	for i := range g.Windows {
		g.Windows[i].HitPct, g.Windows[i].EndSec = NewStat(wins[i]), NewStat(ends[i])
	}
	return g
}

// RestartOptions size the restart scenario; DefaultRestartOptions gives
// the profile's.
type RestartOptions struct {
	Items      []int64 // items loaded at each restart-time point
	MemoryMB   []int   // the -m of each restart-time point
	MaxReps    []int   // repetitions of each restart-time point (0 = the profile's)
	VerifyGets int64
	Keys       uint64 // the hit-ratio points' Zipf key space
	HitMB      int    // their -m
	Warmup     int64  // accesses before the restart
	Requests   int64  // accesses after it
	Window     int64  // accesses per reported window
}

// DefaultRestartOptions: issue #28's 1M and 10M items of 100 B (-m 1024
// and 4096, so that neither server evicts), and the trace scenario's Zipf
// stream at -m 64 (4M accesses of warm-up, 24M after the restart, about a
// minute on the 2-core machine, in windows of 2M, about 5 s each).
func DefaultRestartOptions(p Profile) RestartOptions {
	if p == Quick {
		return RestartOptions{Items: []int64{20_000}, MemoryMB: []int{64}, MaxReps: []int{0}, VerifyGets: 2_000,
			Keys: 200_000, HitMB: 48, Warmup: 200_000, Requests: 200_000, Window: 20_000}
	}
	return RestartOptions{Items: []int64{1_000_000, 10_000_000}, MemoryMB: []int{1024, 4096}, MaxReps: []int{0, 2},
		VerifyGets: 200_000, Keys: 1_000_000, HitMB: 64, Warmup: 4_000_000, Requests: 24_000_000, Window: 2_000_000}
}

// restartScenario: scenario 13, warm restart (issue #28).
func restartScenario(p Profile) Scenario {
	o := DefaultRestartOptions(p)
	const valueSize, dir = 100, "/dev/shm"
	sc := Scenario{
		Name: restartName,
		Title: fmt.Sprintf("13. Warm restart: restart time and peak RSS with %s items of %d B; hit ratio after a "+
			"restart on Zipf(0.99) over %s keys", itemList(o.Items), valueSize, thousands(float64(o.Keys))),
		Source: "no outside post: issue #28 (warm restart, memcached's `-e`); memcached's own description of its " +
			"restartable cache (\"a few million items seems to restart in seconds\", pull request #342).",
		Reproduces: fmt.Sprintf("issue #28's benchmark. Every server runs with `-e FILE` on a fresh file under `%s` (tmpfs). "+
			"**Restart time**: load N items (%s, sequential keys, %d-byte values, 16 connections x depth 16), "+
			"read `curr_items`, stop gracefully with SIGUSR1 and time it (signal to exit), wait until %v after the "+
			"stop, start again with the same flags and time it (start to the first `version` answered, probed "+
			"every 5 ms; for tandem also to its `tandem listening` log line), read `curr_items` and check %s random "+
			"gets all hit and verify; peak RSS (VmHWM) and RSS of the restarted process; the file's size on tmpfs. "+
			"**Hit ratio after a restart**: the trace scenario's look-aside replay (one connection, batches of 100 "+
			"keys, a set of each miss) of Zipf(0.99) over %s keys, %d-byte values, `-m %d`: %s accesses of warm-up "+
			"(seed 1), then (a) no restart, (b) SIGUSR1 and a warm restart, or (c) SIGUSR1, FILE.meta deleted and "+
			"a cold start; then the same %s accesses (seed 2) for every case, counted in windows of %s.",
			dir, itemList(o.Items), valueSize, restartGap, thousands(float64(o.VerifyGets)),
			thousands(float64(o.Keys)), valueSize, o.HitMB, thousands(float64(o.Warmup)),
			thousands(float64(o.Requests)), thousands(float64(o.Window))),
		Notes: []string{
			"`-m` is per point: " + memList(o) + "; at 1M and 10M items both servers hold every item without " +
				"eviction (the `evictions` column).",
			fmt.Sprintf("memcached 1.6.18 starts cold (\"restart incompatible due to setting for [stop_time]\") when "+
				"started again within about 2 s of its stop, so every restart waits until %v after the stop, "+
				"tandem's too; the wait is not part of any time.", restartGap),
			"`restart ms` runs from exec to the first `version` answered (both servers restore before they listen); " +
				"`listening ms` to tandem's `tandem listening` log line, `restore ms` is the `took` of its " +
				"`warm restart` line and `save ms` the `took` of its `memory file saved` line. `cold start ms` is the " +
				"first start, on a fresh file.",
			"`peak RSS` is VmHWM of the restarted process after the restart and the verifying gets; `RSS anon` " +
				"and `RSS shmem` split its VmRSS into private memory and pages of the memory file; `loaded peak` " +
				"is VmHWM of the first process after the load. `file MB` is the memory file's allocated size on " +
				"tmpfs (du), which stays in RAM after the process exits.",
			"`items back` is `curr_items` after the restart over `curr_items` before the stop; `complete` counts " +
				"repetitions where every loaded item was back and every verifying get hit with the value set.",
			"Hit ratio rows: a hit-ratio window is the hits over the accesses of that window; `end s` is when " +
				"the last window ended, from the continuation's start. The hit ratio of one connection's replay " +
				"moves by about 0.001 between repetitions.",
		},
		XLabel:         "point",
		Bars:           true,
		Targets:        RestartTargets(),
		ServerPerPoint: true,
	}
	for i, n := range o.Items {
		sc.Points = append(sc.Points, Point{Label: itemLabel(n), Group: groupRestartTime, X: float64(n),
			MemoryMB: o.MemoryMB[i], MaxReps: o.MaxReps[i],
			Phases: []Phase{{Name: "restart", Report: true, Restart: &RestartLoad{
				Items: n, ValueSize: valueSize, Conns: 16, Depth: 16, VerifyGets: o.VerifyGets, Dir: dir, Gap: restartGap,
			}}}})
	}
	for i, mode := range []string{RestartNone, RestartWarm, RestartCold} {
		sc.Points = append(sc.Points, Point{Label: hitLabel(mode), Group: groupRestartHit, X: float64(i + 1),
			MemoryMB: o.HitMB, MaxReps: 1,
			Phases: []Phase{{Name: "hit", Report: true, RestartHit: &RestartHitLoad{
				Mode: mode, Theta: 0.99, Keys: o.Keys, Warmup: o.Warmup, Requests: o.Requests, Window: o.Window,
				Batch: 100, ValueSize: valueSize, Dir: dir, Gap: restartGap,
			}}}})
	}
	sc.Tables = []Table{
		{Group: groupRestartTime, Heading: "Restart time, stop time and peak RSS (medians over repetitions, with min-max)",
			Columns: restartTimeColumns()},
		{Group: groupRestartHit, Heading: fmt.Sprintf("Hit ratio after a restart, per window of %s accesses",
			thousands(float64(o.Window))), Columns: restartHitColumns(o)},
	}
	sc.CustomPlots = []CustomPlot{{Name: "hit", Draw: func(path string, rows []*Row) error {
		return windowLines(path, fmt.Sprintf("hit ratio after a restart: Zipf(0.99), %s keys, -m %d, windows of %s accesses",
			thousands(float64(o.Keys)), o.HitMB, thousands(float64(o.Window))), rows)
	}}}
	return sc
}

func itemLabel(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM items", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk items", n/1000)
	}
	return fmt.Sprintf("%d items", n)
}

func itemList(ns []int64) string {
	var s []string
	for _, n := range ns {
		s = append(s, strings.TrimSuffix(itemLabel(n), " items"))
	}
	return strings.Join(s, " and ")
}

func memList(o RestartOptions) string {
	var s []string
	for i, n := range o.Items {
		s = append(s, fmt.Sprintf("`-m %d` for %s", o.MemoryMB[i], itemLabel(n)))
	}
	return strings.Join(append(s, fmt.Sprintf("`-m %d` for the hit ratio", o.HitMB)), ", ")
}

func hitLabel(mode string) string {
	switch mode {
	case RestartWarm:
		return "(b) warm restart"
	case RestartCold:
		return "(c) cold start"
	}
	return "(a) no restart"
}

// restartCell renders f of a restart row's aggregate, "–" without one.
func restartCell(h string, f func(*RestartAgg) string) Column {
	return Column{h, func(r *Row) string {
		if a := r.Phase("restart").Restart; a != nil {
			return f(a)
		}
		return "–"
	}}
}

// msCell renders milliseconds with their range.
func msCell(s Stat) string {
	if s.N == 0 || s.Max == 0 {
		return "–"
	}
	if s.N == 1 || s.Min == s.Max {
		return thousands(s.Median)
	}
	return fmt.Sprintf("%s (%s-%s)", thousands(s.Median), thousands(s.Min), thousands(s.Max))
}

func restartTimeColumns() []Column {
	return []Column{
		colPoint("items"),
		restartCell("reps", func(a *RestartAgg) string { return fmt.Sprint(a.Reps) }),
		restartCell("restart ms", func(a *RestartAgg) string { return msCell(a.RestartMs) }),
		restartCell("listening ms", func(a *RestartAgg) string { return msCell(a.ListenMs) }),
		restartCell("restore ms", func(a *RestartAgg) string { return msCell(a.RestoreMs) }),
		restartCell("cold start ms", func(a *RestartAgg) string { return msCell(a.ColdStartMs) }),
		restartCell("stop ms", func(a *RestartAgg) string { return msCell(a.StopMs) }),
		restartCell("save ms", func(a *RestartAgg) string { return msCell(a.SaveMs) }),
		restartCell("items back", func(a *RestartAgg) string {
			return fmt.Sprintf("%s/%s", thousands(a.ItemsAfter.Median), thousands(a.Loaded.Median))
		}),
		restartCell("warm", func(a *RestartAgg) string { return countOf(a.Warm, a.Reps) }),
		restartCell("complete", func(a *RestartAgg) string { return countOf(a.Complete, a.Reps) }),
		restartCell("peak RSS MB", func(a *RestartAgg) string { return mb(a.PeakMB.Median) }),
		restartCell("RSS MB", func(a *RestartAgg) string { return mb(a.RSSMB.Median) }),
		restartCell("RSS anon MB", func(a *RestartAgg) string { return mb(a.AnonMB.Median) }),
		restartCell("RSS shmem MB", func(a *RestartAgg) string { return mb(a.ShmemMB.Median) }),
		restartCell("loaded peak MB", func(a *RestartAgg) string { return mb(a.LoadedPeakMB.Median) }),
		restartCell("file MB", func(a *RestartAgg) string {
			return fmt.Sprintf("%s (of %s)", mb(a.FileMB.Median), mb(a.FileLenMB.Median))
		}),
		restartCell("evictions", func(a *RestartAgg) string { return thousands(float64(a.Evictions)) }),
		restartCell("load/s", func(a *RestartAgg) string { return thousands(a.LoadPerSec.Median) }),
		colErrors("restart"),
	}
}

func restartHitColumns(o RestartOptions) []Column {
	hit := func(f func(*RestartHitAgg) string) func(*Row) string {
		return func(r *Row) string {
			if a := r.Phase("hit").RestartHit; a != nil {
				return f(a)
			}
			return "–"
		}
	}
	cols := []Column{
		colPoint("case"),
		{"warm-up hit", hit(func(a *RestartHitAgg) string { return fmt.Sprintf("%.3f", a.WarmupPct.Median/100) })},
		{"items after restart", hit(func(a *RestartHitAgg) string { return thousands(a.ItemsAfter.Median) })},
		{"restart ms", hit(func(a *RestartHitAgg) string { return msCell(a.RestartMs) })},
		{"hit, whole", hit(func(a *RestartHitAgg) string { return fmt.Sprintf("%.3f", a.HitPct.Median/100) })},
	}
	n := int((o.Requests + o.Window - 1) / o.Window)
	for i := range n {
		cols = append(cols, Column{fmt.Sprintf("w%d", i+1), hit(func(a *RestartHitAgg) string {
			if i >= len(a.Windows) {
				return "–"
			}
			return fmt.Sprintf("%.3f", a.Windows[i].HitPct.Median/100)
		})})
	}
	cols = append(cols,
		Column{"end s", hit(func(a *RestartHitAgg) string {
			if len(a.Windows) == 0 {
				return "–"
			}
			return fmt.Sprintf("%.1f", a.Windows[len(a.Windows)-1].EndSec.Median)
		})},
		colErrors("hit"))
	return cols
}
