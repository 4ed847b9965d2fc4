package harness

import (
	"context"
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
}

// run measures sc on every target, alternating targets within each
// repetition (A B A B ...), and returns the raw measurements.
func (r *runner) run(ctx context.Context, sc *Scenario, targets []TargetStatus) []Measurement {
	var runs []Measurement
	reps := r.opts.reps()
	for rep := range reps {
		for i := range targets {
			ts := &targets[i]
			if ctx.Err() != nil {
				return runs
			}
			bin := r.bins[ts.Kind]
			if bin == "" {
				continue // skipped for good; reason already recorded
			}
			srv, err := StartServer(ctx, bin, ts.Target, r.opts.Limits, r.opts.ServerCPUs)
			if err != nil {
				r.skip(ts, rep, err.Error())
				continue
			}
			ts.Version, ts.Command = srv.Version, srv.Args
			ms, err := r.runTarget(ctx, sc, srv, rep)
			srv.Stop()
			runs = append(runs, ms...)
			if err != nil {
				r.skip(ts, rep, err.Error())
				continue
			}
			ts.Measured = true
		}
	}
	return runs
}

func (r *runner) skip(ts *TargetStatus, rep int, why string) {
	if ts.Skipped == "" {
		ts.Skipped = fmt.Sprintf("repetition %d: %s", rep+1, why)
	}
	fmt.Fprintf(r.log, "!!! %s: %s\n", ts.Name, why)
}

// runTarget runs every point of sc against one started server.
func (r *runner) runTarget(ctx context.Context, sc *Scenario, srv *Server, rep int) ([]Measurement, error) {
	var out []Measurement
	for _, p := range sc.Points {
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
			if !srv.Alive() {
				return out, fmt.Errorf("server exited during point %s: %s", p.Label, lastLines(srv.Output(), 10))
			}
		}
	}
	return out, nil
}

// measure runs one phase and samples server and client CPU and memory
// around it.
func (r *runner) measure(ctx context.Context, srv *Server, ph Phase) (Measurement, error) {
	cfg := ph.Load
	cfg.Addr = srv.Addr
	cfg.HardCap = r.opts.PhaseCap
	if r.opts.Progress {
		cfg.Progress = r.log
	}
	var m Measurement
	sBefore, err1 := ReadProc(srv.PID)
	cBefore, err2 := ReadProc(os.Getpid())
	start := time.Now()
	res, err := loadgen.Run(ctx, cfg)
	wall := time.Since(start).Seconds()
	if err != nil {
		return m, err
	}
	sAfter, err3 := ReadProc(srv.PID)
	cAfter, err4 := ReadProc(os.Getpid())
	if err1 == nil && err3 == nil && wall > 0 {
		m.ServerCPUPct = 100 * (sAfter.CPUSeconds - sBefore.CPUSeconds) / wall
		m.ServerRSSKB, m.ServerHWMKB = sAfter.RSSKB, sAfter.HWMKB
	}
	if err2 == nil && err4 == nil && wall > 0 {
		m.ClientCPUPct = 100 * (cAfter.CPUSeconds - cBefore.CPUSeconds) / wall
	}
	m.ElapsedSec, m.Requests, m.ReqPerSec = math.Round(res.ElapsedSec*1e6)/1e6, res.Requests, round1(res.ReqPerSec)
	m.HitRatio, m.BytesRead, m.BytesSent = math.Round(res.HitRatio*1e4)/1e4, res.BytesRead, res.BytesSent
	m.Errors, m.FirstError = res.Errors.Total()+int64(res.ConnsLost), res.Errors.First
	m.HitHardCap, m.Latency = res.HitHardCap, make(map[string]loadgen.Summary, len(res.Latency))
	for op, l := range res.Latency {
		m.Latency[op] = roundSummary(l)
	}
	m.ServerCPUPct, m.ClientCPUPct = round1(m.ServerCPUPct), round1(m.ClientCPUPct)
	return m, nil
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
	if m.FirstError != "" {
		fmt.Fprintf(r.log, "         first error: %s\n", m.FirstError)
	}
	if m.HitHardCap {
		fmt.Fprintf(r.log, "         stopped by the hard cap (%v)\n", r.opts.PhaseCap)
	}
}
