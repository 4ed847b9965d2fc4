package reactor

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// loopOut is one event loop's list of connection writers with replies for
// it to write (pool mode: the workers hand their replies back to the loop;
// both modes: pushed lines). The first writer listed since the loop's last
// run asks the loop for a run; that run writes every writer listed until it
// starts, so one wake-up of the loop carries the replies of every worker
// that finished meanwhile.
//
// The ask is a byte written to the loop's doorbell: one end of a socket
// pair whose other end the loop serves as a connection of its own (gnet's
// Enroll), so that the run is that connection's OnTraffic. gnet's Execute
// would do the same with a task queued on the loop, but it allocates a
// closure and a queue node per call, two allocations per request at one
// connection; the doorbell allocates nothing. Until the loop has its
// doorbell (it is enrolled in the background when the loop opens its first
// connection) and after it closed it (the engine stops), Execute asks.
type loopOut struct {
	loop  executor
	mu    sync.Mutex
	ready []*connWriter // guarded by mu
	runs  runState      // guarded by mu: whether a run is asked for (connstate.go)
	spare []*connWriter // guarded by mu: the list the last run wrote, for reuse

	bellMu sync.RWMutex
	bell   int  // guarded by bellMu: the doorbell's end rung from outside the loop, when rings
	rings  bool // guarded by bellMu: the loop opened the doorbell; rings go to bell
	gone   bool // guarded by bellMu: the doorbell is closed, or will never open

	turns *loopTurns // inline mode: the loop's turns, told of each ring (yield.go); nil in pool mode
}

// outRunBytes is what one run writes before it lets the loop poll its
// sockets.
const outRunBytes = 512 << 10

// bellByte is what a ring writes.
var bellByte = []byte{1}

// ring rings the loop's doorbell: the loop runs its list (and, inline, wakes
// its deferred connections) after its next poll of its sockets. It reports
// false when the loop has no doorbell (yet, or any more).
func (lo *loopOut) ring() bool {
	lo.bellMu.RLock()
	defer lo.bellMu.RUnlock()
	if !lo.rings {
		return false
	}
	_, err := unix.Write(lo.bell, bellByte)
	// EAGAIN: earlier rings fill the socket, which the loop has yet to
	// read; it runs when it does.
	return err == nil || err == unix.EAGAIN
}

// rearm asks the loop for another run.
func (lo *loopOut) rearm() {
	if lo.ring() {
		return
	}
	if err := lo.loop.Execute(context.Background(), lo); err != nil {
		// The engine is stopping: it closes every connection without
		// another run. Shutdown drained them all before it stopped the
		// engine (leave handed their queues to drainers), so nothing
		// listed now has a reader left to wait for.
		lo.mu.Lock()
		ws := lo.ready
		lo.ready = nil
		lo.runs.dropped()
		lo.mu.Unlock()
		for _, w := range ws {
			w.abandon()
		}
	}
}

// hasBell reports whether rings reach the loop through its doorbell.
func (lo *loopOut) hasBell() bool {
	lo.bellMu.RLock()
	defer lo.bellMu.RUnlock()
	return lo.rings
}

// executor is what loopOut needs of its event loop (gnet.EventLoop).
type executor interface {
	Execute(ctx context.Context, runnable gnet.Runnable) error
}

// perLoop is what the server keeps per event loop: its writer list and
// (inline mode) its turns (yield.go).
type perLoop struct {
	out   loopOut
	turns loopTurns
}

// loopOf returns loop's state, starting to enroll its doorbell when it is
// new: pool mode's replies ring it, inline mode's deferred turns too
// (yield.go).
func (s *gnetServer) loopOf(loop gnet.EventLoop) *perLoop {
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	pl := s.loops[loop]
	if pl == nil {
		pl = &perLoop{out: loopOut{loop: loop}}
		if !s.pool {
			pl.turns.out = &pl.out
			pl.out.turns = &pl.turns
		}
		if s.loops == nil {
			s.loops = make(map[gnet.EventLoop]*perLoop)
		}
		s.loops[loop] = pl
		go s.enrollBell(loop, &pl.out)
	}
	return pl
}

// enrollBell gives loop its doorbell: a socket pair, one end enrolled in
// the loop, the other kept in lo for rings from the moment the loop opens
// its end (OnOpen recognizes it by its context, lo, and calls bellOpened:
// gnet answers an enrollment whose registration failed without an error).
// Until then, or on failure, lo asks with Execute.
func (s *gnetServer) enrollBell(loop gnet.EventLoop, lo *loopOut) {
	err := enroll(loop, lo)
	if err != nil && !s.stopping.Load() {
		s.log.Warn().Err(err).Msg("no doorbell for an event loop; replies wake it through gnet's task queue")
	}
}

// enroll makes the socket pair and enrolls its far end in loop; lo keeps
// the near end until the loop opened the far one or it gave up.
func enroll(loop gnet.EventLoop, lo *loopOut) error {
	fds, err := socketPair()
	if err != nil {
		return err
	}
	lo.bellMu.Lock()
	lo.bell = fds[0]
	lo.bellMu.Unlock()
	f := os.NewFile(uintptr(fds[1]), "tandem-doorbell")
	nc, err := net.FileConn(f) // a duplicate; gnet enrolls a duplicate of that and closes nc
	_ = f.Close()
	if err == nil {
		var ch <-chan gnet.RegisteredResult
		if ch, err = loop.Enroll(gnet.NewContext(context.Background(), lo), nc); err == nil {
			err = (<-ch).Err
		} else {
			_ = nc.Close()
		}
	}
	lo.bellMu.Lock()
	defer lo.bellMu.Unlock()
	if !lo.rings && !lo.gone {
		_ = unix.Close(fds[0]) // never opened by the loop: no ring could reach it
		lo.gone = true
		if err == nil {
			err = errors.New("the event loop did not open it")
		}
	}
	return err
}

// bellOpened makes rings go to the doorbell: the loop opened its end.
func (lo *loopOut) bellOpened() {
	lo.bellMu.Lock()
	if !lo.gone {
		lo.rings = true
	}
	lo.bellMu.Unlock()
}

// bellClosed lets go of the doorbell: gnet closed its end (the engine stops).
func (lo *loopOut) bellClosed() {
	lo.bellMu.Lock()
	if lo.rings {
		_ = unix.Close(lo.bell)
		lo.rings = false
	}
	lo.gone = true
	lo.bellMu.Unlock()
}

// add lists w for the loop's next run (w.listed is set), asking for a run
// unless one is asked for already or the loop will run the list in leave.
// Safe from any goroutine.
func (lo *loopOut) add(w *connWriter) {
	lo.mu.Lock()
	lo.ready = append(lo.ready, w)
	arm := lo.runs.listed()
	lo.mu.Unlock()
	if !arm {
		return
	}
	lo.rearm()
}

// enter and leave bracket the loop's yield to a worker it just started
// (gconn.frame), on the loop. The worker, next on the loop's processor,
// usually has its reply listed before the loop goes on: then no ring is
// needed (it would cost a write, a return from epoll_wait and a read), the
// loop writes the reply in leave. Only that window is bracketed: around
// every OnTraffic the lock traffic cost 10% more CPU per request at 200
// connections.
func (lo *loopOut) enter() {
	lo.mu.Lock()
	lo.runs.enter()
	lo.mu.Unlock()
}

// leave runs what was listed since enter with no run asked for.
func (lo *loopOut) leave() {
	lo.mu.Lock()
	run := lo.runs.leave(len(lo.ready) > 0)
	lo.mu.Unlock()
	if run {
		_ = lo.Run(nil)
	}
}

// Run writes the listed writers' queues, on the loop (the doorbell's
// OnTraffic, or gnet.Runnable).
//
// Writers holding a reply or two go first, so that a client waiting for one
// reply does not wait behind clients that pipeline bulk output. A run writes
// up to outRunBytes, then asks for the next run and returns: rung by the
// doorbell, that run comes after the loop polled its sockets again. gnet
// runs the tasks queued while it runs tasks in the same pass, though, so
// without the doorbell the next run waits for a timer (yield.go's
// yieldDelay) instead, by which time the loop has polled its sockets.
// Writers not reached keep their place at the head of the list.
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
	lo.runs.ran(more)
	lo.mu.Unlock()
	switch {
	case later && !lo.hasBell():
		time.AfterFunc(yieldDelay, lo.rearm)
	case more:
		lo.rearm()
	}
	return nil
}
