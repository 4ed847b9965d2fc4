package harness

import (
	"encoding/csv"
	"os"
	"strconv"

	"github.com/tandemcache/tandem/benchmarks/trace"
)

// runsHeader names the columns of <scenario>-runs.csv: one line per
// measurement (repetition x target x point x phase), the raw data behind
// every median in the reports.
var runsHeader = func() []string {
	h := []string{"rep", "target", "point", "phase", "elapsed_sec", "requests", "req_per_sec", "hit_ratio",
		"value_bytes_read", "value_bytes_written", "errors", "hit_hard_cap",
		"server_cpu_pct", "client_cpu_pct", "server_rss_kb", "server_peak_rss_kb"}
	for _, op := range []string{"get", "set"} {
		for _, f := range []string{"count", "mean_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us"} {
			h = append(h, op+"_"+f)
		}
	}
	return append(h, "server_voluntary_cs", "server_nonvoluntary_cs", "server_syscalls",
		"hostile_connected", "hostile_closed", "probe_sent", "probe_errors", "hostile_peak_rss_kb", "server_exited",
		"slow_replies", "slow_in_order", "slow_closed", "slow_stalled",
		"server_stats", "first_error",
		"trace_accesses", "trace_hits", "trace_measured_accesses", "trace_measured_hits", "trace_sets", "trace_sets_refused", "trace_repeat_misses",
		"probe_settled", "probe_settled_p99_us")
}()

// writeRunsCSV writes runs to path.
func writeRunsCSV(path string, runs []Measurement) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(runsHeader)
	ff := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	fi := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, m := range runs {
		rec := []string{fi(int64(m.Rep + 1)), m.Target, m.Point, m.Phase, ff(m.ElapsedSec), fi(m.Requests),
			ff(m.ReqPerSec), ff(m.HitRatio), fi(m.BytesRead), fi(m.BytesSent), fi(m.Errors),
			strconv.FormatBool(m.HitHardCap), ff(m.ServerCPUPct), ff(m.ClientCPUPct),
			fi(m.ServerRSSKB), fi(m.ServerHWMKB)}
		for _, op := range []string{"get", "set"} {
			s := m.Latency[op]
			rec = append(rec, fi(s.Count), ff(s.MeanUs), ff(s.P50Us), ff(s.P90Us), ff(s.P99Us), ff(s.P999Us), ff(s.MaxUs))
		}
		rec = append(rec, fi(m.ServerVolCS), fi(m.ServerInvolCS), syscallString(m.Syscalls))
		h, sl := m.Hostile, m.SlowReader
		if h == nil {
			h = &HostileStats{}
		}
		if sl == nil {
			sl = &SlowReaderStats{}
		}
		rec = append(rec, fi(int64(h.Connected)), fi(int64(h.Closed)), fi(h.ProbeSent), fi(h.ProbeErrors),
			fi(h.PeakRSSKB), strconv.FormatBool(h.ServerExited),
			fi(int64(sl.Replies)), strconv.FormatBool(sl.InOrder), strconv.FormatBool(sl.Closed), strconv.FormatBool(sl.Stalled))
		rec = append(rec, statsString(m.Stats), m.FirstError)
		tr := m.Trace
		if tr == nil {
			tr = &trace.Result{}
		}
		_ = w.Write(append(rec, fi(tr.Accesses), fi(tr.Hits), fi(tr.MeasuredAccesses), fi(tr.MeasuredHits),
			fi(tr.Sets), fi(tr.SetsRefused), fi(tr.RepeatMisses), fi(h.SettledProbes), ff(h.SettledP99Us)))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syscallString renders syscall counts as "name=count ..." in name order.
func syscallString(calls map[string]int64) string {
	st := make(map[string]float64, len(calls))
	for k, v := range calls {
		st[k] = float64(v)
	}
	return statsString(st)
}
