package harness

import (
	"fmt"
	"time"
)

// RobustTargets are the targets of the robustness scenarios (issue #17):
// every mode at -t 2 against memcached -t 2.
func RobustTargets() []Target {
	return []Target{
		TandemTarget("pool", 2, 0), TandemTarget("inline", 2, 0), TandemTarget("goroutine", 2, 0), MemcachedTarget(2),
	}
}

const sourceRobust = "no outside post: issue #17 (clients that pipeline and never read take the gnet modes down), " +
	"which measured this by hand on main."

// hostile: scenario 8.
func hostile(p Profile) Scenario {
	clients := pick(p, []int{4, 40}, []int{4, 40, 400}, []int{4, 40, 400})
	d := pick(p, time.Second, 10*time.Second, 10*time.Second)
	const valueSize, rcvbuf = 4096, 64 << 10
	settle := min(4*time.Second, d/2)
	sc := Scenario{
		Name: "hostile",
		Title: fmt.Sprintf("8. Hostile clients: %s connections pipelining gets of a 4 KB value and never reading, %v",
			intList(clients), d),
		Source: sourceRobust,
		Reproduces: fmt.Sprintf("issue #17's attack: N connections (%s) send `get` of one %d-byte value over and over, "+
			"pipelined, and never read a byte, for %v; meanwhile one probe connection sends a plain `get` of a "+
			"32-byte value every 20 ms and times the reply (no good reply within 2 s is an error, and the next "+
			"probe reconnects). Every server at `-m 64 -c 4096`, a fresh server for every N. Reported per server: "+
			"peak RSS, the probe's p50/p99/max and errors, and how many attacking connections the server closed.",
			intList(clients), valueSize, d),
		Notes: []string{
			"Peak RSS is the larger of VmHWM after the phase and the largest VmRSS sampled every 100 ms (/proc/<pid>/status).",
			fmt.Sprintf("Each attacking socket has a %d KB receive buffer (SO_RCVBUF, set before connecting): "+
				"what the client does not read then piles up in the server, not in the client's kernel "+
				"(tcp_rmem autotunes up to 32 MB per socket here).", rcvbuf>>10),
			"`closed` counts attacking connections the server closed or reset during the phase (a write failed, " +
				"or the socket left ESTABLISHED, read with TCP_INFO), over those connected. memcached 1.6.18 closes none: it stops " +
				"reading a connection whose replies the client does not take.",
			"`probe errors` are failed probes over probes sent, summed over repetitions; the probe percentiles are over " +
				"answered probes only (`–` when none was answered). The probe's reply is verified.",
			fmt.Sprintf("`probe p99 after %v` is the p99 of the probes sent %v or later after the attack started (median over "+
				"repetitions): in the first seconds the kernel fills every attacking socket's send buffer until TCP memory "+
				"reaches `tcp_mem`'s maximum, and whichever server writes stalls now and then (memcached too); after that "+
				"the probe's latency is the server's scheduling.", settle, settle),
			"A server that stops answering does not hang the harness: every write has a 100 ms deadline, every probe 2 s, " +
				"and the server is stopped (SIGTERM, SIGKILL after 5 s) after each N.",
		},
		XLabel:         "attacking connections",
		Bars:           true,
		Targets:        RobustTargets(),
		MemoryMB:       64,
		MaxConns:       4096,
		ServerPerPoint: true,
		Columns: []Column{
			colPoint("clients"),
			colPeak("attack"),
			colLat("probe p50 µs", "attack", func(l LatAgg) float64 { return l.P50Us }),
			colLat("probe p99 µs", "attack", func(l LatAgg) float64 { return l.P99Us }),
			colLat("probe max µs", "attack", func(l LatAgg) float64 { return l.MaxUs }),
			{fmt.Sprintf("probe p99 after %v µs", settle), func(r *Row) string {
				h := r.Phase("attack").Hostile
				if h == nil || h.SettledP99Us.N == 0 {
					return "–"
				}
				return thousands(h.SettledP99Us.Median)
			}},
			{"probe errors", func(r *Row) string {
				h := r.Phase("attack").Hostile
				if h == nil {
					return "–"
				}
				return fmt.Sprintf("%d/%d", h.ProbeErrors, h.ProbeSent)
			}},
			{"closed", func(r *Row) string {
				h := r.Phase("attack").Hostile
				if h == nil {
					return "–"
				}
				return fmt.Sprintf("%s/%s", thousands(h.Closed.Median), thousands(h.Connected.Median))
			}},
			{"server died", func(r *Row) string {
				h := r.Phase("attack").Hostile
				if h == nil {
					return "–"
				}
				return countOf(h.Exited, h.Reps)
			}},
		},
		MetricPlots: []MetricPlot{
			{Name: "peak", Title: "hostile: server peak RSS", Axis: "MB (median over repetitions)", Phase: "attack",
				Value: func(a *PhaseAgg) float64 { return a.PeakMB.Median }},
			{Name: "probe", Title: "hostile: probe p99 of answered probes (no bar: no probe answered)", Axis: "µs (median over repetitions)", Phase: "attack",
				Value: func(a *PhaseAgg) float64 { return a.MainLatency().P99Us }},
		},
	}
	for _, n := range clients {
		sc.Points = append(sc.Points, Point{
			Label: itoaLabel("", n), X: float64(n),
			Phases: []Phase{{Name: "attack", Report: true, Flush: true, Hostile: &HostileLoad{
				Clients: n, ValueSize: valueSize, Duration: d,
				ProbeEvery: 20 * time.Millisecond, ProbeTimeout: 2 * time.Second,
				RcvBuf: rcvbuf, Batch: 64, Settle: settle,
			}}},
		})
	}
	return sc
}

// slowReader: scenario 9.
func slowReader(p Profile) Scenario {
	n := pick(p, 5_000, 100_000, 100_000)
	const keys, size, rate, rcvbuf = 100, 32, 1 << 20, 64 << 10
	return Scenario{
		Name:   "slowreader",
		Title:  fmt.Sprintf("9. A slow reader: %s pipelined gets, replies read at 1 MB/s", thousands(float64(n))),
		Source: sourceRobust,
		Reproduces: fmt.Sprintf("issue #17's well-behaved slow client: one connection pipelines %s gets of %d-byte values "+
			"(%d keys in turn, so every reply's key says whether replies are in order) and consumes the replies at "+
			"~1 MB/s. Reported: whether it got every reply, in order and verified, and whether the server closed it.",
			thousands(float64(n)), size, keys),
		Notes: []string{
			fmt.Sprintf("The client's socket has a %d KB receive buffer (SO_RCVBUF): with autotuning (up to 32 MB here) "+
				"every reply would fit in the client's kernel and no server would notice a slow reader.", rcvbuf>>10),
			"The requests are written in 64 KB chunks as fast as the server takes them; a write or a reply that does not " +
				"move for 30 s ends the phase (`stalled`).",
			"`complete`, `in order`, `closed` and `stalled` count repetitions; `replies` is the median number of verified replies.",
		},
		XLabel:   "workload",
		Bars:     true,
		Targets:  RobustTargets(),
		MemoryMB: 64,
		MaxConns: 4096,
		Columns: []Column{
			{"replies", func(r *Row) string {
				s := r.Phase("read").SlowReader
				if s == nil {
					return "–"
				}
				return fmt.Sprintf("%s/%s", thousands(s.Replies.Median), thousands(float64(s.Requests)))
			}},
			slowCount("complete", func(s *SlowReaderAgg) int { return s.Complete }),
			slowCount("in order", func(s *SlowReaderAgg) int { return s.InOrder }),
			slowCount("closed", func(s *SlowReaderAgg) int { return s.Closed }),
			slowCount("stalled", func(s *SlowReaderAgg) int { return s.Stalled }),
			{"read KB/s", func(r *Row) string {
				if s := r.Phase("read").SlowReader; s != nil {
					return thousands(s.ReadKBps.Median)
				}
				return "–"
			}},
			{"elapsed s", func(r *Row) string { return fmt.Sprintf("%.1f", r.Phase("read").ElapsedMs.Median/1000) }},
			colPeak("read"),
		},
		MetricPlots: []MetricPlot{
			{Name: "peak", Title: "slowreader: server peak RSS", Axis: "MB (median over repetitions)", Phase: "read",
				Value: func(a *PhaseAgg) float64 { return a.PeakMB.Median }},
		},
		Points: []Point{{
			Label: "1 MB/s", X: 1,
			Phases: []Phase{{Name: "read", Report: true, Flush: true, SlowReader: &SlowReaderLoad{
				Requests: n, Keys: keys, ValueSize: size, ReadRate: rate, RcvBuf: rcvbuf, Stall: 30 * time.Second,
			}}},
		}},
	}
}

// slowCount shows in how many repetitions the slow reader saw f.
func slowCount(h string, f func(*SlowReaderAgg) int) Column {
	return Column{h, func(r *Row) string {
		s := r.Phase("read").SlowReader
		if s == nil {
			return "–"
		}
		return countOf(f(s), s.Reps)
	}}
}
