package reactor

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"github.com/tandemcache/tandem/protocol"
)

// gconn is the state of one gnet connection in pool or inline mode.
//
// Ownership: c's non-concurrent methods, req and out are used only on the
// connection's event loop. In pool mode the loop frames requests into
// pending and at most one worker at a time (the one that set running)
// executes swapped-out batches; mu guards the hand-off. Lock order: mu, then
// wmu; parking.mu and outbox.mu are never held with either.
type gconn struct {
	s          *gnetServer
	c          gnet.Conn
	sess       Session
	lastActive atomic.Int64 // unix nanoseconds of the last traffic
	// lastCmd is when the connection last completed a request (or opened),
	// in unix nanoseconds; set only with an idle timeout, which it drives:
	// like memcached's idle_timeout it counts time since the last command,
	// so a client trickling a partial command byte by byte is still idle.
	lastCmd atomic.Int64

	req protocol.Request // loop-owned scratch request (inline mode)
	out []byte           // loop-owned reply buffer (inline mode)
	lat latencySampler   // loop-owned

	mu      sync.Mutex
	pending *batch // guarded by mu: framed requests not yet taken by a worker
	spare   *batch // guarded by mu: an executed batch kept for reuse
	running bool   // guarded by mu: a worker owns this connection's execution
	paused  bool   // guarded by mu: framing stopped because pending is full
	closed  bool   // guarded by mu: gnet closed the connection
	sessEnd bool   // guarded by mu: sess.Close was called

	box        *outbox // pool mode: carries replies to the connection's loop
	loopClosed bool    // loop-owned: gnet closed the connection

	wmu  sync.Mutex
	free [][]byte // guarded by wmu: reply buffers ready for reuse

	// Worker writes (Config.WorkerWrites): a worker writes a batch's replies
	// straight to the socket while nothing is queued on the loop, and falls
	// back to the outbox otherwise. fdMu keeps the descriptor from being
	// closed (and reused by a new connection) during such a write.
	fd       int
	fdMu     sync.Mutex
	fdClosed bool // guarded by fdMu: set in OnClose, before gnet closes fd
	async    bool // guarded by wmu: replies go through the loop until its queue and buffer drain
	queued   int  // guarded by wmu: replies in the outbox not yet written
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

func newGconn(s *gnetServer, c gnet.Conn) *gconn {
	gc := &gconn{s: s, c: c, sess: s.cfg.NewSession(), lat: newLatencySampler(c.Fd()), fd: c.Fd()}
	if s.pool {
		gc.pending = &batch{}
		gc.box = s.boxes.of(c.EventLoop())
	}
	return gc
}

// execute runs one request, turning a panic into a closed connection.
func (gc *gconn) execute(r *protocol.Request, out []byte) ([]byte, bool) {
	return executeSafely(gc.sess, r, out, gc.s.log, &gc.s.panics)
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

// overInput reports whether the connection buffers more unparsed input than
// allowed, counting it as an overflow close.
func (gc *gconn) overInput() bool {
	if gc.c.InboundBuffered() > gc.s.cfg.MaxInput {
		gc.s.overflow.Add(1)
		gc.s.log.Debug().Int("buffered", gc.c.InboundBuffered()).Msg("closing connection over the input cap")
		return true
	}
	return false
}

// runInline parses and executes every complete request on the loop, then
// writes all replies with one call.
func (gc *gconn) runInline() gnet.Action {
	if gc.waitForBytes() {
		if gc.overInput() {
			return gnet.Close
		}
		return gnet.None
	}
	t0 := gc.lat.start(gc.s.cfg.ObserveLatency)
	buf, _ := gc.c.Peek(-1)
	out := gc.out[:0]
	off := 0
	closeConn := false
	for off < len(buf) && !closeConn {
		n := gc.sess.Next(buf[off:], &gc.req)
		if n == 0 {
			break
		}
		off += n
		if gc.req.Cmd == protocol.CmdNone {
			continue
		}
		out, closeConn = gc.execute(&gc.req, out)
		if len(out)+gc.c.OutboundBuffered() > gc.s.cfg.MaxOutput {
			// One read of pipelined requests can ask for far more than the
			// cap (gets of a large value): stop before buffering it all.
			gc.s.overflow.Add(1)
			gc.out = nil
			return gnet.Close
		}
	}
	if off > 0 {
		_, _ = gc.c.Discard(off)
		gc.progressed()
	}
	if len(out) > 0 {
		_, _ = gc.c.Write(out)
		observeSince(gc.s.cfg.ObserveLatency, t0)
	}
	if cap(out) > maxKeptBuffer {
		out = nil
	}
	gc.out = out[:0]
	if closeConn {
		return gnet.Close
	}
	if gc.c.OutboundBuffered() > gc.s.cfg.MaxOutput {
		gc.s.overflow.Add(1)
		return gnet.Close
	}
	if gc.overInput() {
		return gnet.Close
	}
	return gnet.None
}

// frame moves complete requests from gnet's buffer into the pending batch
// and makes sure a worker will run it.
func (gc *gconn) frame() gnet.Action {
	gc.mu.Lock()
	if gc.paused || gc.waitForBytes() {
		gc.mu.Unlock()
		if gc.overInput() {
			return gnet.Close
		}
		return gnet.None
	}
	buf, _ := gc.c.Peek(-1)
	b := gc.pending
	start := len(b.reqs)
	if start == 0 {
		b.since = gc.lat.start(gc.s.cfg.ObserveLatency)
	}
	off := 0
	limit := gc.s.cfg.MaxPendingInput
	for off < len(buf) {
		if len(b.arena)+off >= limit {
			gc.paused = true
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
		gc.progressed()
	}
	if len(b.reqs) == 0 {
		b.since = time.Time{}
	}
	submit := len(b.reqs) > 0 && !gc.running
	if submit {
		gc.running = true
		gc.s.busy.Add(1)
	}
	gc.mu.Unlock()
	if submit {
		if err := gc.s.cfg.Executor.Submit(gc); err != nil {
			gc.s.park.push(gc)
		}
	}
	if gc.overInput() {
		return gnet.Close
	}
	return gnet.None
}

// Run executes this connection's pending batches on a worker, then any
// connections parked while every worker was busy.
func (gc *gconn) Run() {
	for cur := gc; cur != nil; cur = cur.s.park.pop() {
		cur.drain()
	}
}

// drain executes pending batches until none is left, sending one reply per
// batch.
func (gc *gconn) drain() {
	defer gc.s.busy.Add(-1)
	for {
		gc.mu.Lock()
		b := gc.pending
		if len(b.reqs) == 0 || gc.closed {
			gc.running = false
			end := gc.closed && !gc.sessEnd
			gc.sessEnd = gc.sessEnd || end
			gc.mu.Unlock()
			if end {
				gc.sess.Close()
			}
			return
		}
		next := gc.spare
		if next == nil {
			next = &batch{}
		}
		gc.pending, gc.spare = next, nil
		resume := gc.paused
		gc.paused = false
		gc.mu.Unlock()
		if resume {
			_ = gc.c.Wake(nil)
		}

		out := gc.getBuf()
		closeConn := false
		for i := range b.reqs {
			out, closeConn = gc.execute(&b.reqs[i], out)
			if len(out) > gc.s.cfg.MaxOutput {
				// The batch asks for more output than the cap (pipelined gets
				// of a large value): drop it and close rather than buffer it.
				gc.s.overflow.Add(1)
				out, closeConn = out[:0], true
			}
			if closeConn {
				break
			}
		}
		since := b.since
		b.reset()
		if cap(b.arena) > maxKeptBuffer {
			b.arena = nil
		}
		gc.mu.Lock()
		gc.spare = b
		gc.mu.Unlock()

		gc.send(out, closeConn)
		observeSince(gc.s.cfg.ObserveLatency, since)
		if closeConn {
			gc.mu.Lock()
			gc.closed = true
			gc.mu.Unlock()
		}
	}
}

func (gc *gconn) getBuf() []byte {
	gc.wmu.Lock()
	defer gc.wmu.Unlock()
	if n := len(gc.free); n > 0 {
		b := gc.free[n-1]
		gc.free = gc.free[:n-1]
		return b[:0]
	}
	return make([]byte, 0, 4096)
}

// send hands a batch's replies to the loop, which closes the connection
// after them if closeConn is set. Replies of one connection are sent by one
// worker at a time, so they reach the socket in order.
func (gc *gconn) send(out []byte, closeConn bool) {
	off := 0
	if gc.s.cfg.WorkerWrites && len(out) > 0 {
		gc.wmu.Lock()
		direct := !gc.async
		gc.wmu.Unlock()
		if direct {
			var done bool
			if off, done = gc.writeDirect(out); done {
				gc.recycle(out)
				if closeConn {
					_ = gc.c.Close()
				}
				return
			}
		}
	}
	if len(out) == 0 && !closeConn {
		gc.recycle(out)
		return
	}
	gc.wmu.Lock()
	gc.async = true
	gc.queued++
	gc.wmu.Unlock()
	gc.s.writes.Add(1)
	gc.box.push(reply{gc: gc, out: out, off: off, closeConn: closeConn})
}

// writeDirect writes out to the socket from the worker. It reports done when
// everything was written or the connection is gone; otherwise it returns how
// much was written, for the loop to send the rest when the socket is
// writable.
func (gc *gconn) writeDirect(out []byte) (written int, done bool) {
	gc.fdMu.Lock()
	defer gc.fdMu.Unlock()
	if gc.fdClosed {
		return 0, true
	}
	for written < len(out) {
		n, err := unix.Write(gc.fd, out[written:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return written, false
		case err != nil:
			gc.s.log.Debug().Err(err).Msg("write failed; closing the connection")
			_ = gc.c.Close()
			return written, true
		}
		written += n
	}
	return written, true
}

func (gc *gconn) recycle(b []byte) {
	if cap(b) > maxKeptBuffer {
		return
	}
	gc.wmu.Lock()
	if len(gc.free) < 4 {
		gc.free = append(gc.free, b[:0])
	}
	gc.wmu.Unlock()
}

// flush writes a reply from the outbox, then closes the connection if the
// reply asks for it. It runs on the loop.
func (gc *gconn) flush(r reply) {
	if !gc.loopClosed {
		if r.off < len(r.out) {
			_, _ = gc.c.Write(r.out[r.off:]) // a failed write closes the connection
		}
		if r.closeConn && !gc.loopClosed {
			_ = gc.c.Close()
		}
	}
	gc.flushed(r.out, true)
}

// flushed recycles a reply's buffer once the loop wrote it (onLoop) or
// dropped it, closes a connection whose unsent output is over the cap, and
// lets workers write directly again once nothing is queued or buffered.
func (gc *gconn) flushed(out []byte, onLoop bool) {
	gc.s.writes.Add(-1)
	gc.recycle(out)
	buffered := 0
	if onLoop && !gc.loopClosed {
		if buffered = gc.c.OutboundBuffered(); buffered > gc.s.cfg.MaxOutput {
			gc.s.overflow.Add(1)
			_ = gc.c.Close()
		}
	}
	gc.wmu.Lock()
	gc.queued--
	if gc.queued == 0 && buffered == 0 {
		// Nothing is queued on the loop or waiting in gnet's buffer: a worker
		// may write directly again without overtaking earlier replies.
		gc.async = false
	}
	gc.wmu.Unlock()
}

// onClose runs on the loop when gnet closed the connection.
func (gc *gconn) onClose() {
	gc.loopClosed = true
	gc.fdMu.Lock()
	gc.fdClosed = true
	gc.fdMu.Unlock()
	gc.mu.Lock()
	gc.closed = true
	end := !gc.running && !gc.sessEnd
	gc.sessEnd = gc.sessEnd || end
	gc.mu.Unlock()
	if end {
		gc.sess.Close()
	}
}
