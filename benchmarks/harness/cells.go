package harness

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Table cell formatting shared by the scenarios.

// thousands formats v rounded to an integer with comma separators.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// rate formats a throughput median with its spread, e.g. "45,120 ±3%".
func rate(s Stat) string {
	if s.N == 0 {
		return "–"
	}
	if s.N < 2 {
		return thousands(s.Median)
	}
	return fmt.Sprintf("%s ±%.0f%%", thousands(s.Median), s.SpreadPct()/2)
}

// ratio formats a ratio against the baseline, or "–" when there is none (0).
func ratio(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", v)
}

// us formats microseconds.
func us(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return thousands(v)
}

// pct formats a CPU percentage median.
func pct(s Stat) string {
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", s.Median)
}

// Column constructors used by several scenarios.

func colPoint(h string) Column {
	return Column{h, func(r *Row) string { return r.Point }}
}

func colRate(h, phase string) Column {
	return Column{h, func(r *Row) string { return rate(r.Phase(phase).ReqPerSec) }}
}

func colRatio(h, phase string) Column {
	return colVs(h, phase, func(a *PhaseAgg) float64 { return a.Ratio })
}

func colLat(h, phase string, f func(LatAgg) float64) Column {
	return Column{h, func(r *Row) string { return us(f(r.Phase(phase).MainLatency())) }}
}

func colCPU(phase string) Column {
	return Column{"server CPU", func(r *Row) string { return pct(r.Phase(phase).ServerCPUPct) }}
}

func colClientCPU(phase string) Column {
	return Column{"client CPU", func(r *Row) string { return pct(r.Phase(phase).ClientCPUPct) }}
}

func colRSS(phase string) Column {
	return Column{"server RSS MB", func(r *Row) string { return fmt.Sprintf("%.1f", r.Phase(phase).ServerRSSMB) }}
}

func colErrors(phases ...string) Column {
	return Column{"errors", func(r *Row) string {
		var n int64
		for _, p := range phases {
			n += r.Phase(p).Errors
		}
		return strconv.FormatInt(n, 10)
	}}
}

// colHit shows the median hit ratio with ± half its range over repetitions.
func colHit(h, phase string) Column {
	return Column{h, func(r *Row) string {
		s := r.Phase(phase).HitPct
		if s.N == 0 {
			return "–"
		}
		if s.N < 2 {
			return fmt.Sprintf("%.3f", s.Median/100)
		}
		return fmt.Sprintf("%.3f ±%.3f", s.Median/100, (s.Max-s.Min)/200)
	}}
}

// colHitDiff shows the hit ratio minus the baseline's.
func colHitDiff(h, phase string) Column {
	return Column{h, func(r *Row) string {
		a := r.Phase(phase)
		if a.Baseline == "" {
			return "–"
		}
		return fmt.Sprintf("%+.3f", a.HitDiff)
	}}
}

// colStat shows the median of a server stats field divided by unit.
func colStat(h, phase, field string, unit float64) Column {
	return Column{h, func(r *Row) string {
		s, ok := r.Phase(phase).Stats[field]
		if !ok || s.N == 0 {
			return "–"
		}
		if unit == 1 {
			return thousands(s.Median)
		}
		return fmt.Sprintf("%.1f", s.Median/unit)
	}}
}

// colRSSPerItem shows server RSS over curr_items, in bytes.
func colRSSPerItem(phase string) Column {
	return Column{"RSS/item B", func(r *Row) string { return perItem(r.Phase(phase).RSSPerItem) }}
}

// colPeakPerItem shows the server's peak RSS (VmHWM) over curr_items.
func colPeakPerItem(h, phase string) Column {
	return Column{h, func(r *Row) string { return perItem(r.Phase(phase).PeakPerItem) }}
}

// colVs shows a ratio against the baseline picked by f, or "–".
func colVs(h, phase string, f func(*PhaseAgg) float64) Column {
	return Column{h, func(r *Row) string { return ratio(f(r.Phase(phase))) }}
}

func perItem(v float64) string {
	if v == 0 {
		return "–"
	}
	return thousands(v)
}

// intList names a list of counts for a heading: "1 and 2", "50, 100 and
// 200", or "1 to 10" for a run of three or more consecutive values.
func intList(vs []int) string {
	switch n := len(vs); {
	case n == 0:
		return ""
	case n == 1:
		return thousands(float64(vs[0]))
	case n >= 3 && vs[n-1]-vs[0] == n-1:
		return thousands(float64(vs[0])) + " to " + thousands(float64(vs[n-1]))
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = thousands(float64(v))
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// colMemory shows the target's -m (its own, or the run's).
func colMemory(runMB int) Column {
	return Column{"-m", func(r *Row) string {
		if r.Target.MemoryMB > 0 {
			return strconv.Itoa(r.Target.MemoryMB)
		}
		return strconv.Itoa(runMB)
	}}
}

// colPeak shows the median peak RSS with its spread.
func colPeak(phase string) Column {
	return Column{"peak RSS MB", func(r *Row) string {
		s := r.Phase(phase).PeakMB
		switch {
		case s.N == 0:
			return "–"
		case s.N < 2:
			return mb(s.Median)
		}
		return fmt.Sprintf("%s (%s-%s)", mb(s.Median), mb(s.Min), mb(s.Max))
	}}
}

// colUnreclaim shows the median peak RssAnon+RssShmem with its spread.
func colUnreclaim(phase string) Column {
	return Column{"anon+shmem MB", func(r *Row) string {
		s := r.Phase(phase).UnreclaimMB
		switch {
		case s.N == 0:
			return "–"
		case s.N < 2:
			return mb(s.Median)
		}
		return fmt.Sprintf("%s (%s-%s)", mb(s.Median), mb(s.Min), mb(s.Max))
	}}
}

// perReq formats a per-request count: 2 decimals, 3 below 0.1.
func perReq(s Stat) string {
	switch {
	case s.N == 0:
		return "–"
	case s.Median == 0:
		return "0"
	case math.Abs(s.Median) < 0.1:
		return fmt.Sprintf("%.3f", s.Median)
	}
	return fmt.Sprintf("%.2f", s.Median)
}

// colPerReq shows a per-request cost picked by f.
func colPerReq(h, phase string, f func(*PhaseAgg) Stat) Column {
	return Column{h, func(r *Row) string { return perReq(f(r.Phase(phase))) }}
}

// syscallGroups sums strace's syscall names into the columns of the costs
// table; what no group names is "other".
var syscallGroups = []struct {
	Header string
	Names  []string
}{
	{"read/req", []string{"read", "readv", "recvfrom", "recvmsg", "recvmmsg"}},
	{"write/req", []string{"write", "writev", "sendto", "sendmsg", "sendmmsg"}},
	{"epoll_wait/req", []string{"epoll_wait", "epoll_pwait", "epoll_pwait2"}},
	{"futex/req", []string{"futex"}},
}

// syscallCols are the costs table's syscall columns: total, the groups,
// and the rest.
func syscallCols(phase string) []Column {
	get := func(r *Row) (map[string]float64, bool) {
		m := r.Phase(phase).SyscallsPerReq
		return m, m != nil
	}
	cols := []Column{{"syscalls/req", func(r *Row) string {
		m, ok := get(r)
		if !ok {
			return "–"
		}
		return perReq(Stat{Median: m["total"], N: 1})
	}}}
	for _, g := range syscallGroups {
		cols = append(cols, Column{g.Header, func(r *Row) string {
			m, ok := get(r)
			if !ok {
				return "–"
			}
			var v float64
			for _, n := range g.Names {
				v += m[n]
			}
			return perReq(Stat{Median: v, N: 1})
		}})
	}
	return append(cols, Column{"other/req", func(r *Row) string {
		m, ok := get(r)
		if !ok {
			return "–"
		}
		v := m["total"]
		for _, g := range syscallGroups {
			for _, n := range g.Names {
				v -= m[n]
			}
		}
		return perReq(Stat{Median: v, N: 1})
	}})
}

// countOf formats k of n repetitions.
func countOf(k, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%d/%d", k, n)
}

// mb formats megabytes: one decimal below 100, whole MB with separators
// above.
func mb(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.1f", v)
	}
	return thousands(v)
}
