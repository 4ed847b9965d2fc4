package reactor

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tandemcache/tandem/protocol"
)

// gconn is the state of one gnet connection in pool or inline mode.
//
// Ownership: gnet's Conn methods, the parser half of sess and the fields
// marked loop-owned are used only on the connection's event loop. Requests
// are executed by one goroutine at a time, "the executor": in inline mode
// the loop; in pool mode the task that took it (state stRunning); after
// the loop let go of the connection (gnet closed it, or shutdown drained it)
// whoever runs the leftovers (see detach). Replies go out through w
// (writer.go).
//
// One mutex per connection: mu guards the execution state below and, as
// w.mu, the writer's queue and flags. No path holds it across a call from
// the one to the other (the writer's resume and the loop's list are called
// with it unlocked). Lock order: mu, then the parked queue's mu (never taken
// by the writer's side); a loopOut's mu is held with neither.
type gconn struct {
	s    *gnetServer
	c    gnet.Conn
	fd   int // gnet's descriptor: read pausing uses it on the loop while open
	ep   int // the loop's epoll descriptor, -1 when reads cannot be paused
	sess Session
	w    *connWriter

	// remote and local (the listener's address) are copied at open: gnet
	// recycles its address buffers after OnClose, and a connection with
	// work left is still listed for "stats conns" until it finishes.
	remote, local net.Addr

	// streamer is sess when its replies may come in parts; unfinished says
	// a reply has parts still to come. Both belong to the executor.
	streamer   Streamer
	unfinished bool

	lastActive atomic.Int64 // unix nanoseconds of the last traffic
	// lastCmd is when the connection last completed a request (or opened),
	// in unix nanoseconds; set only with an idle timeout, which it drives:
	// like memcached's idle_timeout it counts time since the last command,
	// so a client trickling a partial command byte by byte is still idle.
	lastCmd atomic.Int64

	turns      *loopTurns       // the loop's turns (inline; yield.go)
	woken      atomic.Bool      // a wake-up turn is asked for (inline; yield.go)
	lat        latencySampler   // loop-owned
	readPaused bool             // loop-owned: read events are off in the loop's epoll
	held       int              // loop-owned: unparsed input counted in the server's buffer total
	req        protocol.Request // executor's scratch request (parsed by run)
	out        []byte           // executor's reply buffer

	mu          sync.Mutex
	execState          // guarded by mu: where execution stands (connstate.go)
	pending     *batch // guarded by mu (pool): framed requests no worker has taken yet
	spare       *batch // guarded by mu (pool): an executed batch kept for reuse
	framePaused bool   // guarded by mu (pool): framing stopped until a worker takes pending
	next        *gconn // guarded by the parked queue's mu

	// Executor-owned.
	cur      *batch // pool: the batch being run, from curIdx on
	curIdx   int
	leftover []byte // input read before the loop let go, still to run (see detach)
}

// batch is a run of framed requests whose bytes are owned by arena.
type batch struct {
	arena []byte
	reqs  []protocol.Request
	since time.Time // when its first request arrived, if sampled for latency
}

func (b *batch) reset() {
	b.arena = b.arena[:0]
	b.since = time.Time{}
	for i := range b.reqs {
		b.reqs[i].Err = nil
	}
	b.reqs = b.reqs[:0]
}

// maxKeptBuffer bounds the capacity of buffers kept for reuse, so one huge
// reply or batch does not pin memory for the life of the connection.
const maxKeptBuffer = 1 << 20

// writeChunk is the reply size at which an executor hands replies to the
// writer before the end of its slice, bounding a slice's reply buffer (and,
// under the buffer limit, what a blocked connection holds).
const writeChunk = 16 << 10

// closeLinger bounds how long the replies of a closed connection may wait
// for a peer that does not read them: each write must make progress within
// it, or the rest is dropped (the requests still run).
const closeLinger = 10 * time.Second

func newGconn(s *gnetServer, c gnet.Conn) *gconn {
	gc := &gconn{s: s, c: c, fd: c.Fd(), sess: s.cfg.NewSession(c.RemoteAddr()), lat: newLatencySampler(c.Fd()),
		remote: cloneAddr(c.RemoteAddr()), local: s.listenerOf(c.LocalAddr())}
	pl := s.loopOf(c.EventLoop())
	w := newConnWriter(gc.fd, &gc.mu, &s.limits, &pl.out, s.pool, gc.resumeFromWriter)
	gc.w = w
	if s.pool {
		w.moreLocked = gc.moreLocked
	}
	gc.streamer = streamerOf(gc.sess)
	gc.attachPush()
	gc.ep = s.epolls.of(c.EventLoop(), gc.fd)
	if !s.pool {
		gc.turns = &pl.turns
	}
	if s.pool {
		gc.pending = &batch{}
	}
	return gc
}

// execute runs one request, turning a panic into a closed connection. A
// streaming session may leave the reply unfinished: continueReply then
// appends its next part.
func (gc *gconn) execute(r *protocol.Request, out []byte) ([]byte, bool) {
	out, closeConn := executeSafely(gc.sess, r, out, gc.s.log, &gc.s.panics)
	gc.unfinished = !closeConn && gc.streamer != nil && gc.streamer.Unfinished()
	return out, closeConn
}

// continueReply appends the next part of an unfinished reply, turning a
// panic into a closed connection as execute does.
func (gc *gconn) continueReply(out []byte) ([]byte, bool) {
	out, more, closeConn := continueSafely(gc.streamer, out, gc.s.log, &gc.s.panics)
	gc.unfinished = more
	return out, closeConn
}

// progressed records that the connection completed a request, for the
// idle timeout.
func (gc *gconn) progressed() {
	if gc.s.cfg.IdleTimeout > 0 {
		gc.lastCmd.Store(time.Now().UnixNano())
	}
}

// waitForBytes reports whether the parser needs more bytes than are
// buffered, so that a large value still arriving is not re-parsed on every
// read (gnet's Peek copies the whole buffer each time).
func (gc *gconn) waitForBytes() bool {
	need := gc.sess.NeedBytes()
	return need > 0 && gc.c.InboundBuffered() < need
}

// settleInput runs at the end of every loop callback: it accounts the
// unparsed input gnet holds, pauses or resumes reading, and closes the
// connection when its input cannot be bounded otherwise. pause says reads
// must stop: the executor is blocked on its replies, or complete requests
// already wait beyond the high-water mark. An incomplete request never
// pauses reads, since only more input completes it: it is bounded by
// MaxInput (and by the parser's own limits on lines and values), and while
// every connection's buffers together are over BufferLimit, by
// InputHighWater.
func (gc *gconn) settleInput(pause bool) gnet.Action {
	in := gc.c.InboundBuffered()
	gc.s.limits.add(in - gc.held)
	gc.held = in
	if in > gc.s.cfg.MaxInput {
		gc.s.overflow.Add(1)
		gc.s.log.Debug().Int("buffered", in).Msg("closing connection over the input cap")
		gc.closeForServer()
		return gnet.Close
	}
	if !pause && in > gc.s.cfg.InputHighWater && gc.s.limits.over() {
		// A large request still arriving while every connection's buffers
		// together are over their limit: give up on this one.
		gc.s.readBufOOM.Add(1)
		gc.closeForServer()
		return gnet.Close
	}
	if gc.ep < 0 && pause && in > gc.s.cfg.InputHighWater {
		// Reads cannot pause (readpause.go): close rather than buffer.
		gc.s.overflow.Add(1)
		gc.closeForServer()
		return gnet.Close
	}
	if gc.ep < 0 || pause == gc.readPaused {
		return gnet.None
	}
	if err := setReading(gc.ep, gc.fd, !pause); err != nil {
		gc.s.log.Debug().Err(err).Msg("cannot change read interest; closing the connection")
		gc.closeForServer()
		return gnet.Close
	}
	gc.readPaused = pause
	if pause {
		gc.s.readPauses.Add(1)
	}
	return gnet.None
}

// closeForServer marks a connection the server closes on its own (input or
// output over a cap, idle timeout, an error): nothing more runs and
// unwritten replies are dropped.
func (gc *gconn) closeForServer() {
	gc.mu.Lock()
	gc.stop = true
	gc.w.abortLocked()
	gc.mu.Unlock()
}

// runInline parses and executes up to ReqsPerEvent requests on the loop,
// handing their replies to the writer.
func (gc *gconn) runInline() gnet.Action {
	gc.mu.Lock()
	hold := gc.state == stBlocked || gc.detached || gc.stop
	gc.mu.Unlock()
	if hold || (!gc.unfinished && gc.waitForBytes()) {
		return gc.settleInput(hold)
	}
	t0 := gc.lat.start(gc.s.cfg.ObserveLatency)
	buf, _ := gc.c.Peek(-1)
	src := reqSource{buf: buf}
	end := gc.run(&src)
	if src.off > 0 {
		_, _ = gc.c.Discard(src.off)
	}
	observeSince(gc.s.cfg.ObserveLatency, t0)
	switch end {
	case endOverflow:
		gc.closeForServer()
		return gnet.Close
	case endClose:
		gc.mu.Lock()
		gc.stop = true
		gc.mu.Unlock()
		return gnet.Close
	case endBlocked:
		if gc.blockExecutor() {
			return gc.settleInput(true) // the writer's resume wakes it
		}
	}
	more := end == endYield || end == endBlocked
	if more && gc.w.holdForDrain() && gc.blockExecutor() {
		return gc.settleInput(true) // the writer's resume wakes it
	}
	if more {
		gc.yield()
	}
	return gc.settleInput(more && gc.c.InboundBuffered() >= gc.s.cfg.InputHighWater)
}

// blockExecutor records that the inline executor stopped for its writer,
// unless the writer drained meanwhile (then it reports false: go on).
func (gc *gconn) blockExecutor() bool {
	gc.mu.Lock()
	blocked := gc.block()
	gc.mu.Unlock()
	return blocked
}

// resumeFromWriter is called by whoever emptied the writer's queue that
// blocked the executor has drained. If the executor has not stopped yet, it
// is told to go on (owed); otherwise the connection is rescheduled: queued
// for a worker (pool), woken on its loop (inline), or its leftovers run here
// (inline, after the loop let go).
func (gc *gconn) resumeFromWriter() {
	gc.mu.Lock()
	st := gc.drained(gc.s.pool)
	gc.mu.Unlock()
	gc.do(st)
}

// do carries out the step a transition returned (connstate.go), without
// gc.mu held.
func (gc *gconn) do(st step) {
	switch st {
	case stepDispatch:
		gc.s.dispatch(gc)
	case stepRequeue:
		gc.s.requeue(gc)
	case stepWake:
		gc.wakeTurn()
	case stepRunLeftover:
		gc.runLeftover()
	case stepFinish:
		gc.finish()
	}
}

// frame moves complete requests from gnet's buffer into the pending batch,
// up to the input high-water mark, and queues the connection for a worker.
func (gc *gconn) frame() gnet.Action {
	gc.mu.Lock()
	if gc.framePaused || gc.detached || gc.stop || gc.waitForBytes() {
		hold := gc.framePaused || gc.detached || gc.stop
		gc.mu.Unlock()
		return gc.settleInput(hold)
	}
	paused := gc.frameLocked()
	st := gc.framed(len(gc.pending.reqs) > 0)
	gc.mu.Unlock()
	if st == stepDispatch && gc.s.dispatch(gc) {
		// A worker was started for this connection: let it have this
		// processor now (it is next on it), so the reply does not wait
		// for the loop to finish its turn. With one processor (a server
		// pinned to one core) this takes a third off the round trip.
		// The worker's reply is then usually listed before the loop
		// goes on: the loop writes it here, without a ring of its
		// doorbell (loopOut.enter).
		gc.w.out.enter()
		runtime.Gosched()
		gc.w.out.leave()
	}
	// Framing stopped at the batch's limit: what is left stays in gnet's
	// buffer, and reads pause only once that holds the high-water mark too
	// (a pipelining client is not paused and resumed for every batch).
	return gc.settleInput(paused && gc.c.InboundBuffered() >= gc.s.cfg.InputHighWater)
}

// frameLocked parses complete requests from gnet's buffer into pending,
// copying their bytes, until pending holds InputHighWater bytes or
// MaxPendingRequests requests; it reports whether it stopped at a limit,
// which pauses framing until a worker takes the batch.
func (gc *gconn) frameLocked() bool {
	limit, maxReqs := gc.s.cfg.InputHighWater, gc.s.cfg.MaxPendingRequests
	buf, _ := gc.c.Peek(-1)
	b := gc.pending
	start := len(b.reqs)
	if start == 0 {
		b.since = gc.lat.start(gc.s.cfg.ObserveLatency)
	}
	off := 0
	for off < len(buf) {
		// Pause only with a batch for a worker to take: bytes a rejected
		// value leaves to swallow frame no request.
		if len(b.reqs) > 0 && (len(b.arena)+off >= limit || len(b.reqs) >= maxReqs) {
			gc.framePaused = true
			break
		}
		if len(b.reqs) == cap(b.reqs) {
			b.reqs = append(b.reqs, protocol.Request{})
		} else {
			b.reqs = b.reqs[:len(b.reqs)+1]
		}
		r := &b.reqs[len(b.reqs)-1]
		n := gc.sess.Next(buf[off:], r)
		if n == 0 || r.Cmd == protocol.CmdNone {
			b.reqs = b.reqs[:len(b.reqs)-1]
		}
		if n == 0 {
			break
		}
		off += n
	}
	if off > 0 && len(b.reqs) == 0 {
		// Only bytes of a rejected value were swallowed: nothing to keep.
		_, _ = gc.c.Discard(off)
		off = 0
	}
	if off > 0 {
		old := b.arena
		b.arena = append(b.arena, buf[:off]...)
		if cap(old) > 0 && &old[:1][0] != &b.arena[:1][0] {
			for i := 0; i < start; i++ {
				b.reqs[i].Rebase(old, b.arena)
			}
		}
		to := b.arena[len(old):]
		for i := start; i < len(b.reqs); i++ {
			b.reqs[i].Rebase(buf, to)
		}
		_, _ = gc.c.Discard(off)
		gc.s.limits.add(off)
		gc.progressed()
	}
	if len(b.reqs) == 0 {
		b.since = time.Time{}
	}
	return gc.framePaused
}

// runSlice runs a slice of the connection on a pool task, then carries out
// what the state machine says: parked again (requeue) with more to run.
func (gc *gconn) runSlice() {
	st := gc.slice()
	if st == stepRequeue {
		gc.s.yields.Add(1)
	}
	gc.do(st)
}

// slice runs up to ReqsPerEvent requests as the connection's executor off
// the loop: a pool task, or whoever runs an inline connection's leftovers
// after the loop let go. It returns the step the state machine gives.
func (gc *gconn) slice() step {
	src, st, ok := gc.begin()
	if !ok {
		return st
	}
	end := gc.run(&src)
	b := src.b
	if b == nil {
		gc.leftover = gc.leftover[src.off:]
		if end == endDrained {
			gc.leftover = nil // at most a partial request is left
		}
	}
	done := b != nil && gc.curIdx == len(b.reqs) && !gc.unfinished
	if done {
		observeSince(gc.s.cfg.ObserveLatency, b.since)
		gc.s.limits.add(-len(b.arena))
		b.reset()
		if cap(b.arena) > maxKeptBuffer {
			b.arena = nil
		}
		gc.cur, gc.curIdx = nil, 0
	}

	gc.mu.Lock()
	if done {
		gc.spare = b
	}
	switch end {
	case endOverflow:
		gc.stop = true
		gc.w.abortLocked()
	case endClose:
		gc.stop = true
	}
	if gc.stop {
		gc.dropLocked()
	}
	more := gc.unfinished || gc.cur != nil || gc.framedLocked() > 0 || (gc.detached && len(gc.leftover) > 0)
	st = gc.sliceDone(end == endBlocked, more)
	gc.mu.Unlock()
	if end == endClose || end == endOverflow {
		_ = gc.c.Close()
	}
	return st
}

// framedLocked returns the requests framed for a worker and not taken yet.
func (gc *gconn) framedLocked() int {
	if gc.pending == nil {
		return 0
	}
	return len(gc.pending.reqs)
}

// begin starts a slice (state running) and returns what it runs: the batch
// in hand, else the pending batch, made current, else, once the loop let
// go of the connection and nothing framed is left, the leftover input.
// With nothing to run it leaves the connection idle and reports !ok with
// the step to carry out (stepFinish once the loop let go).
func (gc *gconn) begin() (src reqSource, st step, ok bool) {
	gc.mu.Lock()
	framed := gc.framedLocked()
	work := gc.cur != nil || gc.unfinished || framed > 0 || (gc.detached && len(gc.leftover) > 0)
	if ok, st = gc.take(work); !ok {
		gc.dropLocked()
		gc.mu.Unlock()
		return src, st, false
	}
	switch {
	case gc.cur != nil:
		gc.mu.Unlock()
		return reqSource{b: gc.cur}, stepNone, true
	case framed == 0:
		gc.mu.Unlock()
		return reqSource{buf: gc.leftover}, stepNone, true
	}
	b := gc.pending
	next := gc.spare
	if next == nil {
		next = &batch{}
	}
	gc.pending, gc.spare = next, nil
	resume := gc.framePaused && !gc.detached
	gc.framePaused = false
	gc.mu.Unlock()
	if resume {
		_ = gc.c.Wake(nil) // frame what the loop left in gnet's buffer
	}
	gc.cur, gc.curIdx = b, 0
	return reqSource{b: b}, stepNone, true
}

// abandon closes a connection whose slice panicked outside the session's
// own recovery (see runSliceSafely): what it has not run is dropped, and
// it is finished if gnet already let go of it.
func (gc *gconn) abandon() {
	gc.mu.Lock()
	gc.stop = true
	gc.dropLocked()
	gc.unfinished = false
	st := gc.idle(false)
	gc.w.abortLocked()
	gc.mu.Unlock()
	_ = gc.c.Close()
	gc.do(st)
}

// dropLocked discards the requests not yet run (the connection stopped).
func (gc *gconn) dropLocked() {
	gc.leftover = nil
	if gc.cur != nil {
		gc.s.limits.add(-len(gc.cur.arena))
		gc.cur.reset()
		gc.cur, gc.curIdx = nil, 0
	}
	if gc.pending != nil && len(gc.pending.arena) > 0 {
		gc.s.limits.add(-len(gc.pending.arena))
		gc.pending.reset()
	}
}

// finish releases the session and has the writer close the socket after the
// last reply. It runs once, on the last executor.
func (gc *gconn) finish() {
	gc.sess.Close()
	gc.w.closeWhenDone(closeLinger)
	gc.s.connMu.Lock()
	delete(gc.s.conns, gc)
	gc.s.connMu.Unlock()
	gc.s.unfinished.Add(-1)
}

// detach runs on the loop when gnet closed the connection (runBuffered
// when the peer did: EOF, reset or an I/O error) or when shutdown drains it:
// the loop will not read, frame or run anything more for it. The requests
// still in gnet's buffer are run anyway, unless a request or the server
// closed the connection: their bytes are copied out (gnet frees its buffers
// after OnClose) and parsed and run by the connection's executor after
// what was framed before: in inline mode here, as long as the writer takes
// their replies, the rest by whoever empties the writer's queue (its resume); in pool mode
// by the workers, a slice at a time.
func (gc *gconn) detach(runBuffered bool) {
	gc.w.leave()
	gc.s.limits.add(-gc.held)
	gc.held = 0
	gc.mu.Lock()
	if gc.detached {
		gc.mu.Unlock()
		return
	}
	if runBuffered && !gc.stop {
		if buf, _ := gc.c.Peek(-1); len(buf) > 0 {
			gc.leftover = append([]byte(nil), buf...)
			_, _ = gc.c.Discard(len(buf))
		}
	}
	// An unfinished reply is work too (inline mode: the loop is its
	// executor while the connection is idle, so reading it here is safe).
	work := len(gc.leftover) > 0 || (gc.pending != nil && len(gc.pending.reqs) > 0) || (!gc.s.pool && gc.unfinished)
	if gc.stop && gc.state == stIdle {
		gc.dropLocked()
	}
	st := gc.letGo(work, gc.s.pool)
	gc.mu.Unlock()
	gc.do(st)
}

// runLeftover runs the input read before the loop let go of an inline
// connection, as its executor (state running), a slice at a time, until
// the writer blocks (its resume calls back here when it drains) or nothing
// is left.
func (gc *gconn) runLeftover() {
	for {
		if st := gc.slice(); st != stepRequeue {
			gc.do(st)
			return
		}
	}
}

// quiet reports whether nothing of the connection is framed, running or
// waiting to be written, for shutdown.
func (gc *gconn) quiet() bool {
	gc.mu.Lock()
	q := gc.state == stIdle && (gc.pending == nil || len(gc.pending.reqs) == 0)
	gc.mu.Unlock()
	return q && gc.w.idle()
}

// drainForShutdown runs on the loop at shutdown: reading stops, and the
// complete requests the connection buffered are handed to its executor.
func (gc *gconn) drainForShutdown() {
	if gc.ep >= 0 && !gc.readPaused {
		if setReading(gc.ep, gc.fd, false) == nil {
			gc.readPaused = true
		}
	}
	gc.detach(true)
}

// moreLocked reports whether the pool executor has requests left to run: a
// reply part, the rest of its batch, or a batch framed since. The writer
// calls it from the executor's write, with gc.mu held (pending is guarded
// by it; the rest is the executor's own).
func (gc *gconn) moreLocked() bool {
	return gc.unfinished || (gc.cur != nil && gc.curIdx < len(gc.cur.reqs)) || len(gc.pending.reqs) > 0
}
