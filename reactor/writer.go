package reactor

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// connWriter sends one connection's replies, in request order (gnet modes).
//
// Whoever executes the connection's requests calls write with each run of
// replies, one goroutine at a time. Who writes them to the socket:
//
//   - pool mode (the default), while gnet has the connection open: its
//     event loop. write queues the replies and lists the writer on the
//     loop's loopOut; the loop's next run writes every listed connection's
//     queue (loopout.go). The workers make no socket calls.
//   - inline mode, while open: the executor is the loop itself, which writes
//     at once on gnet's descriptor.
//   - when the socket refuses bytes (the peer does not keep up), a flusher
//     goroutine, parked in Go's network poller on a duplicate of the socket
//     until the socket takes more, writes the queue out; the duplicate is
//     kept for the rest of the connection's life (a peer slow once is
//     likely slow again: no descriptor churn per slice). gnet offers no
//     callback when a socket drains, and what its own output buffer holds
//     when the connection closes is dropped after one try: the flusher's
//     duplicate is how tandem waits for a slow reader without either.
//   - after gnet let go of the connection (the peer closed or half-closed
//     it, or shutdown drained it; see leave): the executor writes on a
//     duplicate taken on the loop before gnet closed its descriptor, and
//     the flusher when the socket is full. So requests read before a close
//     still run and, when the peer still reads, are answered, and no write
//     lands on a descriptor number that gnet has closed and reused.
//
// While the queue holds more than the high-water mark (or anything at all
// while the server's connection buffers are over their global limit; or,
// for the loop to write, more than loopQueueMax), write reports the
// connection blocked: its executor stops running requests, and
// resume is called once the queue is empty.
type connWriter struct {
	limits *bufLimits
	resume func() // called without locks held when a blocked executor may go on
	// moreLocked, if set, reports whether the executor has requests left to
	// run, in hand or framed for it; called by the executor, with mu held.
	moreLocked func() bool
	out        *loopOut // the connection's event loop's writer list
	// viaLoop: executors hand replies to the loop while attached (pool
	// mode).
	viaLoop bool

	// mu is the connection's one mutex, shared with its gconn (gconn.mu):
	// no code path holds it across a call from the writer's state to the
	// connection's or back (see gconn's lock order).
	mu       *sync.Mutex
	fd       int      // guarded by mu: the descriptor written: gnet's while attached and not own, -1 when none
	gnetFD   int      // gnet's descriptor, valid while attached
	own      bool     // guarded by mu: fd is a duplicate of tandem's own, closed by it
	file     *os.File // guarded by mu: wraps an own fd while a flusher waits in Go's poller
	attached bool     // guarded by mu: gnet has the connection open (see leave)
	queue    [][]byte // guarded by mu: replies not yet written; queue[0][off:] goes next
	off      int      // guarded by mu
	queued   int      // guarded by mu: bytes in queue from off on
	listed   bool     // guarded by mu: on the loop's list for its next run
	flushing bool     // guarded by mu: the flusher goroutine runs and alone writes
	blocked  bool     // guarded by mu: write reported blocked; resume is owed once the queue drains
	failed   bool     // guarded by mu: the peer is gone; replies are dropped from now on
	closing  bool     // guarded by mu: close the descriptor once the queue is empty
	closed   bool     // guarded by mu: the writer is done
	deadline time.Duration
	spare    []byte   // guarded by mu: a drained buffer kept for reuse
	iov      [][]byte // the writev vector of whoever writes the queue (loop or flusher)
}

// bufLimits is the server-wide accounting of connection buffers.
type bufLimits struct {
	highWater int          // per-connection queued output that blocks its executor
	limit     int64        // all connections' buffered bytes above which queued output blocks; 0 = none
	used      atomic.Int64 // bytes of connection buffers (queued output, framed and held input)
}

func (l *bufLimits) add(n int) {
	if n != 0 {
		l.used.Add(int64(n))
	}
}

func (l *bufLimits) over() bool { return l.limit > 0 && l.used.Load() > l.limit }

// newConnWriter returns the writer of a connection gnet opened on fd, whose
// loop runs out's list, guarded by the connection's mutex mu. In pool mode
// the loop writes the replies (viaLoop).
func newConnWriter(fd int, mu *sync.Mutex, limits *bufLimits, out *loopOut, pool bool, resume func()) *connWriter {
	return &connWriter{mu: mu, fd: fd, gnetFD: fd, attached: true, limits: limits, out: out, resume: resume, viaLoop: pool}
}

// write sends out, or queues it. It returns a buffer the caller may reuse
// for its next replies (out itself, emptied, when everything was written)
// and whether the executor must stop until resume is called.
func (w *connWriter) write(out []byte) (reuse []byte, blocked bool) {
	if len(out) == 0 {
		return out, false
	}
	w.mu.Lock()
	if w.failed || w.closed {
		w.mu.Unlock()
		return out[:0], false
	}
	if (w.viaLoop && w.attached) || w.busyLocked() {
		return w.enqueueLocked(out, 0)
	}
	fd := w.fd
	w.mu.Unlock()
	// Nothing is queued, listed or flushing: only this goroutine writes
	// (the loop itself in inline mode; the executor after leave).
	n, err := writeAll(fd, out)
	if err == nil {
		return out[:0], false
	}
	w.mu.Lock()
	if err != unix.EAGAIN {
		w.failed = true
		w.mu.Unlock()
		return out[:0], false
	}
	return w.enqueueLocked(out, n)
}

// loopQueueMax is what an executor may have queued for the loop to write
// (pool mode) before it stops until the loop wrote it. The loop's copy into
// the kernel costs ~5x the CPU per byte when what it copies was queued long
// enough to leave the processor caches: 400 clients that pipeline 4 KB gets
// and never read had the loops copy 700 MB from queues of up to the
// high-water mark each, 1.4 CPU-s of the server's 2.6 in 5 s, and a probe
// beside them waited 40-140 ms at p99; with this bound 0.3 of 1.2 CPU-s and
// 4-37 ms (docs/benchmarks.md). It stops only an executor with requests
// left to run (moreLocked): one with nothing left would be handed back to
// the pool for nothing once the loop wrote its reply.
const loopQueueMax = writeChunk

// busyLocked reports whether replies wait for the loop or the flusher.
func (w *connWriter) busyLocked() bool { return w.listed || w.flushing || w.queued > 0 }

// enqueueLocked queues out[from:] and unlocks w.mu. from is non-zero only
// when the queue is empty (a direct write that the socket took in part);
// then the socket is full and the flusher takes over, else the loop is
// asked to write (kick).
func (w *connWriter) enqueueLocked(out []byte, from int) ([]byte, bool) {
	if len(w.queue) == 0 {
		w.off = from
	}
	w.queue = append(w.queue, out)
	n := len(out) - from
	w.queued += n
	w.limits.add(n)
	blocked := w.queued > w.limits.highWater || w.limits.over() ||
		(w.viaLoop && w.attached && w.queued > loopQueueMax && w.moreLocked != nil && w.moreLocked())
	if blocked {
		w.blocked = true
	}
	reuse := w.spare
	w.spare = nil
	list := w.kickLocked(from > 0)
	w.mu.Unlock()
	if list {
		w.out.add(w)
	}
	return reuse[:0], blocked
}

// kickLocked gets the queue written, unless the loop or the flusher is on it
// already: by the loop's next run while gnet has the connection open and its
// socket was not just found full, else by the flusher. It reports whether
// the caller must list w on its loop once it has unlocked w.mu.
func (w *connWriter) kickLocked(full bool) bool {
	if w.listed || w.flushing {
		return false
	}
	if w.attached && !full {
		w.listed = true
		return true
	}
	w.startFlusherLocked()
	return false
}

// startFlusherLocked starts the flusher on a duplicate of the socket,
// registered with Go's network poller. Without a duplicate (descriptors
// exhausted, or gnet let go of the socket) the flusher only drops the queue
// and resumes the executor.
func (w *connWriter) startFlusherLocked() {
	if !w.ownLocked() {
		w.failed = true
	} else if w.file == nil {
		w.file = os.NewFile(uintptr(w.fd), "tandem-conn")
	}
	w.flushing = true
	go w.flush()
}

// ownLocked makes fd a duplicate of tandem's own, if it is not one already.
// A duplicate shares the socket's file status flags, so it is non-blocking
// like gnet's. gnet's descriptor is duplicated only while gnet has the
// connection open: on its loop (leave), or by a writer the loop is not
// going to close meanwhile (the flusher starts from the loop in pool mode,
// from the executor, the loop, in inline mode).
func (w *connWriter) ownLocked() bool {
	if w.own {
		return true
	}
	if !w.attached {
		return false
	}
	dup, err := unix.FcntlInt(uintptr(w.gnetFD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false
	}
	w.fd, w.own = dup, true
	return true
}

// dropFDLocked closes an own descriptor, leaving none.
func (w *connWriter) dropFDLocked() {
	if w.own {
		if w.file != nil {
			_ = w.file.Close()
		} else {
			_ = unix.Close(w.fd)
		}
	}
	w.file, w.own, w.fd = nil, false, -1
}

// leave runs on the loop when gnet lets go of the connection (OnClose,
// before gnet closes its descriptor; or shutdown's drain). From then on the
// writer writes through a duplicate of its own (unless it failed), and what
// is queued or listed goes to the flusher: the loop writes no more for it.
func (w *connWriter) leave() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.attached {
		return
	}
	if !w.failed && !w.closed && !w.ownLocked() {
		w.failed = true
	}
	w.attached = false
	if !w.own {
		w.fd = -1
	}
	if (w.queued > 0 || w.listed) && !w.flushing && !w.closed {
		w.startFlusherLocked()
	}
}

// abandon drops a listed writer's queue when its loop cannot run any more
// (the engine stopped).
func (w *connWriter) abandon() {
	w.mu.Lock()
	w.listed = false
	if w.flushing || w.closed {
		w.mu.Unlock()
		return
	}
	w.failed = true
	w.finishLocked()
}

// finishLocked ends a turn of writing the queue, written or given up: it
// drops what is left (the peer is gone), closes the descriptor when asked
// to, unlocks w.mu and resumes a blocked executor.
func (w *connWriter) finishLocked() {
	w.dropLocked()
	resume := w.blocked
	w.blocked = false
	if w.closing && !w.closed {
		w.closeLocked()
	}
	w.mu.Unlock()
	if resume {
		w.resume()
	}
}

// queuedLen returns the bytes queued.
func (w *connWriter) queuedLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

// flushOnLoop writes the queue on the loop's run (loopout.go) and returns
// the bytes written. What the socket does not take goes to the flusher.
func (w *connWriter) flushOnLoop() (written int) {
	w.mu.Lock()
	w.listed = false
	if w.flushing || w.closed {
		w.mu.Unlock()
		return 0
	}
	for w.queued > 0 && !w.failed {
		n, err := unix.Writev(w.fd, w.iovLocked())
		w.clearIOV()
		if n > 0 {
			w.consumeLocked(n)
			written += n
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			w.startFlusherLocked()
			w.mu.Unlock()
			return written
		case err != nil:
			w.failed = true
		case n <= 0:
			w.failed = true
		}
	}
	w.finishLocked()
	return written
}

// writeAll writes b to the non-blocking descriptor fd until it is written
// or the socket is full (unix.EAGAIN, with the count written before).
func writeAll(fd int, b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Write(fd, b[done:])
		if n > 0 {
			done += n
		}
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return done, err
		case n == 0:
			return done, unix.EIO
		}
	}
	return done, nil
}

// flush writes the queue out, waiting in the network poller while the socket
// is full, until the queue is empty or the peer is gone.
func (w *connWriter) flush() {
	for {
		w.mu.Lock()
		if w.queued == 0 || w.failed {
			w.flushing = false
			w.finishLocked()
			return
		}
		iov := w.iovLocked()
		deadline := w.deadline
		w.mu.Unlock()
		n, err := w.waitWrite(iov, deadline)
		w.mu.Lock()
		w.clearIOV()
		w.consumeLocked(n)
		if err != nil {
			w.failed = true
		}
		w.mu.Unlock()
	}
}

// iovLocked returns the queued bytes as a vector for one writev, in w.iov:
// the loop or the flusher, whichever writes the queue, uses it.
func (w *connWriter) iovLocked() [][]byte {
	iov := w.iov[:0]
	for i, b := range w.queue {
		if i == 64 {
			break
		}
		if i == 0 {
			b = b[w.off:]
		}
		iov = append(iov, b)
	}
	w.iov = iov
	return iov
}

// clearIOV drops the vector's references to written buffers.
func (w *connWriter) clearIOV() {
	clear(w.iov)
	w.iov = w.iov[:0]
}

// consumeLocked drops n written bytes from the front of the queue.
func (w *connWriter) consumeLocked(n int) {
	w.queued -= n
	w.limits.add(-n)
	done := 0 // buffers written whole
	for n > 0 {
		rest := len(w.queue[done]) - w.off
		if n < rest {
			w.off += n
			break
		}
		n -= rest
		w.recycleLocked(w.queue[done])
		done++
		w.off = 0
	}
	if done > 0 {
		// Move the rest to the front, keeping the vector's array: a
		// connection that queues one reply at a time allocates none.
		left := copy(w.queue, w.queue[done:])
		clear(w.queue[left:])
		w.queue = w.queue[:left]
		w.shrinkQueueLocked()
	}
}

// dropLocked discards whatever is queued (the peer is gone).
func (w *connWriter) dropLocked() {
	w.limits.add(-w.queued)
	clear(w.queue)
	w.queue, w.off, w.queued = w.queue[:0], 0, 0
	w.shrinkQueueLocked()
}

// maxKeptQueue bounds the queue vector kept for reuse once empty (a burst of
// pushed lines may have grown it).
const maxKeptQueue = 64

func (w *connWriter) shrinkQueueLocked() {
	if len(w.queue) == 0 && cap(w.queue) > maxKeptQueue {
		w.queue = nil
	}
}

func (w *connWriter) recycleLocked(b []byte) {
	if w.spare == nil && cap(b) <= maxKeptBuffer {
		w.spare = b[:0]
	}
}

// waitWrite writes iov, waiting in Go's network poller while the socket is
// full. It runs on the flusher, which alone uses w.file while flushing.
func (w *connWriter) waitWrite(iov [][]byte, deadline time.Duration) (int, error) {
	rc, err := w.file.SyscallConn()
	if err != nil {
		return 0, err
	}
	if deadline > 0 {
		_ = w.file.SetWriteDeadline(time.Now().Add(deadline))
	}
	var n int
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		n, werr = unix.Writev(int(fd), iov)
		if n < 0 {
			n = 0
		}
		return werr != unix.EAGAIN
	})
	if werr == nil && err != nil {
		werr = err // deadline or poller error
	}
	if werr == nil && n == 0 {
		werr = unix.EIO
	}
	return n, werr
}

// closeWhenDone closes the descriptor once every queued reply is written, or
// at once when nothing is queued. After a close, each write of the queue must
// make progress within linger or the rest is dropped.
func (w *connWriter) closeWhenDone(linger time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if !w.flushing && !w.listed {
		w.closeLocked()
		return
	}
	w.closing = true
	w.deadline = linger
	if w.file != nil {
		_ = w.file.SetWriteDeadline(time.Now().Add(linger))
	}
}

// abort makes the writer drop queued and future replies (the connection is
// closed for an error, or the server gives up on it). The descriptor itself
// is closed by closeWhenDone, once the connection's executor is done with
// it, so that no direct write can land on a closed (and reused) number.
func (w *connWriter) abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.abortLocked()
}

// abortLocked is abort with the connection's mutex held.
func (w *connWriter) abortLocked() {
	w.failed = true
	if w.file != nil {
		_ = w.file.SetWriteDeadline(time.Now())
	}
}

func (w *connWriter) closeLocked() {
	w.closed = true
	w.dropFDLocked()
}

// holdForDrain reports whether the socket refused some of the replies
// (they are queued); if so the executor is owed a resume once they are
// written, as after a blocked write.
func (w *connWriter) holdForDrain() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.busyLocked() && !w.failed {
		w.blocked = true
		return true
	}
	return false
}

// idle reports whether nothing is queued.
func (w *connWriter) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.busyLocked()
}
