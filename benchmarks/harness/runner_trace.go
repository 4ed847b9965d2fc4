package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/tandemcache/tandem/benchmarks/trace"
)

// traceCounts caches the access count of each trace file (counting reads the
// whole file), so repetitions and targets count it once.
var traceCounts sync.Map // spec string -> int64

// countAccesses returns the number of accesses of spec.
func countAccesses(spec trace.Spec) (int64, error) {
	key := spec.String()
	if n, ok := traceCounts.Load(key); ok {
		return n.(int64), nil
	}
	n, err := spec.Count()
	if err != nil {
		return 0, err
	}
	traceCounts.Store(key, n)
	return n, nil
}

// replay runs a trace phase against srv.
func (r *runner) replay(ctx context.Context, srv *Server, tl TraceLoad, m *Measurement) error {
	spec, err := trace.ParseSpec(tl.Spec)
	if err != nil {
		return err
	}
	total, err := countAccesses(spec)
	if err != nil {
		return err
	}
	st, err := spec.Open()
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(ctx, r.opts.PhaseCap)
	defer cancel()
	cfg := trace.Config{
		Addr: srv.Addr, Batch: tl.Batch, ValueSize: tl.ValueSize, MinValueSize: tl.MinValueSize,
		Warmup: int64(tl.Warmup * float64(total)),
	}
	res, err := trace.Replay(ctx, cfg, st)
	capped := errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil
	if err != nil && !capped {
		return fmt.Errorf("trace %s: %w", tl.Spec, err)
	}
	m.setTrace(&res)
	mean := int64(cfg.MeanValueSize())
	m.BytesRead = res.Hits * mean
	m.BytesSent = res.Sets * mean
	m.Errors, m.FirstError = res.ErrorReplies, res.FirstError
	m.HitHardCap = capped
	return nil
}

// setTrace records a replay's result and the figures every trace measurement reports from it:
// elapsed time, requests (accesses and sets), their rate and the hit ratio.
func (m *Measurement) setTrace(res *trace.Result) {
	m.Trace = res
	m.ElapsedSec = math.Round(res.Elapsed.Seconds()*1e6) / 1e6
	m.Requests = res.Accesses + res.Sets
	if m.ElapsedSec > 0 {
		m.ReqPerSec = round1(float64(m.Requests) / m.ElapsedSec)
	}
	m.HitRatio = math.Round(res.HitRatio()*1e4) / 1e4
}
