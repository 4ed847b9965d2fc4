package loadgen

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// run is the state shared by the workers of one Run.
type run struct {
	cfg     *Config
	values  *Values
	zipf    *Zipf // nil unless Dist is Zipfian
	rec     *Recorder
	cnt     counters
	stop    atomic.Bool  // set when the run must end
	hardCap atomic.Bool  // set when the hard cap fired
	budget  atomic.Int64 // requests left to claim (non-sequential, Requests > 0)

	connsMu sync.Mutex
	conns   map[*Conn]struct{} // guarded by connsMu; closed on hard cap
}

// Run drives the configured load against cfg.Addr and returns its result.
// Every connection is dialled before the clock starts; a dial failure aborts
// the run. Run returns when the request count or the duration is reached,
// when ctx is done, or at the hard cap, whichever comes first; an error
// reply, a verification failure or a dropped connection is counted, never
// fatal.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	values, err := NewValues(cfg.ValueSizes, cfg.Seed)
	if err != nil {
		return nil, err
	}
	st := &run{cfg: &cfg, values: values, rec: NewRecorder(), conns: make(map[*Conn]struct{})}
	if cfg.Dist == Zipfian {
		if st.zipf, err = NewZipf(cfg.Keys, cfg.ZipfS); err != nil {
			return nil, err
		}
	}
	st.budget.Store(cfg.Requests)

	workers := make([]*worker, cfg.Conns)
	for i := range workers {
		c, err := Dial(cfg.Addr, cfg.DialTimeout)
		if err != nil {
			st.closeAll()
			return nil, err
		}
		st.track(c)
		workers[i] = st.newWorker(i, c)
	}

	res := &Result{Config: cfg, Start: time.Now()}
	start := time.Now()
	stopTimers := st.arm(ctx)
	defer stopTimers()
	progressDone := st.startProgress(start)

	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	st.stop.Store(true)
	progressDone()
	st.closeAll()

	st.fill(res, elapsed, workers)
	return res, nil
}

// arm starts the duration timer, the hard-cap timer and the ctx watcher.
func (st *run) arm(ctx context.Context) (cancel func()) {
	var timers []*time.Timer
	if st.cfg.Duration > 0 {
		timers = append(timers, time.AfterFunc(st.cfg.Duration, func() { st.stop.Store(true) }))
	}
	timers = append(timers, time.AfterFunc(st.cfg.HardCap, func() {
		st.hardCap.Store(true)
		st.stop.Store(true)
		st.closeAll() // unblock reads stuck on a silent server
	}))
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			st.stop.Store(true)
		case <-done:
		}
	}()
	return func() {
		for _, t := range timers {
			t.Stop()
		}
		close(done)
	}
}

func (st *run) track(c *Conn) {
	st.connsMu.Lock()
	st.conns[c] = struct{}{}
	st.connsMu.Unlock()
}

func (st *run) untrack(c *Conn) {
	st.connsMu.Lock()
	delete(st.conns, c)
	st.connsMu.Unlock()
	_ = c.Close()
}

func (st *run) closeAll() {
	st.connsMu.Lock()
	defer st.connsMu.Unlock()
	for c := range st.conns {
		_ = c.Close()
	}
}

// claim returns how many requests (<= want) a non-sequential worker may
// issue next; 0 means the request budget is spent.
func (st *run) claim(want int) int {
	if st.cfg.Requests == 0 {
		return want
	}
	left := st.budget.Add(-int64(want))
	switch {
	case left >= 0:
		return want
	case left > -int64(want):
		return want + int(left)
	}
	return 0
}

func (st *run) newWorker(id int, c *Conn) *worker {
	cfg := st.cfg
	seed := cfg.Seed
	if cfg.KeySeed != 0 {
		seed = cfg.KeySeed
	}
	r := rand.New(rand.NewPCG(seed, uint64(id)+1))
	w := &worker{
		id:      id,
		st:      st,
		conn:    c,
		rng:     r,
		samples: st.rec.Samples(),
		plan:    make([]slot, cfg.Depth),
		own:     -1,
	}
	switch cfg.Dist {
	case Uniform:
		w.keys = NewUniform(cfg.Keys, r)
	case Zipfian:
		w.keys = st.zipf.Gen(r)
	case Sequential:
		w.keys = NewSequential(cfg.Keys, id, cfg.Conns)
		if cfg.Requests > 0 {
			w.own = SeqShare(cfg.Requests, id, cfg.Conns)
		}
	}
	return w
}

func (st *run) fill(res *Result, elapsed time.Duration, workers []*worker) {
	c := &st.cnt
	res.ElapsedSec = elapsed.Seconds()
	res.Gets, res.Sets = c.gets.Load(), c.sets.Load()
	res.Hits, res.Misses = c.hits.Load(), c.misses.Load()
	res.Requests = res.Gets + res.Sets
	if res.ElapsedSec > 0 {
		res.ReqPerSec = float64(res.Requests) / res.ElapsedSec
	}
	if res.Hits+res.Misses > 0 {
		res.HitRatio = float64(res.Hits) / float64(res.Hits+res.Misses)
	}
	res.BytesRead, res.BytesSent = c.bytesRead.Load(), c.bytesSent.Load()
	res.Errors = c.errors()
	res.HitHardCap = st.hardCap.Load()
	res.Latency = make(map[string]Summary)
	for op := range numOps {
		if s := st.rec.Summary(op); s.Count > 0 {
			res.Latency[op.String()] = s
		}
	}
	for _, w := range workers {
		if w.lost {
			res.ConnsLost++
		}
	}
}

// errRunStopped ends a worker's reconnect attempts once the run is over.
var errRunStopped = errors.New("loadgen: run stopped")
