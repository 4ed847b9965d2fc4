package reactor

import (
	"context"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// loopOut is one event loop's list of connection writers with replies for
// it to write (pool mode: the workers hand their replies back to the loop;
// both modes: pushed lines). The first writer listed since the loop's last
// run asks the loop for a run with one Execute; that run writes every
// writer listed until it starts, so one wake-up of the loop carries the
// replies of every worker that finished meanwhile.
type loopOut struct {
	loop  executor
	mu    sync.Mutex
	ready []*connWriter // guarded by mu
	armed bool          // guarded by mu: a run is asked for and has not started
	spare []*connWriter // guarded by mu: the list the last run wrote, for reuse
}

// outRunBytes is what one run writes before the next waits for a timer.
const outRunBytes = 512 << 10

// rearm asks the loop for another run (a run that left writers listed).
func (lo *loopOut) rearm() {
	if err := lo.loop.Execute(context.Background(), lo); err != nil {
		// The engine is stopping: it closes every connection without
		// another run. Shutdown drained them all before it stopped the
		// engine (leave handed their queues to flushers), so nothing
		// listed now has a reader left to wait for.
		lo.mu.Lock()
		ws := lo.ready
		lo.ready, lo.armed = nil, false
		lo.mu.Unlock()
		for _, w := range ws {
			w.abandon()
		}
	}
}

// executor is what loopOut needs of its event loop (gnet.EventLoop).
type executor interface {
	Execute(ctx context.Context, runnable gnet.Runnable) error
}

// outOf returns the writer list of loop.
func (s *gnetServer) outOf(loop gnet.EventLoop) *loopOut {
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	lo := s.outs[loop]
	if lo == nil {
		lo = &loopOut{loop: loop}
		if s.outs == nil {
			s.outs = make(map[gnet.EventLoop]*loopOut)
		}
		s.outs[loop] = lo
	}
	return lo
}

// add lists w for the loop's next run (w.listed is set), asking for a run
// unless one is asked for already. Safe from any goroutine.
func (lo *loopOut) add(w *connWriter) {
	lo.mu.Lock()
	lo.ready = append(lo.ready, w)
	arm := !lo.armed
	lo.armed = true
	lo.mu.Unlock()
	if !arm {
		return
	}
	lo.rearm()
}

// Run writes the listed writers' queues, on the loop (gnet.Runnable).
//
// Writers holding a reply or two go first, so that a client waiting for one
// reply does not wait behind clients that pipeline bulk output. A run writes
// up to outRunBytes: gnet runs the tasks queued while it runs tasks in the
// same pass, before it polls its sockets again, so a run that asked for the
// next one at once would keep the loop from reading for as long as workers
// have bulk output to hand it. Past the budget the next run waits for a
// timer (yield.go's yieldDelay), by which time the loop has polled its
// sockets; writers not reached keep their place at the head of the list.
func (lo *loopOut) Run(context.Context) error {
	lo.mu.Lock()
	ws := lo.ready
	lo.ready, lo.spare = lo.spare, nil
	lo.mu.Unlock()
	written := 0
	for i, w := range ws {
		if w.queuedLen() <= writeChunk {
			written += w.flushOnLoop()
			ws[i] = nil
		}
	}
	left := ws[:0]
	for _, w := range ws {
		switch {
		case w == nil:
		case written >= outRunBytes:
			left = append(left, w)
		default:
			written += w.flushOnLoop()
		}
	}
	clear(ws[len(left):])
	later := written >= outRunBytes
	lo.mu.Lock()
	added := lo.ready
	more := later || len(added) > 0
	if len(left) > 0 {
		lo.ready = append(left, added...)
		clear(added)
		lo.spare = added[:0]
	} else {
		lo.spare = ws[:0]
	}
	lo.armed = more
	lo.mu.Unlock()
	switch {
	case later:
		time.AfterFunc(yieldDelay, lo.rearm)
	case more:
		lo.rearm()
	}
	return nil
}
