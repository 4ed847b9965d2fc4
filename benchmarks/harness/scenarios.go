package harness

import (
	"fmt"
	"time"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// threadSweep: scenario 1.
func threadSweep(p Profile) Scenario {
	n := pick[uint64](p, 2_000, 50_000, 500_000)
	threads := pick(p, []int{1, 2}, []int{1, 2, 4, 6, 8, 10}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	sc := Scenario{
		Name:   "threads",
		Source: sourceThreads,
		Title: fmt.Sprintf("1. Thread sweep: %s sets then %s gets over %s client threads",
			thousands(float64(n)), thousands(float64(n)), intList(threads)),
		Reproduces: fmt.Sprintf("the spcached post's `MemCachedThreadBench <runs> <start> <port> <threads>`: "+
			"%s sets, then %s gets of the same keys, split evenly over T client threads "+
			"(one connection each, blocking requests); ReqPerSecond for set and for get.",
			thousands(float64(n)), thousands(float64(n))),
		Notes: []string{
			"Keys are set once each, so every get must hit and every value is verified.",
			"Value size 32 bytes (the post does not state it; 32 B is the size of the project's performance goals).",
		},
		XLabel:     "client threads (connections)",
		PlotPhases: []string{"set", "get"},
		Columns: []Column{
			colPoint("threads"),
			colRate("set req/s", "set"), colRatio("set vs mc", "set"),
			colRate("get req/s", "get"), colRatio("get vs mc", "get"),
			colLat("get p99 µs", "get", func(l LatAgg) float64 { return l.P99Us }),
			colCPU("get"), colErrors("set", "get"),
		},
		LatencyPhase: "get",
	}
	for _, t := range threads {
		sc.Points = append(sc.Points, Point{
			Label: itoaLabel("", t), X: float64(t),
			Phases: []Phase{
				setPhase("set", true, t, 1, n, "ts:", []int{32}),
				getPhase("get", t, n, "ts:", []int{32}),
			},
		})
	}
	return sc
}

// valueSizes are the sizes of the Java client comparison (powers of ~2.08).
var valueSizes = []int{2, 4, 9, 19, 39, 81, 168, 350, 729, 1516, 3154, 6561, 13647, 28388, 59049}

// sizeSweep: scenario 2.
func sizeSweep(p Profile) Scenario {
	n := pick[uint64](p, 200, 2000, 2000)
	sizes := pick(p, []int{2, 729, 59049}, valueSizes, valueSizes)
	sc := Scenario{
		Name:   "sizes",
		Source: sourceSizes,
		Title: fmt.Sprintf("2. Value-size sweep: %s values stored then fetched at %d sizes, %s B to %s B",
			thousands(float64(n)), len(sizes), thousands(float64(sizes[0])), thousands(float64(sizes[len(sizes)-1]))),
		Reproduces: fmt.Sprintf("a Java client comparison: %s values written then read back at each size "+
			"(%v bytes) with 1 and 4 client threads; store ms, fetch ms, KB/s, fetches/s.",
			thousands(float64(n)), sizes),
		Notes: []string{
			"KB/s counts value bytes fetched per second of the fetch phase (KB = 1024 B).",
			"Each size uses its own key prefix and the server is flushed before the store phase.",
		},
		XLabel:     "value size (bytes)",
		LogX:       true,
		PlotPhases: []string{"store", "fetch"},
		Columns: []Column{
			{"threads", func(r *Row) string { return r.Group }},
			{"size B", func(r *Row) string { return thousands(r.X) }},
			{"store ms", func(r *Row) string { return fmt.Sprintf("%.1f", r.Phase("store").ElapsedMs.Median) }},
			{"fetch ms", func(r *Row) string { return fmt.Sprintf("%.1f", r.Phase("fetch").ElapsedMs.Median) }},
			{"fetch KB/s", func(r *Row) string { return thousands(r.Phase("fetch").ReadKBps.Median) }},
			colRate("fetches/s", "fetch"), colRatio("fetch vs mc", "fetch"),
			colErrors("store", "fetch"),
		},
		LatencyPhase: "fetch",
	}
	for _, threads := range []int{1, 4} {
		for _, size := range sizes {
			prefix := fmt.Sprintf("sz%d:", size)
			sc.Points = append(sc.Points, Point{
				Label: fmt.Sprintf("%dt/%dB", threads, size),
				Group: fmt.Sprintf("%d", threads),
				X:     float64(size),
				Phases: []Phase{
					setPhase("store", true, threads, 1, n, prefix, []int{size}),
					getPhase("fetch", threads, n, prefix, []int{size}),
				},
			})
		}
	}
	return sc
}

// singleConn: scenario 3.
func singleConn(p Profile) Scenario {
	n := pick[int64](p, 2_000, 100_000, 500_000)
	mk := func(keys uint64) Phase {
		c := baseLoad(1)
		c.Keys, c.Requests, c.Dist = keys, n, loadgen.Uniform
		c.SetRatio, c.GetRatio = 1, 1
		c.ValueSizes = []int{32}
		return Phase{Name: "mixed", Report: true, Flush: true, Load: c}
	}
	return Scenario{
		Name:   "single",
		Source: sourceSingle,
		Title:  fmt.Sprintf("3. Single connection: %s requests on one key, then over 100,000 keys", thousands(float64(n))),
		Reproduces: fmt.Sprintf("the lserver post: one client connection issuing blocking set/get pairs, "+
			"first on one key, then over 100,000 keys; requests/s, mean response time, server CPU%% and RSS. "+
			"%s requests per case.", thousands(float64(n))),
		Notes: []string{
			"set:get 1:1 with 32-byte values; 'many keys' draws keys uniformly, so early gets miss.",
			"Server CPU is the server's user+system time over the phase's wall time (100% = one core).",
		},
		XLabel:     "case",
		Bars:       true,
		PlotPhases: []string{"mixed"},
		Columns: []Column{
			colPoint("case"),
			colRate("req/s", "mixed"), colRatio("vs mc", "mixed"),
			colLat("mean µs", "mixed", func(l LatAgg) float64 { return l.MeanUs }),
			colLat("p99 µs", "mixed", func(l LatAgg) float64 { return l.P99Us }),
			colCPU("mixed"), colClientCPU("mixed"), colRSS("mixed"), colErrors("mixed"),
		},
		LatencyPhase: "mixed",
		Points: []Point{
			{Label: "one key", X: 1, Phases: []Phase{mk(1)}},
			{Label: "many keys", X: 2, Phases: []Phase{mk(100_000)}},
		},
	}
}

// manyThreads: scenario 4.
func manyThreads(p Profile) Scenario {
	conns := pick(p, []int{50, 100}, []int{50, 100, 200, 300, 400}, []int{50, 100, 200, 300, 400})
	d := pick(p, 300*time.Millisecond, 5*time.Second, 15*time.Second)
	const keys = 10_000
	sc := Scenario{
		Name:   "many",
		Source: sourceMany,
		Title:  fmt.Sprintf("4. Many client threads: %s connections, 8-byte values", intList(conns)),
		Reproduces: fmt.Sprintf("the 66,000 TPS post: 50, 100, 200, 300 and 400 client threads, "+
			"each a blocking connection, 8-byte values; transactions (requests) per second over %v per point.", d),
		Notes: []string{
			"set:get 1:1 over 10,000 keys preloaded before each point (the post's mix is not stated).",
		},
		XLabel:     "client threads (connections)",
		PlotPhases: []string{"mixed"},
		Columns: []Column{
			colPoint("threads"),
			colRate("TPS", "mixed"), colRatio("vs mc", "mixed"),
			colLat("p50 µs", "mixed", func(l LatAgg) float64 { return l.P50Us }),
			colLat("p99 µs", "mixed", func(l LatAgg) float64 { return l.P99Us }),
			colLat("p99.9 µs", "mixed", func(l LatAgg) float64 { return l.P999Us }),
			colCPU("mixed"), colErrors("mixed"),
		},
		LatencyPhase: "mixed",
	}
	for _, c := range conns {
		sc.Points = append(sc.Points, Point{
			Label: itoaLabel("", c), X: float64(c),
			Phases: []Phase{
				setPhase("load", false, 16, 16, keys, "key:", []int{8}),
				timedMix(c, keys, 1, 1, 8, d),
			},
		})
	}
	return sc
}

// FairnessTargets are scenario 5's targets: the machinery cost at -t 1
// (inline against pool with one worker) and every mode at -t 2.
func FairnessTargets() []Target {
	return []Target{
		TandemTarget("inline", 1, 0), TandemTarget("pool", 1, 1), MemcachedTarget(1),
		TandemTarget("pool", 2, 0),
		TandemTarget("inline", 2, 0), TandemTarget("goroutine", 2, 0), MemcachedTarget(2),
	}
}

// fairness: scenario 5.
func fairness(p Profile) Scenario {
	conns := pick(p, []int{1, 200}, []int{1, 50, 200, 1000}, []int{1, 50, 200, 1000})
	d := pick(p, 300*time.Millisecond, 5*time.Second, 15*time.Second)
	keys := pick[uint64](p, 5_000, 100_000, 100_000)
	sc := Scenario{
		Name:   "fairness",
		Source: sourceFairness,
		Title:  fmt.Sprintf("5. Fairness: the same code single- and multi-threaded, %s connections", intList(conns)),
		Reproduces: "the reply to the spcached post: compare like with like. `inline -t 1` against " +
			"`pool -t 1 --workers 1` isolates the cost of the half-sync/half-async machinery; every mode at `-t 2` " +
			fmt.Sprintf("with many connections (each bound to one event loop) against memcached `-t 2`. "+
				"Get-heavy set:get 1:10, 32-byte values over %s preloaded keys, %v per point.", thousands(float64(keys)), d),
		Notes: []string{
			"This is the workload of the performance goals: pool >= 1.0x and inline >= 1.1x memcached at 200 and 1,000 connections, p99 no worse.",
			"At 200 connections and more, a set-only phase follows the mixed one on the same server (same keys, 32-byte values, " +
				"same duration): the goals' set-only >= 1.0x. Its columns are `set-only req/s`, `sets vs mc` and `set p99 µs`.",
		},
		XLabel:     "connections",
		LogX:       true,
		Targets:    FairnessTargets(),
		PlotPhases: []string{"mixed", "sets"},
		Columns: []Column{
			colPoint("conns"),
			colRate("req/s", "mixed"), colRatio("vs mc", "mixed"),
			colLat("p50 µs", "mixed", func(l LatAgg) float64 { return l.P50Us }),
			colLat("p99 µs", "mixed", func(l LatAgg) float64 { return l.P99Us }),
			colLat("p99.9 µs", "mixed", func(l LatAgg) float64 { return l.P999Us }),
			colCPU("mixed"), colRSS("mixed"),
			colRate("set-only req/s", "sets"), colRatio("sets vs mc", "sets"),
			colLat("set p99 µs", "sets", func(l LatAgg) float64 { return l.P99Us }),
			colErrors("mixed", "sets"),
		},
		LatencyPhase: "mixed",
		LatencyPoint: "200",
	}
	for _, c := range conns {
		phases := []Phase{
			setPhase("load", false, 16, 16, keys, "key:", []int{32}),
			timedMix(c, keys, 1, 10, 32, d),
		}
		if c >= 200 {
			// The set-only goal: the same keys overwritten, no gets.
			sets := timedMix(c, keys, 1, 0, 32, d)
			sets.Name = "sets"
			phases = append(phases, sets)
		}
		sc.Points = append(sc.Points, Point{Label: itoaLabel("", c), X: float64(c), Phases: phases})
	}
	return sc
}

// HitRatioTargets are scenario 6's targets: tandem inline -t 1 and pool -t 2
// (the cache is the same in every mode; pool shows that scheduling does not
// change the hit ratio) against memcached -t 1, the baseline.
func HitRatioTargets() []Target {
	return []Target{TandemTarget("inline", 1, 0), TandemTarget("pool", 2, 0), MemcachedTarget(1)}
}

// hitRatioStats are the server stats recorded after scenario 6.
var hitRatioStats = []string{"curr_items", "bytes", "evictions", "limit_maxbytes"}

// hitRatio: scenario 6.
func hitRatio(p Profile) Scenario {
	keys, n := lookAsideSize(p)
	mem := pick(p, 2, 20, 20)
	return Scenario{
		Name:   "hitratio",
		Source: sourceHitRatio,
		Title: fmt.Sprintf("6. Hit ratio: Zipf(0.99) look-aside over %s keys at `-m %d`, the cache holding ~10%% of them",
			thousands(float64(keys)), mem),
		Reproduces: fmt.Sprintf("a cache in front of a database: each request gets a key and, on a miss, sets it "+
			"(look-aside). Keys Zipf(0.99) over %s keys, 100-byte values, every server at `-m %d` "+
			"(about 10%% of the key space fits); 16 connections x pipeline depth 8. "+
			"A warm-up of %s gets from a flushed cache, then %s measured gets with a fresh key stream. "+
			"Hit ratio of the measured phase, requests/s (gets and the sets on misses), server RSS, and "+
			"curr_items and bytes from `stats` after the run.",
			thousands(float64(keys)), mem, thousands(float64(n)), thousands(float64(n))),
		Notes: []string{
			"Equivalent command: `mcbench -workload lookaside -dist zipf -zipf-s 0.99 -keys " +
				fmt.Sprint(keys) + " -size 100 -c 16 -d 8 -n " + fmt.Sprint(n) + "`, twice, the second with `-key-seed 2`.",
			"The measured phase draws a different key stream from the warm-up's (`-key-seed 2`): replaying the same " +
				"stream would show an admission policy every rare key a second time and flatter it.",
			"`warm-up hit` is the hit ratio of the warm-up phase, which starts from an empty cache (cold).",
			"`hit vs mc` is the hit ratio minus memcached -t 1's, in absolute terms; `vs mc` compares requests/s with memcached -t 1 " +
				"(both at the same `-m`).",
			"`items` and `stats MB` are `curr_items` and `bytes` from the server's `stats` after the measured phase; " +
				"`RSS/item` is server RSS over curr_items (it includes the process's fixed overhead).",
		},
		XLabel:     "workload",
		Bars:       true,
		MemoryMB:   mem,
		Baseline:   MemcachedTarget(1).Name,
		Targets:    HitRatioTargets(),
		PlotPhases: []string{"measured"},
		HitPhases:  []string{"warmup", "measured"},
		Columns: []Column{
			colHit("hit ratio", "measured"), colHitDiff("hit vs mc", "measured"), colHit("warm-up hit", "warmup"),
			colRate("req/s", "measured"), colRatio("vs mc", "measured"),
			colLat("get p99 µs", "measured", func(l LatAgg) float64 { return l.P99Us }),
			colStat("items", "measured", "curr_items", 1), colStat("stats MB", "measured", "bytes", 1<<20),
			colRSS("measured"), colRSSPerItem("measured"), colErrors("warmup", "measured"),
		},
		LatencyPhase: "measured",
		Points: []Point{{
			Label: "zipf 0.99", X: 1,
			Phases: lookAsidePhases(keys, n),
		}},
	}
}

// lookAsideSize is the hit-ratio scenarios' key space and gets per phase.
func lookAsideSize(p Profile) (keys uint64, n int64) {
	return pick[uint64](p, 100_000, 1_000_000, 1_000_000), pick[int64](p, 200_000, 4_000_000, 4_000_000)
}

// lookAsidePhases are the hit-ratio scenarios' phases: a warm-up of n
// look-aside gets over keys Zipf(0.99) keys from a flushed cache, then n
// measured gets with a fresh key stream, stats read after it.
func lookAsidePhases(keys uint64, n int64) []Phase {
	mk := func(name string, keySeed uint64, flush bool) Phase {
		c := baseLoad(16)
		c.Depth = 8
		c.Workload, c.Dist, c.ZipfS = loadgen.LookAside, loadgen.Zipfian, 0.99
		c.Keys, c.Requests, c.KeySeed = keys, n, keySeed
		c.KeyPrefix, c.ValueSizes = "hr:", []int{100}
		ph := Phase{Name: name, Report: true, Flush: flush, Load: c}
		if !flush {
			ph.Stats = hitRatioStats
		}
		return ph
	}
	return []Phase{mk("warmup", 1, true), mk("measured", 2, false)}
}

// equalRSSTarget is scenario 10's tandem whose -m is searched.
const equalRSSTarget = "tandem-inline-t1-eqrss"

// HitRatioRSSTargets are scenario 10's targets: memcached -t 1 (the
// reference) and tandem inline -t 1 at the same -m, and tandem inline -t 1
// at the -m where its peak RSS equals memcached's.
func HitRatioRSSTargets() []Target {
	eq := TandemTarget("inline", 1, 0)
	eq.Name = equalRSSTarget
	return []Target{MemcachedTarget(1), TandemTarget("inline", 1, 0), eq}
}

// hitRatioRSS: scenario 10, the hit ratio at equal RAM (issue #18).
func hitRatioRSS(p Profile) Scenario {
	keys, n := lookAsideSize(p)
	mem := pick(p, 2, 16, 16)
	return Scenario{
		Name: "hitratio-rss",
		Title: fmt.Sprintf("10. Hit ratio at equal RSS: Zipf(0.99) look-aside over %s keys, memcached at `-m %d`",
			thousands(float64(keys)), mem),
		Source: "no outside post: issue #18's target, the hit-ratio scenario at equal RSS.",
		Reproduces: fmt.Sprintf("scenario 6's look-aside workload (%s keys, 100-byte values, %s warm-up gets, then %s "+
			"measured gets with a fresh key stream) on memcached -t 1 at `-m %d`, on tandem inline -t 1 at the same "+
			"`-m` (equal -m) and on tandem inline -t 1 at the `-m` where its peak RSS equals memcached's (equal RSS, "+
			"`%s`). Hit ratio and peak RSS per server.", thousands(float64(keys)), thousands(float64(n)),
			thousands(float64(n)), mem, equalRSSTarget),
		Notes: []string{
			fmt.Sprintf("The equal-RSS `-m` is searched before the repetitions (or given with --equal-rss-m): one run "+
				"of memcached at `-m %d` sets the budget, its peak RSS (VmHWM after the run); then the largest integer "+
				"`-m` whose run peaks within the budget, found by doubling or halving from %d and bisecting, each `-m` "+
				"run once on a fresh server. The search's runs are listed under \"Equal RSS\".", mem, mem),
			"`peak RSS MB` is VmHWM after the run, median (min-max) over repetitions; `peak vs mc` divides it by memcached's.",
			"`hit vs mc` is the hit ratio minus memcached's, in absolute terms.",
			"`anon+shmem MB` is the largest RssAnon+RssShmem sampled every 100 ms during the measured phase and at " +
				"its end (what the machine cannot reclaim; VmHWM also counts file-backed pages such as the binary's); " +
				"`anon+shmem vs mc` divides it by memcached's.",
		},
		XLabel:    "workload",
		Bars:      true,
		MemoryMB:  mem,
		Baseline:  MemcachedTarget(1).Name,
		Targets:   HitRatioRSSTargets(),
		EqualRSS:  &EqualRSS{Reference: MemcachedTarget(1).Name, Target: equalRSSTarget, StartMB: mem, MaxMB: 1024},
		HitPhases: []string{"warmup", "measured"},
		Columns: []Column{
			colMemory(mem),
			colHit("hit ratio", "measured"), colHitDiff("hit vs mc", "measured"), colHit("warm-up hit", "warmup"),
			colPeak("measured"),
			colVs("peak vs mc", "measured", func(a *PhaseAgg) float64 { return a.PeakRatio }),
			colUnreclaim("measured"),
			colVs("anon+shmem vs mc", "measured", func(a *PhaseAgg) float64 { return a.UnreclaimRatio }),
			colStat("items", "measured", "curr_items", 1), colStat("stats MB", "measured", "bytes", 1<<20),
			colRate("req/s", "measured"), colErrors("warmup", "measured"),
		},
		MetricPlots: []MetricPlot{
			{Name: "peak", Title: "hitratio-rss: server peak RSS", Axis: "MB (median over repetitions)", Phase: "measured",
				Value: func(a *PhaseAgg) float64 { return a.PeakMB.Median }},
		},
		Points: []Point{{Label: "zipf 0.99", X: 1, Phases: lookAsidePhases(keys, n)}},
	}
}

// MemoryTargets are scenario 7's targets: the three modes at -t 2 against
// memcached -t 2.
func MemoryTargets() []Target {
	return []Target{
		TandemTarget("pool", 2, 0), TandemTarget("inline", 2, 0), TandemTarget("goroutine", 2, 0), MemcachedTarget(2),
	}
}

// memoryStats are the server stats recorded after each phase of scenario 7.
var memoryStats = []string{"curr_items", "bytes"}

// memory: scenario 7.
func memory(p Profile) Scenario {
	n := pick[uint64](p, 50_000, 1_000_000, 1_000_000)
	d := pick(p, 300*time.Millisecond, 10*time.Second, 20*time.Second)
	const conns, size, prefix = 50, 100, "mem:"
	mix := func(name string, keys uint64, set, get int) Phase {
		c := baseLoad(conns)
		c.Keys, c.Requests, c.Duration = keys, 0, d
		c.SetRatio, c.GetRatio = set, get
		c.KeyPrefix, c.ValueSizes = prefix, []int{size}
		return Phase{Name: name, Report: true, Load: c, Stats: memoryStats}
	}
	load := setPhase("load", true, 16, 16, n, prefix, []int{size})
	load.Stats = memoryStats
	return Scenario{
		Name:   "memory",
		Source: sourceMemory,
		Title:  fmt.Sprintf("7. Memory: %s items of 100 bytes, and latency while the heap churns", thousands(float64(n))),
		Reproduces: fmt.Sprintf("the performance issue's memory goals: RSS per stored item with %s items of %d-byte values "+
			"at most 1.5x memcached's, and p99.9 no worse than 2x memcached's with them stored. "+
			"`load` sets %s keys once each (16 connections x depth 16); `steady` runs set:get 1:10 over them "+
			"(%d connections, %v; sets overwrite in place, so tandem allocates nothing); `churn` runs set:get 1:1 over "+
			"twice the keys for %v, so half the sets store new items: the heap grows and the Go collector runs.",
			thousands(float64(n)), size, thousands(float64(n)), conns, d, d),
		Notes: []string{
			"`RSS/item` is the server's RSS after the phase over its `curr_items`: it includes the idle process " +
				"(about 14 MB for tandem, 5 MB for memcached). `peak/item` uses the peak RSS (VmHWM) instead: what the " +
				"machine must have for that many items, GC headroom included.",
			"`vs mc` columns divide by memcached -t 2's value in the same phase (lower is better for memory and p99.9).",
			"Every server runs at the run's `-m` (1024 by default): everything fits, nothing is evicted.",
		},
		XLabel:     "phase",
		Bars:       true,
		Targets:    MemoryTargets(),
		PlotPhases: []string{"load", "steady", "churn"},
		Columns: []Column{
			colRate("load req/s", "load"), colRatio("load vs mc", "load"),
			colRSSPerItem("load"), colVs("RSS/item vs mc", "load", func(a *PhaseAgg) float64 { return a.RSSPerItemRatio }),
			colLat("steady p99 µs", "steady", func(l LatAgg) float64 { return l.P99Us }),
			colLat("steady p99.9 µs", "steady", func(l LatAgg) float64 { return l.P999Us }),
			colVs("p99.9 vs mc", "steady", func(a *PhaseAgg) float64 { return a.P999Ratio }),
			colRate("churn req/s", "churn"), colRatio("churn vs mc", "churn"),
			colLat("churn p99.9 µs", "churn", func(l LatAgg) float64 { return l.P999Us }),
			colVs("churn p99.9 vs mc", "churn", func(a *PhaseAgg) float64 { return a.P999Ratio }),
			colStat("items after churn", "churn", "curr_items", 1),
			colPeakPerItem("peak/item B", "churn"),
			colVs("RSS/item vs mc after churn", "churn", func(a *PhaseAgg) float64 { return a.RSSPerItemRatio }),
			colErrors("load", "steady", "churn"),
		},
		LatencyPhase: "churn",
		Points: []Point{{
			Label: "100-byte values", X: 1,
			Phases: []Phase{load, mix("steady", n, 1, 10), mix("churn", 2*n, 1, 1)},
		}},
	}
}
