package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// runner executes one scenario's repetitions.
type runner struct {
	opts *Options
	bins map[string]string // kind -> binary path
	log  io.Writer
}

// TargetStatus says whether a target was measured, and how it was started.
type TargetStatus struct {
	Target
	Measured bool     `json:"measured"`
	Skipped  string   `json:"skipped,omitempty"` // why not (or why not in every repetition)
	Version  string   `json:"version,omitempty"`
	Command  []string `json:"command,omitempty"`
	off      bool     // skipped for good (Skipped says why)
}

// run measures sc on every target, alternating targets within each
// repetition (A B A B ...), and returns the raw measurements. With
// sc.ServerPerPoint every target gets a fresh server at every point, and
// the targets alternate within each point.
func (r *runner) run(ctx context.Context, sc *Scenario, targets []TargetStatus) []Measurement {
	var runs []Measurement
	groups := [][]Point{sc.Points}
	if sc.ServerPerPoint {
		groups = nil
		for _, p := range sc.Points {
			groups = append(groups, []Point{p})
		}
	}
	for rep := range r.opts.reps() {
		for _, points := range groups {
			if len(points) == 1 && points[0].MaxReps > 0 && rep >= points[0].MaxReps {
				continue
			}
			for i := range targets {
				if ctx.Err() != nil {
					return runs
				}
				runs = append(runs, r.runServer(ctx, sc, points, &targets[i], rep)...)
			}
		}
	}
	return runs
}

// runServer starts one server for ts, runs points on it and stops it.
func (r *runner) runServer(ctx context.Context, sc *Scenario, points []Point, ts *TargetStatus, rep int) []Measurement {
	bin := r.bins[ts.Kind]
	if bin == "" || ts.off {
		return nil // skipped for good; reason already recorded
	}
	if ownsServer(points) {
		return r.runRestart(ctx, sc, points[0], ts, rep)
	}
	t := ts.Target
	if len(points) == 1 && points[0].MemoryMB > 0 {
		t.MemoryMB = points[0].MemoryMB // ServerPerPoint: this point's -m
	}
	srv, err := StartServer(ctx, bin, t, r.opts.Limits, r.opts.ServerCPUs)
	if err != nil {
		r.skip(ts, rep, err.Error())
		return nil
	}
	ts.Version, ts.Command = srv.Version, srv.Args
	ms, err := r.runTarget(ctx, sc, points, srv, rep)
	srv.Stop()
	if err != nil {
		r.skip(ts, rep, err.Error())
		return ms
	}
	ts.Measured = true
	return ms
}

func (r *runner) skip(ts *TargetStatus, rep int, why string) {
	if ts.Skipped == "" {
		ts.Skipped = fmt.Sprintf("repetition %d: %s", rep+1, why)
	}
	fmt.Fprintf(r.log, "!!! %s: %s\n", ts.Name, why)
}

// runTarget runs points of sc against one started server.
func (r *runner) runTarget(ctx context.Context, sc *Scenario, points []Point, srv *Server, rep int) ([]Measurement, error) {
	var out []Measurement
	for _, p := range points {
		for _, ph := range p.Phases {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			if ph.Flush {
				if err := srv.Flush(); err != nil {
					return out, fmt.Errorf("flush_all before %s/%s: %w", p.Label, ph.Name, err)
				}
			}
			m, err := r.measure(ctx, srv, ph)
			m.Rep, m.Target, m.Point, m.Phase = rep, srv.Target.Name, p.Label, ph.Name
			if err != nil {
				return out, fmt.Errorf("point %s phase %s: %w", p.Label, ph.Name, err)
			}
			if len(ph.Stats) > 0 {
				if m.Stats, err = srv.Stats(ph.Stats); err != nil {
					return out, fmt.Errorf("stats after %s/%s: %w", p.Label, ph.Name, err)
				}
			}
			if ph.Report {
				out = append(out, m)
			}
			r.logPhase(sc, &m, rep)
			if m.Hostile != nil && m.Hostile.ServerExited {
				break // what the attack did to the server is the measurement
			}
			if !srv.Alive() {
				return out, fmt.Errorf("server exited during point %s: %s", p.Label, lastLines(srv.Output(), 10))
			}
		}
	}
	return out, nil
}

// measure runs one phase and samples server and client CPU, memory and
// context switches around it.
func (r *runner) measure(ctx context.Context, srv *Server, ph Phase) (Measurement, error) {
	var m Measurement
	sBefore, err1 := ReadProc(srv.PID)
	cBefore, err2 := ReadProc(os.Getpid())
	start := time.Now()
	stopSampling := sampleUnreclaimable(srv.PID, 100*time.Millisecond)
	var err error
	switch {
	case ph.Hostile != nil:
		err = r.hostile(ctx, srv, *ph.Hostile, &m)
	case ph.SlowReader != nil:
		err = r.slowReader(ctx, srv, *ph.SlowReader, &m)
	case ph.Trace != nil:
		err = r.replay(ctx, srv, *ph.Trace, &m)
	case ph.Memcslap != nil:
		err = r.memcslap(ctx, srv, *ph.Memcslap, &m)
	default:
		err = r.load(ctx, srv, ph, &m)
	}
	wall := time.Since(start).Seconds()
	m.ServerUnreclaimKB = stopSampling()
	if err != nil {
		return m, err
	}
	sAfter, err3 := ReadProc(srv.PID)
	cAfter, err4 := ReadProc(os.Getpid())
	if err1 == nil && err3 == nil && wall > 0 {
		m.ServerCPUPct = 100 * (sAfter.CPUSeconds - sBefore.CPUSeconds) / wall
		m.ServerRSSKB, m.ServerHWMKB = sAfter.RSSKB, sAfter.HWMKB
		m.ServerVolCS, m.ServerInvolCS = sAfter.VolCS-sBefore.VolCS, sAfter.InvolCS-sBefore.InvolCS
	}
	if err2 == nil && err4 == nil && wall > 0 {
		m.ClientCPUPct += 100 * (cAfter.CPUSeconds - cBefore.CPUSeconds) / wall // and an outside client's
	}
	m.ServerCPUPct, m.ClientCPUPct = round1(m.ServerCPUPct), round1(m.ClientCPUPct)
	return m, nil
}

// load runs a loadgen phase, under strace when the phase asks for it.
func (r *runner) load(ctx context.Context, srv *Server, ph Phase, m *Measurement) error {
	cfg := ph.Load
	cfg.Addr = srv.Addr
	cfg.HardCap = r.opts.PhaseCap
	if r.opts.Progress {
		cfg.Progress = r.log
	}
	var trace *straceSession
	if ph.Strace {
		dir, err := os.MkdirTemp("", "tandem-strace-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if trace, err = startStrace(srv.PID, dir); err != nil {
			m.StraceError = err.Error()
			fmt.Fprintf(r.log, "!!! %s: no syscall counts: %v\n", srv.Target.Name, err)
		}
	}
	res, err := loadgen.Run(ctx, cfg)
	if trace != nil {
		calls, serr := trace.stop()
		if serr != nil {
			m.StraceError = serr.Error()
		}
		m.Syscalls = calls
	}
	if err != nil {
		return err
	}
	m.ElapsedSec, m.Requests, m.ReqPerSec = math.Round(res.ElapsedSec*1e6)/1e6, res.Requests, round1(res.ReqPerSec)
	m.HitRatio, m.BytesRead, m.BytesSent = math.Round(res.HitRatio*1e4)/1e4, res.BytesRead, res.BytesSent
	m.Errors, m.FirstError = res.Errors.Total()+int64(res.ConnsLost), res.Errors.First
	m.HitHardCap, m.Latency = res.HitHardCap, make(map[string]loadgen.Summary, len(res.Latency))
	for op, l := range res.Latency {
		m.Latency[op] = roundSummary(l)
	}
	return nil
}

// hostile runs a hostile phase: the probe's answered gets are its requests
// and latencies, its failed ones its errors.
func (r *runner) hostile(ctx context.Context, srv *Server, h HostileLoad, m *Measurement) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.PhaseCap)
	defer cancel()
	rec := loadgen.NewRecorder()
	start := time.Now()
	st, err := runHostile(ctx, srv, h, rec)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	m.Hostile = &st
	m.ElapsedSec = math.Round(time.Since(start).Seconds()*1e6) / 1e6
	probe := rec.Summary(loadgen.OpGet)
	m.Requests, m.Errors, m.FirstError = probe.Count, st.ProbeErrors, st.FirstError
	if m.ElapsedSec > 0 {
		m.ReqPerSec = round1(float64(probe.Count) / m.ElapsedSec)
	}
	m.Latency = map[string]loadgen.Summary{}
	if probe.Count > 0 {
		m.Latency["get"] = roundSummary(probe)
	}
	m.HitHardCap = errors.Is(err, context.DeadlineExceeded)
	return nil
}

// slowReader runs a slow-reader phase: replies received are its requests,
// replies missing its errors.
func (r *runner) slowReader(ctx context.Context, srv *Server, s SlowReaderLoad, m *Measurement) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.PhaseCap)
	defer cancel()
	st, elapsed, err := runSlowReader(ctx, srv.Addr, s)
	if err != nil {
		return err
	}
	m.SlowReader = &st
	m.ElapsedSec = math.Round(elapsed.Seconds()*1e6) / 1e6
	m.Requests, m.Errors, m.FirstError = int64(st.Replies), int64(st.Requests-st.Replies), st.FirstError
	if m.ElapsedSec > 0 {
		m.ReqPerSec = round1(float64(st.Replies) / m.ElapsedSec)
	}
	m.HitHardCap = ctx.Err() != nil
	return nil
}

func (r *runner) logPhase(sc *Scenario, m *Measurement, rep int) {
	var p99 float64
	if l, ok := m.Latency["get"]; ok {
		p99 = l.P99Us
	} else {
		p99 = m.Latency["set"].P99Us
	}
	fmt.Fprintf(r.log, "%-8s rep %d/%d  %-20s %-10s %-6s %10s req/s  p99 %7.1f µs  server cpu %4.0f%%  errors %d\n",
		sc.Name, rep+1, r.opts.reps(), m.Target, m.Point, m.Phase, thousands(m.ReqPerSec), p99, m.ServerCPUPct, m.Errors)
	if len(m.Stats) > 0 {
		fmt.Fprintf(r.log, "         hit ratio %.4f  server RSS %.1f MB  stats %s\n",
			m.HitRatio, float64(m.ServerRSSKB)/1024, statsString(m.Stats))
	}
	if t := m.Trace; t != nil {
		fmt.Fprintf(r.log, "         trace: hit ratio %.4f (after warm-up %.4f) over %s accesses; peak RSS %.1f MB; %s sets, %s refused\n",
			t.HitRatio(), t.MeasuredHitRatio(), thousands(float64(t.Accesses)), float64(m.ServerHWMKB)/1024,
			thousands(float64(t.Sets)), thousands(float64(t.SetsRefused)))
	}
	if h := m.Hostile; h != nil {
		fmt.Fprintf(r.log, "         hostile %d/%d connected, %d closed by the server; peak RSS %.1f MB; probe %d/%d answered%s\n",
			h.Connected, h.Clients, h.Closed, float64(h.PeakRSSKB)/1024, h.ProbeSent-h.ProbeErrors, h.ProbeSent,
			map[bool]string{true: "; SERVER EXITED"}[h.ServerExited])
	}
	if s := m.SlowReader; s != nil {
		fmt.Fprintf(r.log, "         slow reader: %d/%d replies, in order %v, closed by server %v, stalled %v, %.0f KB/s\n",
			s.Replies, s.Requests, s.InOrder, s.Closed, s.Stalled, s.ReadKBps)
	}
	if m.Syscalls != nil && m.Requests > 0 {
		fmt.Fprintf(r.log, "         strace: %.2f syscalls per request\n", float64(m.Syscalls["total"])/float64(m.Requests))
	}
	if m.FirstError != "" {
		fmt.Fprintf(r.log, "         first error: %s\n", m.FirstError)
	}
	if m.HitHardCap {
		fmt.Fprintf(r.log, "         stopped by the hard cap (%v)\n", r.opts.PhaseCap)
	}
}
