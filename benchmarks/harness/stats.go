package harness

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
	"github.com/tandemcache/tandem/benchmarks/trace"
)

// Stat summarizes one metric over repetitions.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// NewStat summarizes vs (any order; not modified), rounded to 0.1.
func NewStat(vs []float64) Stat {
	if len(vs) == 0 {
		return Stat{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return Stat{Median: round1(median(s)), Min: round1(s[0]), Max: round1(s[len(s)-1]), N: len(s)}
}

// round1 rounds to one decimal: results are stored with the precision they
// have, which keeps the JSON files small.
func round1(v float64) float64 { return math.Round(v*10) / 10 }

// roundSummary rounds a latency summary to 0.1 µs.
func roundSummary(s loadgen.Summary) loadgen.Summary {
	s.MeanUs, s.P50Us, s.P90Us = round1(s.MeanUs), round1(s.P50Us), round1(s.P90Us)
	s.P99Us, s.P999Us, s.MaxUs = round1(s.P99Us), round1(s.P999Us), round1(s.MaxUs)
	return s
}

// median of sorted s: the middle value, or the mean of the two middle ones.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// SpreadPct is (max-min)/median in percent: how far apart the repetitions
// were. 0 with fewer than two repetitions.
func (s Stat) SpreadPct() float64 {
	if s.N < 2 || s.Median == 0 {
		return 0
	}
	return 100 * (s.Max - s.Min) / s.Median
}

// Measurement is one phase of one point on one target in one repetition.
type Measurement struct {
	Rep          int                        `json:"rep"`
	Target       string                     `json:"target"`
	Point        string                     `json:"point"`
	Phase        string                     `json:"phase"`
	ElapsedSec   float64                    `json:"elapsed_sec"`
	Requests     int64                      `json:"requests"`
	ReqPerSec    float64                    `json:"req_per_sec"`
	HitRatio     float64                    `json:"hit_ratio"`
	BytesRead    int64                      `json:"value_bytes_read"`
	BytesSent    int64                      `json:"value_bytes_written"`
	Errors       int64                      `json:"errors"`
	FirstError   string                     `json:"first_error,omitempty"`
	HitHardCap   bool                       `json:"hit_hard_cap,omitempty"`
	Latency      map[string]loadgen.Summary `json:"latency"`
	ServerCPUPct float64                    `json:"server_cpu_pct"` // 100 = one core busy
	ClientCPUPct float64                    `json:"client_cpu_pct"` // the harness process itself
	ServerRSSKB  int64                      `json:"server_rss_kb"`
	ServerHWMKB  int64                      `json:"server_peak_rss_kb"`
	// ServerUnreclaimKB is the largest RssAnon+RssShmem of the server
	// sampled every 100 ms during the phase and at its end: the memory the
	// machine cannot take back (file-backed pages, the binary's own, can
	// be dropped at will and are in VmHWM only).
	ServerUnreclaimKB int64 `json:"server_peak_anon_shmem_kb,omitempty"`
	// Stats holds the server's "stats" fields the phase asked for, read
	// after it.
	Stats map[string]float64 `json:"server_stats,omitempty"`
	// ServerVolCS and ServerInvolCS are the server's voluntary and
	// nonvoluntary context switches during the phase, all threads.
	ServerVolCS   int64 `json:"server_voluntary_cs"`
	ServerInvolCS int64 `json:"server_nonvoluntary_cs"`
	// Syscalls are the server's syscalls by name during a Strace phase
	// ("total" their sum); StraceError says why they are missing.
	Syscalls    map[string]int64 `json:"server_syscalls,omitempty"`
	StraceError string           `json:"strace_error,omitempty"`
	// Hostile and SlowReader are the results of those phases.
	Hostile    *HostileStats    `json:"hostile,omitempty"`
	SlowReader *SlowReaderStats `json:"slow_reader,omitempty"`
	// Trace holds a trace phase's counts.
	Trace *trace.Result `json:"trace,omitempty"`
	// Restart and RestartHit are the results of the restart phases.
	Restart    *RestartStats    `json:"restart,omitempty"`
	RestartHit *RestartHitStats `json:"restart_hit,omitempty"`
}

// statsString renders stats as "name=value ..." in name order.
func statsString(st map[string]float64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(st)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", k, strconv.FormatFloat(st[k], 'f', -1, 64))
	}
	return b.String()
}

// LatAgg holds per-operation latency medians over repetitions, in µs.
type LatAgg struct {
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
}

// PhaseAgg aggregates one phase of one point on one target.
type PhaseAgg struct {
	ReqPerSec    Stat              `json:"req_per_sec"`
	ElapsedMs    Stat              `json:"elapsed_ms"`
	ReadKBps     Stat              `json:"read_kb_per_sec"` // value bytes read per second / 1024
	HitRatio     float64           `json:"hit_ratio"`
	HitPct       Stat              `json:"hit_pct"` // hit ratio in percent, with its spread
	Latency      map[string]LatAgg `json:"latency"`
	ServerCPUPct Stat              `json:"server_cpu_pct"`
	ClientCPUPct Stat              `json:"client_cpu_pct"`
	ServerRSSMB  float64           `json:"server_rss_mb"`      // largest over repetitions
	ServerPeakMB float64           `json:"server_peak_rss_mb"` // VmHWM, largest over repetitions
	Errors       int64             `json:"errors"`             // sum over repetitions
	HitHardCap   bool              `json:"hit_hard_cap,omitempty"`
	// Ratio is ReqPerSec.Median over the baseline's (memcached at the same
	// -t); 0 when there is no baseline.
	Ratio    float64 `json:"ratio_vs_memcached,omitempty"`
	Baseline string  `json:"baseline,omitempty"`
	// HitDiff is HitRatio minus the baseline's, valid when Baseline is set.
	HitDiff float64 `json:"hit_ratio_minus_baseline,omitempty"`
	// RSSPerItem and PeakPerItem are ServerRSSMB and ServerPeakMB over the
	// median curr_items of the phase's stats, in bytes (0 without them);
	// the Ratio fields compare them, and the main operation's p99.9, with
	// the baseline's (0 when it has none).
	RSSPerItem      float64 `json:"rss_per_item_bytes,omitempty"`
	PeakPerItem     float64 `json:"peak_rss_per_item_bytes,omitempty"`
	RSSPerItemRatio float64 `json:"rss_per_item_vs_baseline,omitempty"`
	PeakRatio       float64 `json:"peak_rss_vs_baseline,omitempty"`
	P999Ratio       float64 `json:"p999_vs_baseline,omitempty"`
	// Stats are the medians of the server stats fields read after the
	// phase.
	Stats map[string]Stat `json:"server_stats,omitempty"`
	// PeakMB is the server's peak RSS (VmHWM, or the hostile phase's
	// sampled peak) over repetitions, with its spread.
	PeakMB Stat `json:"peak_rss_mb,omitzero"`
	// UnreclaimMB is the server's peak RssAnon+RssShmem (sampled) over
	// repetitions, and UnreclaimRatio its median over the baseline's.
	UnreclaimMB    Stat    `json:"peak_anon_shmem_mb,omitzero"`
	UnreclaimRatio float64 `json:"peak_anon_shmem_vs_baseline,omitempty"`
	// Costs per request: server CPU time, context switches, and (Strace
	// phases) syscalls by name, medians over repetitions.
	CPUUsPerReq    Stat               `json:"server_cpu_us_per_request,omitzero"`
	VolCSPerReq    Stat               `json:"voluntary_cs_per_request,omitzero"`
	InvolCSPerReq  Stat               `json:"nonvoluntary_cs_per_request,omitzero"`
	SyscallsPerReq map[string]float64 `json:"syscalls_per_request,omitempty"`
	StraceError    string             `json:"strace_error,omitempty"`
	Hostile        *HostileAgg        `json:"hostile,omitempty"`
	SlowReader     *SlowReaderAgg     `json:"slow_reader,omitempty"`
	Trace          *TraceAgg          `json:"trace,omitempty"`
	Restart        *RestartAgg        `json:"restart,omitempty"`
	RestartHit     *RestartHitAgg     `json:"restart_hit,omitempty"`
}

// HostileAgg folds the hostile phase over repetitions.
type HostileAgg struct {
	Connected   Stat  `json:"connected"`
	Closed      Stat  `json:"closed_by_server"`
	ProbeSent   int64 `json:"probe_sent"`   // sum over repetitions
	ProbeErrors int64 `json:"probe_errors"` // sum over repetitions
	Exited      int   `json:"server_exited"`
	Reps        int   `json:"repetitions"`
	// SettledP99Us: the probe p99 after the attack's first seconds
	// (HostileLoad.Settle), over the repetitions that had such probes.
	SettledP99Us Stat `json:"settled_p99_us"`
}

// SlowReaderAgg folds the slow-reader phase over repetitions: in how many
// of Reps the client got every reply, in order, was closed, or stalled.
type SlowReaderAgg struct {
	Requests int  `json:"requests"`
	Replies  Stat `json:"replies"`
	Complete int  `json:"complete"`
	InOrder  int  `json:"in_order"`
	Closed   int  `json:"closed_by_server"`
	Stalled  int  `json:"stalled"`
	ReadKBps Stat `json:"read_kb_per_sec"`
	Reps     int  `json:"repetitions"`
}

// MainLatency returns the latency of the phase's dominant operation: get if
// any gets ran, else set.
func (a *PhaseAgg) MainLatency() LatAgg {
	if l, ok := a.Latency["get"]; ok {
		return l
	}
	return a.Latency["set"]
}

// Row is one target at one point.
type Row struct {
	Target Target               `json:"target"`
	Point  string               `json:"point"`
	Group  string               `json:"group,omitempty"`
	X      float64              `json:"x"`
	Phases map[string]*PhaseAgg `json:"phases"`
}

// Phase returns the aggregate of phase name, or an empty one.
func (r *Row) Phase(name string) *PhaseAgg {
	if a, ok := r.Phases[name]; ok {
		return a
	}
	return &PhaseAgg{}
}

// aggregate folds the measurements of one target/point/phase.
func aggregate(ms []Measurement) *PhaseAgg {
	a := &PhaseAgg{Latency: map[string]LatAgg{}}
	var rps, el, kb, scpu, ccpu, hr []float64
	lat := map[string][]loadgen.Summary{}
	srvStats := map[string][]float64{}
	for _, m := range ms {
		for k, v := range m.Stats {
			srvStats[k] = append(srvStats[k], v)
		}
		rps = append(rps, m.ReqPerSec)
		el = append(el, m.ElapsedSec*1e3)
		if m.ElapsedSec > 0 {
			kb = append(kb, float64(m.BytesRead)/1024/m.ElapsedSec)
		}
		scpu = append(scpu, m.ServerCPUPct)
		ccpu = append(ccpu, m.ClientCPUPct)
		hr = append(hr, m.HitRatio)
		a.ServerRSSMB = max(a.ServerRSSMB, round1(float64(m.ServerRSSKB)/1024))
		a.ServerPeakMB = max(a.ServerPeakMB, round1(float64(m.ServerHWMKB)/1024))
		a.Errors += m.Errors
		a.HitHardCap = a.HitHardCap || m.HitHardCap
		for op, s := range m.Latency {
			lat[op] = append(lat[op], s)
		}
	}
	a.ReqPerSec, a.ElapsedMs, a.ReadKBps = NewStat(rps), NewStat(el), NewStat(kb)
	aggregateCosts(a, ms)
	aggregateTrace(a, ms)
	aggregateRestart(a, ms)
	a.ServerCPUPct, a.ClientCPUPct = NewStat(scpu), NewStat(ccpu)
	// NewStat rounds to 0.1: take the ratio's median before scaling it.
	slices.Sort(hr)
	a.HitRatio = math.Round(median(hr)*1e4) / 1e4
	for i := range hr {
		hr[i] *= 100
	}
	a.HitPct = NewStat(hr)
	for k, vs := range srvStats {
		if a.Stats == nil {
			a.Stats = map[string]Stat{}
		}
		a.Stats[k] = NewStat(vs)
	}
	if items := a.Stats["curr_items"].Median; items > 0 {
		a.RSSPerItem = math.Round(a.ServerRSSMB * (1 << 20) / items)
		a.PeakPerItem = math.Round(a.ServerPeakMB * (1 << 20) / items)
	}
	for op, ss := range lat {
		med := func(f func(loadgen.Summary) float64) float64 {
			vs := make([]float64, len(ss))
			for i, s := range ss {
				vs[i] = f(s)
			}
			return NewStat(vs).Median
		}
		a.Latency[op] = LatAgg{
			MeanUs: med(func(s loadgen.Summary) float64 { return s.MeanUs }),
			P50Us:  med(func(s loadgen.Summary) float64 { return s.P50Us }),
			P99Us:  med(func(s loadgen.Summary) float64 { return s.P99Us }),
			P999Us: med(func(s loadgen.Summary) float64 { return s.P999Us }),
			MaxUs:  med(func(s loadgen.Summary) float64 { return s.MaxUs }),
		}
	}
	return a
}

// Aggregate builds the rows of sc from raw measurements: one per target and
// point (in target, then point order), with ratios against the baseline
// when it was measured: sc.Baseline, or else the memcached target of equal
// -t.
func Aggregate(sc *Scenario, targets []Target, runs []Measurement) []*Row {
	type key struct{ target, point, phase string }
	by := map[key][]Measurement{}
	for _, m := range runs {
		k := key{m.Target, m.Point, m.Phase}
		by[k] = append(by[k], m)
	}
	var rows []*Row
	index := map[[2]string]*Row{}
	for _, t := range targets {
		for _, p := range sc.Points {
			r := &Row{Target: t, Point: p.Label, Group: p.Group, X: p.X, Phases: map[string]*PhaseAgg{}}
			for _, ph := range p.Phases {
				if ms := by[key{t.Name, p.Label, ph.Name}]; ph.Report && len(ms) > 0 {
					r.Phases[ph.Name] = aggregate(ms)
				}
			}
			if len(r.Phases) > 0 {
				rows = append(rows, r)
				index[[2]string{t.Name, p.Label}] = r
			}
		}
	}
	for _, r := range rows {
		base := sc.Baseline
		if base == "" {
			base = MemcachedTarget(r.Target.Threads).Name
		}
		b, ok := index[[2]string{base, r.Point}]
		if !ok {
			continue
		}
		for name, a := range r.Phases {
			ba, ok := b.Phases[name]
			if !ok {
				continue
			}
			if ba.ReqPerSec.Median > 0 {
				a.Ratio = a.ReqPerSec.Median / ba.ReqPerSec.Median
				a.Baseline = base
				a.HitDiff = math.Round((a.HitRatio-ba.HitRatio)*1e4) / 1e4
			}
			if ba.RSSPerItem > 0 {
				a.RSSPerItemRatio = a.RSSPerItem / ba.RSSPerItem
			}
			if a.Trace != nil && ba.Trace != nil {
				a.Trace.MeasuredHitDiff = math.Round((a.Trace.MeasuredHitPct.Median-ba.Trace.MeasuredHitPct.Median)*100) / 1e4
			}
			if ba.PeakMB.Median > 0 {
				a.PeakRatio = a.PeakMB.Median / ba.PeakMB.Median
			}
			if ba.UnreclaimMB.Median > 0 && a.UnreclaimMB.N > 0 {
				a.UnreclaimRatio = a.UnreclaimMB.Median / ba.UnreclaimMB.Median
			}
			if bl := ba.MainLatency().P999Us; bl > 0 {
				a.P999Ratio = a.MainLatency().P999Us / bl
			}
		}
	}
	return rows
}

// aggregateCosts folds peak RSS, the per-request costs and the robustness
// phases' results of ms into a.
func aggregateCosts(a *PhaseAgg, ms []Measurement) {
	var peak, unreclaim, cpu, vol, invol []float64
	calls := map[string][]float64{}
	var hostile []*HostileStats
	var slow []*SlowReaderStats
	for _, m := range ms {
		hwm := m.ServerHWMKB
		if m.Hostile != nil {
			hwm = max(hwm, m.Hostile.PeakRSSKB)
			hostile = append(hostile, m.Hostile)
		}
		if m.SlowReader != nil {
			slow = append(slow, m.SlowReader)
		}
		peak = append(peak, float64(hwm)/1024)
		if m.ServerUnreclaimKB > 0 {
			unreclaim = append(unreclaim, float64(m.ServerUnreclaimKB)/1024)
		}
		if m.StraceError != "" && a.StraceError == "" {
			a.StraceError = m.StraceError
		}
		if m.Requests <= 0 || m.Hostile != nil || m.SlowReader != nil {
			continue
		}
		n := float64(m.Requests)
		cpu = append(cpu, m.ServerCPUPct/100*m.ElapsedSec*1e6/n)
		vol = append(vol, float64(m.ServerVolCS)/n)
		invol = append(invol, float64(m.ServerInvolCS)/n)
		for name, c := range m.Syscalls {
			calls[name] = append(calls[name], float64(c)/n)
		}
	}
	a.PeakMB = NewStat(peak)
	if len(unreclaim) > 0 {
		a.UnreclaimMB = NewStat(unreclaim)
	}
	a.CPUUsPerReq, a.VolCSPerReq, a.InvolCSPerReq = newStat3(cpu), newStat3(vol), newStat3(invol)
	for name, vs := range calls {
		if a.SyscallsPerReq == nil {
			a.SyscallsPerReq = map[string]float64{}
		}
		a.SyscallsPerReq[name] = newStat3(vs).Median
	}
	if len(hostile) > 0 {
		h := &HostileAgg{Reps: len(hostile)}
		var conn, closed, settled []float64
		for _, s := range hostile {
			conn = append(conn, float64(s.Connected))
			closed = append(closed, float64(s.Closed))
			if s.SettledProbes > 0 {
				settled = append(settled, s.SettledP99Us)
			}
			h.ProbeSent += s.ProbeSent
			h.ProbeErrors += s.ProbeErrors
			if s.ServerExited {
				h.Exited++
			}
		}
		h.Connected, h.Closed, h.SettledP99Us = NewStat(conn), NewStat(closed), NewStat(settled)
		a.Hostile = h
	}
	if len(slow) > 0 {
		r := &SlowReaderAgg{Reps: len(slow), Requests: slow[0].Requests}
		var replies, kbps []float64
		for _, s := range slow {
			replies = append(replies, float64(s.Replies))
			kbps = append(kbps, s.ReadKBps)
			r.Complete += b2i(s.Complete)
			r.InOrder += b2i(s.InOrder)
			r.Closed += b2i(s.Closed)
			r.Stalled += b2i(s.Stalled)
		}
		r.Replies, r.ReadKBps = NewStat(replies), NewStat(kbps)
		a.SlowReader = r
	}
}

// newStat3 is NewStat rounded to 0.001 instead of 0.1: per-request counts
// (0.25 context switches, 0.004 futex calls) need the digits.
func newStat3(vs []float64) Stat {
	if len(vs) == 0 {
		return Stat{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	r := func(v float64) float64 { return math.Round(v*1000) / 1000 }
	return Stat{Median: r(median(s)), Min: r(s[0]), Max: r(s[len(s)-1]), N: len(s)}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
