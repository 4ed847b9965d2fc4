package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tandemcache/tandem/benchmarks/internal/freeport"
	"github.com/tandemcache/tandem/benchmarks/loadgen"
	"github.com/tandemcache/tandem/benchmarks/trace"
)

// A restart phase (issue #28) starts and stops its servers itself: each
// target runs with -e on a fresh memory file, is stopped gracefully
// (SIGUSR1, as memcached) and started again with the same flags.

// Restart modes of a RestartHitLoad.
const (
	RestartNone = "none" // continue in the same process
	RestartWarm = "warm" // SIGUSR1, start again with the same flags
	RestartCold = "cold" // SIGUSR1, delete FILE.meta, start again
)

// restartStartTimeout bounds a start that restores millions of items.
const restartStartTimeout = 5 * time.Minute

// restartStopTimeout bounds a graceful stop that saves the memory file.
const restartStopTimeout = 2 * time.Minute

// RestartLoad is a restart-time phase: load Items items of ValueSize bytes,
// stop gracefully, start again, and check that every item is back.
type RestartLoad struct {
	Items     int64 `json:"items"`
	ValueSize int   `json:"value_size"`
	Conns     int   `json:"conns"` // the load's connections
	Depth     int   `json:"depth"` // and pipeline depth
	// VerifyGets uniform random gets after the restart must all hit and
	// verify.
	VerifyGets int64  `json:"verify_gets"`
	Dir        string `json:"dir"` // where the memory file goes (tmpfs)
	// Gap is the least time between the stop and the next start:
	// memcached 1.6.18 starts cold when restarted within about two
	// seconds of its stop ("restart incompatible due to setting for
	// [stop_time]").
	Gap time.Duration `json:"gap_ns"`
}

// RestartStats is one restart-time run.
type RestartStats struct {
	Loaded      int64   `json:"loaded"` // items set
	LoadPerSec  float64 `json:"load_per_sec"`
	ItemsBefore int64   `json:"items_before"`  // curr_items before the stop
	Evictions   int64   `json:"evictions"`     // before the stop
	ColdStartMs float64 `json:"cold_start_ms"` // first start (fresh file) to answering
	StopMs      float64 `json:"stop_ms"`       // SIGUSR1 to exit
	StopClean   bool    `json:"stop_clean"`    // exited by itself within restartStopTimeout
	RestartMs   float64 `json:"restart_ms"`    // second start to answering
	// ListenMs is the second start to tandem's "tandem listening" log
	// line (0 for memcached); RestoreMs and SaveMs are the "took" of its
	// warm-restart and memory-file-saved lines.
	ListenMs   float64 `json:"listen_ms,omitempty"`
	RestoreMs  float64 `json:"restore_ms,omitempty"`
	SaveMs     float64 `json:"save_ms,omitempty"`
	ItemsAfter int64   `json:"items_after"` // curr_items after the restart
	// Warm says the restart restored the items (tandem's log line, or
	// curr_items for memcached); ColdReason is tandem's reason when not.
	Warm       bool   `json:"warm"`
	ColdReason string `json:"cold_reason,omitempty"`
	// Of the process before the stop (after the load) and after the
	// restart, in KB: peak RSS (VmHWM), RSS and its private and shared
	// parts.
	LoadedPeakKB int64 `json:"loaded_peak_rss_kb"`
	LoadedRSSKB  int64 `json:"loaded_rss_kb"`
	PeakKB       int64 `json:"peak_rss_kb"`
	RSSKB        int64 `json:"rss_kb"`
	AnonKB       int64 `json:"rss_anon_kb"`
	ShmemKB      int64 `json:"rss_shmem_kb"`
	// FileKB is the memory file's size on tmpfs (du: blocks allocated),
	// FileBytes its length, MetaBytes the length of FILE.meta.
	FileKB     int64 `json:"file_kb"`
	FileBytes  int64 `json:"file_bytes"`
	MetaBytes  int64 `json:"meta_bytes"`
	VerifyGets int64 `json:"verify_gets"`
	VerifyHits int64 `json:"verify_hits"`
}

// RestartHitLoad is a hit-ratio-after-restart phase: a look-aside Zipf
// replay warms the cache (Warmup accesses, seed 1), the server restarts as
// Mode says, and a second replay of Requests accesses (seed 2, the same for
// every mode) is counted in windows of Window accesses.
type RestartHitLoad struct {
	Mode      string        `json:"mode"`
	Theta     float64       `json:"theta"`
	Keys      uint64        `json:"keys"`
	Warmup    int64         `json:"warmup"`
	Requests  int64         `json:"requests"`
	Window    int64         `json:"window"`
	Batch     int           `json:"batch"`
	ValueSize int           `json:"value_size"`
	Dir       string        `json:"dir"`
	Gap       time.Duration `json:"gap_ns"`
}

// RestartHitStats is one hit-ratio-after-restart run; the continuation's
// counts are the measurement's Trace.
type RestartHitStats struct {
	Mode        string       `json:"mode"`
	Warmup      trace.Result `json:"warmup"`
	ItemsBefore int64        `json:"items_before"` // curr_items after the warm-up
	ItemsAfter  int64        `json:"items_after"`  // after the restart (or none)
	RestartMs   float64      `json:"restart_ms,omitempty"`
	Warm        bool         `json:"warm"`
	ColdReason  string       `json:"cold_reason,omitempty"`
}

// ownsServer reports whether points are one point whose phase starts its
// own servers.
func ownsServer(points []Point) bool {
	return len(points) == 1 && len(points[0].Phases) == 1 &&
		(points[0].Phases[0].Restart != nil || points[0].Phases[0].RestartHit != nil)
}

// runRestart runs a restart point for ts: its own servers on a fresh memory
// file, deleted afterwards.
func (r *runner) runRestart(ctx context.Context, sc *Scenario, p Point, ts *TargetStatus, rep int) []Measurement {
	t := ts.Target
	if p.MemoryMB > 0 {
		t.MemoryMB = p.MemoryMB
	}
	ph := p.Phases[0]
	dir := "/dev/shm"
	if ph.Restart != nil {
		dir = ph.Restart.Dir
	} else {
		dir = ph.RestartHit.Dir
	}
	file := filepath.Join(dir, fmt.Sprintf("tandem-bench-%s-%d-%d", t.Name, os.Getpid(), rep))
	removeMemoryFile(file)
	defer removeMemoryFile(file)
	t.Extra = []string{"-e", file}
	rr := &restartRun{r: r, bin: r.bins[ts.Kind], t: t, ts: ts, file: file}
	defer rr.stop()
	m := Measurement{Rep: rep, Target: t.Name, Point: p.Label, Phase: ph.Name}
	var err error
	if ph.Restart != nil {
		err = rr.restartTime(ctx, *ph.Restart, &m)
	} else {
		err = rr.hitAfterRestart(ctx, *ph.RestartHit, &m)
	}
	if err != nil {
		r.skip(ts, rep, fmt.Sprintf("point %s: %v", p.Label, err))
		return nil
	}
	ts.Measured = true
	r.logPhase(sc, &m, rep)
	r.logRestart(&m)
	return []Measurement{m}
}

func removeMemoryFile(file string) {
	_ = os.Remove(file)
	_ = os.Remove(file + ".meta")
}

// restartRun is one target's servers during a restart phase.
type restartRun struct {
	r    *runner
	bin  string
	t    Target
	ts   *TargetStatus
	file string
	srv  *Server // the running server, if any
}

// start starts the server once (no retry on another port: a failed start
// may have consumed FILE.meta).
func (rr *restartRun) start(ctx context.Context) error {
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	s, err := startOnce(ctx, rr.bin, rr.t, rr.r.opts.Limits, rr.r.opts.ServerCPUs, port, restartStartTimeout)
	if err != nil {
		return err
	}
	rr.srv = s
	rr.ts.Version, rr.ts.Command = s.Version, s.Args
	return nil
}

// gracefulStop sends SIGUSR1 and waits for the exit.
func (rr *restartRun) gracefulStop() (time.Duration, bool) {
	d, clean := rr.srv.StopWith(syscall.SIGUSR1, restartStopTimeout)
	return d, clean
}

func (rr *restartRun) stop() {
	if rr.srv != nil {
		rr.srv.Stop()
	}
}

// stats reads numeric stats fields.
func (rr *restartRun) stats(names ...string) (map[string]float64, error) {
	return rr.srv.Stats(names)
}

// restartTime runs a RestartLoad.
func (rr *restartRun) restartTime(ctx context.Context, l RestartLoad, m *Measurement) error {
	st := &RestartStats{}
	m.Restart = st
	if err := rr.start(ctx); err != nil {
		return err
	}
	st.ColdStartMs = ms(rr.srv.Ready.Sub(rr.srv.Started))

	load := setPhase("load", false, l.Conns, l.Depth, uint64(l.Items), "key:", []int{l.ValueSize}).Load
	load.Addr, load.HardCap = rr.srv.Addr, rr.r.opts.PhaseCap
	res, err := loadgen.Run(ctx, load)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	st.Loaded, st.LoadPerSec = res.Requests, round1(res.ReqPerSec)
	m.Errors += res.Errors.Total() + int64(res.ConnsLost)
	if m.FirstError == "" {
		m.FirstError = res.Errors.First
	}
	before, err := rr.stats("curr_items", "evictions")
	if err != nil {
		return err
	}
	st.ItemsBefore, st.Evictions = int64(before["curr_items"]), int64(before["evictions"])
	if p, err := ReadProc(rr.srv.PID); err == nil {
		st.LoadedPeakKB, st.LoadedRSSKB = p.HWMKB, p.RSSKB
	}

	old := rr.srv
	d, clean := rr.gracefulStop()
	stopped := time.Now()
	st.StopMs, st.StopClean = ms(d), clean
	if f, ok := logLine(old.Output(), "memory file saved"); ok {
		st.SaveMs = f.Took
	}
	if fi, err := os.Stat(rr.file); err == nil {
		st.FileBytes = fi.Size()
		if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
			st.FileKB = sys.Blocks * 512 / 1024
		}
	}
	if fi, err := os.Stat(rr.file + ".meta"); err == nil {
		st.MetaBytes = fi.Size()
	}
	if err := sleepUntil(ctx, stopped.Add(l.Gap)); err != nil {
		return err
	}

	if err := rr.start(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	st.RestartMs = ms(rr.srv.Ready.Sub(rr.srv.Started))
	if at, ok := rr.listening(); ok {
		st.ListenMs = ms(at.Sub(rr.srv.Started))
	}
	after, err := rr.stats("curr_items")
	if err != nil {
		return err
	}
	st.ItemsAfter = int64(after["curr_items"])
	st.Warm, st.ColdReason, st.RestoreMs = rr.warm(st.ItemsAfter)
	if p, err := ReadProc(rr.srv.PID); err == nil {
		st.PeakKB, st.RSSKB, st.AnonKB, st.ShmemKB = p.HWMKB, p.RSSKB, p.AnonKB, p.ShmemKB
	}

	if l.VerifyGets > 0 {
		get := baseLoad(4)
		get.Depth = 16
		get.Addr, get.HardCap = rr.srv.Addr, rr.r.opts.PhaseCap
		get.Dist, get.Keys, get.Requests = loadgen.Uniform, uint64(l.Items), l.VerifyGets
		get.SetRatio, get.GetRatio = 0, 1
		get.KeyPrefix, get.ValueSizes = "key:", []int{l.ValueSize}
		gres, err := loadgen.Run(ctx, get)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		st.VerifyGets = gres.Requests
		st.VerifyHits = int64(math.Round(gres.HitRatio * float64(gres.Requests)))
		m.Errors += gres.Errors.Total() + int64(gres.ConnsLost)
		if m.FirstError == "" {
			m.FirstError = gres.Errors.First
		}
	}
	m.ElapsedSec = st.RestartMs / 1e3
	m.Requests, m.ReqPerSec = st.Loaded, st.LoadPerSec
	m.ServerHWMKB, m.ServerRSSKB = st.PeakKB, st.RSSKB
	m.Stats = map[string]float64{"curr_items": float64(st.ItemsAfter)}
	return nil
}

// listening returns when tandem logged "tandem listening". The line can
// reach the harness after the first probe was answered (the listener is up
// before the line is written), so it waits up to a second for it; memcached
// has no such line.
func (rr *restartRun) listening() (time.Time, bool) {
	if rr.t.Kind != KindTandem {
		return time.Time{}, false
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if at, ok := rr.srv.Seen("tandem listening"); ok || time.Now().After(deadline) {
			return at, ok
		}
	}
}

// warm says whether the last start restored the memory file: tandem's log
// line says so (with its reason when it did not and the restore's took);
// memcached says nothing without -v, so items back decide.
func (rr *restartRun) warm(items int64) (bool, string, float64) {
	rr.listening() // every line of the start has arrived
	out := rr.srv.Output()
	if f, ok := logLine(out, "warm restart:"); ok {
		return true, "", f.Took
	}
	if f, ok := logLine(out, "cold start:"); ok {
		return false, f.Reason, 0
	}
	if rr.t.Kind == KindTandem {
		return false, "no warm or cold start line in the log", 0
	}
	return items > 0, "", 0
}

// hitAfterRestart runs a RestartHitLoad.
func (rr *restartRun) hitAfterRestart(ctx context.Context, l RestartHitLoad, m *Measurement) error {
	st := &RestartHitStats{Mode: l.Mode}
	m.RestartHit = st
	if err := rr.start(ctx); err != nil {
		return err
	}
	replay := func(seed uint64, n, window int64) (trace.Result, error) {
		s, err := trace.Spec{Theta: l.Theta, Keys: l.Keys, Requests: n, Seed: seed}.Open()
		if err != nil {
			return trace.Result{}, err
		}
		defer s.Close()
		cctx, cancel := context.WithTimeout(ctx, rr.r.opts.PhaseCap)
		defer cancel()
		res, err := trace.Replay(cctx, trace.Config{Addr: rr.srv.Addr, Batch: l.Batch, ValueSize: l.ValueSize,
			Window: window}, s)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			m.HitHardCap = true
			err = nil
		}
		return res, err
	}
	var err error
	if st.Warmup, err = replay(1, l.Warmup, 0); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	before, err := rr.stats("curr_items")
	if err != nil {
		return err
	}
	st.ItemsBefore = int64(before["curr_items"])
	if l.Mode != RestartNone {
		_, clean := rr.gracefulStop()
		stopped := time.Now()
		if !clean {
			return errors.New("graceful stop (SIGUSR1) did not end the process")
		}
		if l.Mode == RestartCold {
			_ = os.Remove(rr.file + ".meta")
		}
		if err := sleepUntil(ctx, stopped.Add(l.Gap)); err != nil {
			return err
		}
		if err := rr.start(ctx); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		st.RestartMs = ms(rr.srv.Ready.Sub(rr.srv.Started))
	}
	after, err := rr.stats("curr_items")
	if err != nil {
		return err
	}
	st.ItemsAfter = int64(after["curr_items"])
	if l.Mode != RestartNone {
		st.Warm, st.ColdReason, _ = rr.warm(st.ItemsAfter)
	}
	res, err := replay(2, l.Requests, l.Window)
	if err != nil {
		return fmt.Errorf("continuation: %w", err)
	}
	m.setTrace(&res)
	m.Errors, m.FirstError = res.ErrorReplies+st.Warmup.ErrorReplies, res.FirstError
	if m.Stats, err = rr.stats(traceStats...); err != nil {
		return err
	}
	if p, err := ReadProc(rr.srv.PID); err == nil {
		m.ServerHWMKB, m.ServerRSSKB = p.HWMKB, p.RSSKB
	}
	return nil
}

// logFields are the fields of tandem's restart log lines.
type logFields struct {
	Items  int64   `json:"items"`
	Took   float64 `json:"took"` // ms
	Reason string  `json:"reason"`
}

// logLine finds the last JSON log line in out whose message contains msg.
func logLine(out, msg string) (logFields, bool) {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], msg) {
			continue
		}
		var f logFields
		if json.Unmarshal([]byte(lines[i]), &f) == nil {
			return f, true
		}
	}
	return logFields{}, false
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// ms converts d to milliseconds, rounded to 0.1.
func ms(d time.Duration) float64 { return round1(float64(d) / 1e6) }

// logRestart prints a restart phase's numbers.
func (r *runner) logRestart(m *Measurement) {
	if s := m.Restart; s != nil {
		fmt.Fprintf(r.log, "         restart: %s loaded (%s/s), %s items before, %s after (warm %v%s); cold start %.0f ms, "+
			"stop %.0f ms (tandem save %.0f), restart %.0f ms (listening %.0f, restore %.0f); peak RSS %.1f MB (%.1f before "+
			"the stop), RSS %.1f MB (anon %.1f, shmem %.1f); file %.1f MB on tmpfs; verify %d/%d hits\n",
			thousands(float64(s.Loaded)), thousands(s.LoadPerSec), thousands(float64(s.ItemsBefore)),
			thousands(float64(s.ItemsAfter)), s.Warm, map[bool]string{true: ": " + s.ColdReason}[s.ColdReason != ""],
			s.ColdStartMs, s.StopMs, s.SaveMs, s.RestartMs, s.ListenMs, s.RestoreMs, float64(s.PeakKB)/1024,
			float64(s.LoadedPeakKB)/1024, float64(s.RSSKB)/1024, float64(s.AnonKB)/1024, float64(s.ShmemKB)/1024,
			float64(s.FileKB)/1024, s.VerifyHits, s.VerifyGets)
	}
	if s := m.RestartHit; s != nil && m.Trace != nil {
		var ws []string
		for _, w := range m.Trace.Windows {
			ws = append(ws, fmt.Sprintf("%.3f", w.HitRatio()))
		}
		fmt.Fprintf(r.log, "         %s: warm-up hit %.4f, items %s -> %s (warm %v%s, restart %.0f ms); continuation hit %.4f; "+
			"windows %s\n", s.Mode, s.Warmup.HitRatio(), thousands(float64(s.ItemsBefore)), thousands(float64(s.ItemsAfter)),
			s.Warm, map[bool]string{true: ": " + s.ColdReason}[s.ColdReason != ""], s.RestartMs, m.Trace.HitRatio(),
			strings.Join(ws, " "))
	}
}
