package reactor

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// connWriter sends one connection's replies, in request order (gnet modes),
// under the writer rule: one writer at a time per connection, and while gnet
// holds the connection that writer is its event loop (writerState in
// connstate.go has the states and their transitions):
//
//   - inline mode's loop, the executor, writes at once on gnet's
//     descriptor; pool mode's replies and pushed lines are queued, and the
//     writer listed on the loop's loopOut, whose next run writes them
//     (loopout.go). Workers make no socket calls.
//   - a socket that refuses bytes gets a waker, parked in Go's network
//     poller on a duplicate of the descriptor (taken on the loop, kept for
//     the connection's life: a peer slow once is likely slow again); it
//     writes nothing, and lists the writer again once the socket takes bytes.
//   - after gnet let go of the connection (see leave), the drainer, alone,
//     writes what is owed on that duplicate, taken before gnet closed its
//     descriptor: requests read before a close are still answered, and no
//     write lands on a descriptor number gnet has closed and reused.
//
// Not gnet's own write path (Conn.Write, AsyncWritev): it has no callback
// when its output buffer drains, which the executor's resume needs; what
// that buffer holds when the connection closes is tried once and dropped (a
// half-closed client would lose replies); it switches the descriptor's epoll
// interest between read and read-write, which would undo read pausing
// (readpause.go); and on a write error it closes the connection from inside
// the write, re-entering OnClose under the writer.
//
// While the queue holds more than the high-water mark (or anything at all
// while the server's connection buffers are over their global limit; or,
// for the loop to write, more than loopQueueMax), write reports the
// connection blocked: its executor stops running requests, and resume is
// called once the queue is empty.
type connWriter struct {
	limits *bufLimits
	resume func() // called without locks held when a blocked executor may go on
	// moreLocked, if set, reports whether the executor has requests left to
	// run, in hand or framed for it; called by the executor, with mu held.
	moreLocked func() bool
	out        *loopOut // the connection's event loop's writer list
	viaLoop    bool     // pool mode: executors hand replies to the loop while attached
	gnetFD     int      // gnet's descriptor, written by the loop only, while attached

	// mu is the connection's one mutex, shared with its gconn (gconn.mu):
	// no code path holds it across a call from the writer's state to the
	// connection's or back (see gconn's lock order).
	mu       *sync.Mutex
	st       writerState // guarded by mu
	fd       int         // guarded by mu: the duplicate, -1 until taken (on the loop) or after close
	file     *os.File    // guarded by mu: wraps fd for Go's network poller
	queue    [][]byte    // guarded by mu: replies not yet written; queue[0][off:] goes next
	off      int         // guarded by mu
	queued   int         // guarded by mu: bytes in queue from off on
	deadline time.Duration
	spare    []byte   // guarded by mu: a drained buffer kept for reuse
	iov      [][]byte // the writev vector of whoever writes the queue (loop or drainer)
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
	return &connWriter{mu: mu, fd: -1, gnetFD: fd, st: writerState{attached: true}, limits: limits, out: out,
		resume: resume, viaLoop: pool}
}

// write sends out, or queues it. It returns a buffer the caller may reuse
// for its next replies (out itself, emptied, when everything was written)
// and whether the executor must stop until resume is called.
func (w *connWriter) write(out []byte) (reuse []byte, blocked bool) {
	if len(out) == 0 {
		return out, false
	}
	w.mu.Lock()
	if w.st.failed || w.st.closed {
		w.mu.Unlock()
		return out[:0], false
	}
	if w.viaLoop || !w.st.attached || w.st.out != outIdle {
		return w.enqueueLocked(out, 0)
	}
	w.mu.Unlock()
	// Inline mode, nothing queued: the executor is the loop, which alone
	// writes while gnet has the connection open.
	n, err := writeAll(w.gnetFD, out)
	if err == nil {
		return out[:0], false
	}
	w.mu.Lock()
	if err != unix.EAGAIN {
		w.st.failed = true
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
// 4-37 ms (docs/benchmarks-appendix.md, "Clients that never read"). It stops only an executor with requests
// left to run (moreLocked): one with nothing left would be handed back to
// the pool for nothing once the loop wrote its reply.
const loopQueueMax = writeChunk

// enqueueLocked queues out[from:] and unlocks w.mu. from is non-zero only
// when the queue is empty (the loop's direct write that the socket took in
// part): then the socket is full and a waker waits for it.
func (w *connWriter) enqueueLocked(out []byte, from int) ([]byte, bool) {
	if len(w.queue) == 0 {
		w.off = from
	}
	w.queue = append(w.queue, out)
	n := len(out) - from
	w.queued += n
	w.limits.add(n)
	blocked := w.queued > w.limits.highWater || w.limits.over() ||
		(w.viaLoop && w.st.attached && w.queued > loopQueueMax && w.moreLocked != nil && w.moreLocked())
	if blocked {
		w.st.blocked = true
	}
	reuse := w.spare
	w.spare = nil
	w.doLocked(w.st.queued(from > 0))
	return reuse[:0], blocked
}

// doLocked carries out the effects of a writer transition and unlocks w.mu.
// fxWait runs on the loop (the only writer that finds the socket full while
// attached), where gnet's descriptor is valid to duplicate.
func (w *connWriter) doLocked(f fx) {
	if f&(fxWait|fxDrain) != 0 && !w.pollableLocked() {
		// No duplicate (descriptors exhausted, or gnet let go without
		// one): nobody can wait for the socket; the replies are dropped.
		w.st.failed = true
		f = w.st.idle()
	}
	if f&fxDrop != 0 {
		w.dropLocked()
	}
	if f&fxClose != 0 {
		w.dropFDLocked()
	}
	switch {
	case f&fxWait != 0:
		go w.wait()
	case f&fxDrain != 0:
		go w.drain()
	}
	w.mu.Unlock()
	if f&fxList != 0 {
		w.out.add(w)
	}
	if f&fxResume != 0 {
		w.resume()
	}
}

// pollableLocked makes fd a duplicate of gnet's descriptor registered with
// Go's network poller, if it is not one already. A duplicate shares the
// socket's file status flags, so it is non-blocking like gnet's. gnet's
// descriptor is duplicated only while gnet has the connection open, on its
// loop (the loop's write found the socket full, or leave).
func (w *connWriter) pollableLocked() bool {
	if w.file != nil {
		return true
	}
	if !w.st.attached {
		return false
	}
	dup, err := unix.FcntlInt(uintptr(w.gnetFD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false
	}
	w.fd, w.file = dup, os.NewFile(uintptr(dup), "tandem-conn")
	if w.deadline > 0 {
		_ = w.file.SetWriteDeadline(time.Now().Add(w.deadline))
	}
	return true
}

// dropFDLocked closes the duplicate, leaving none.
func (w *connWriter) dropFDLocked() {
	if w.file != nil {
		_ = w.file.Close()
	}
	w.file, w.fd = nil, -1
}

// leave runs on the loop when gnet lets go of the connection (OnClose,
// before gnet closes its descriptor; or shutdown's drain). It takes the
// duplicate the drainer will write on (unless the writer failed): from now
// on the loop writes no more for the connection.
func (w *connWriter) leave() {
	w.mu.Lock()
	if !w.st.attached {
		w.mu.Unlock()
		return
	}
	if !w.st.failed && !w.st.closed && !w.pollableLocked() {
		w.st.failed = true
	}
	w.doLocked(w.st.leave())
}

// abandon drops a listed writer's queue when its loop cannot run any more
// (the engine stopped).
func (w *connWriter) abandon() {
	w.mu.Lock()
	w.doLocked(w.st.abandoned())
}

// queuedLen returns the bytes queued.
func (w *connWriter) queuedLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

// flushOnLoop writes the queue on the loop's run (loopout.go) and returns
// the bytes written. What the socket does not take waits for the waker.
func (w *connWriter) flushOnLoop() (written int) {
	w.mu.Lock()
	if !w.st.loopTurn() {
		w.mu.Unlock()
		return 0
	}
	full := false
	for w.queued > 0 && !w.st.failed && !full {
		n, err := writev(w.gnetFD, w.iovLocked())
		w.clearIOV()
		if n > 0 {
			w.consumeLocked(n)
			written += n
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			full = true
		case err != nil, n <= 0:
			w.st.failed = true
		}
	}
	w.doLocked(w.st.loopWrote(full))
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

// wait is the waker: it waits in Go's network poller until the socket takes
// bytes again (or the wait fails: the deadline of a closing writer, or the
// peer gone), then has the loop write the queue, or, when gnet let go of the
// connection meanwhile, goes on as the drainer. It writes nothing while
// gnet holds the connection.
func (w *connWriter) wait() {
	w.mu.Lock()
	file := w.file
	w.mu.Unlock()
	err := waitWritable(file)
	w.mu.Lock()
	if err != nil {
		w.st.failed = true
	}
	f := w.st.writable(w.queued > 0)
	if f&fxDrain == 0 {
		w.doLocked(f)
		return
	}
	w.mu.Unlock()
	w.drain()
}

// drain is the drainer: it writes the queue out, waiting in the network
// poller while the socket is full, until the queue is empty or the peer is
// gone. It runs only after gnet let go of the connection, and alone.
func (w *connWriter) drain() {
	for {
		w.mu.Lock()
		if w.queued == 0 || w.st.failed {
			w.doLocked(w.st.drained())
			return
		}
		iov := w.iovLocked()
		deadline := w.deadline
		file := w.file
		w.mu.Unlock()
		n, err := waitWrite(file, iov, deadline)
		w.mu.Lock()
		w.clearIOV()
		w.consumeLocked(n)
		if err != nil {
			w.st.failed = true
		}
		w.mu.Unlock()
	}
}

// iovLocked returns the queued bytes as a vector for one writev, in w.iov:
// the loop or the drainer, whichever writes the queue, uses it.
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

// waitWritable waits in Go's network poller until file's socket takes
// bytes, or the wait fails (file's deadline, or an error).
//
// The socket is asked first, and after every wake-up: Go's poller forgets a
// readiness it recorded before the wait starts (it re-arms, as before any
// write of its own), and its notifications are edge-triggered. The peer may
// have read everything between the loop's EAGAIN and this call; that edge
// is gone, no other comes while the peer waits for the rest of a reply, and
// a wait that did not look first would never end (TestWaitWritableDrainedBefore).
func waitWritable(file *os.File) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Write(func(fd uintptr) bool { return writable(int(fd)) })
}

// writable reports whether the socket fd takes bytes now, or has failed
// (the write that follows then reports why).
func writable(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(p, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return true
		}
		return n > 0
	}
}

// waitWrite writes iov on file, waiting in Go's network poller while the
// socket is full. It runs on the drainer, which alone writes on file.
func waitWrite(file *os.File, iov [][]byte, deadline time.Duration) (int, error) {
	rc, err := file.SyscallConn()
	if err != nil {
		return 0, err
	}
	if deadline > 0 {
		_ = file.SetWriteDeadline(time.Now().Add(deadline))
	}
	var n int
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		n, werr = writev(int(fd), iov)
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
	w.deadline = linger
	if w.file != nil {
		_ = w.file.SetWriteDeadline(time.Now().Add(linger))
	}
	w.doLocked(w.st.closeWhenDone())
}

// abort makes the writer drop queued and future replies (the connection is
// closed for an error, or the server gives up on it). The descriptor itself
// is closed by closeWhenDone, once the connection's executor is done with
// it.
func (w *connWriter) abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.abortLocked()
}

// abortLocked is abort with the connection's mutex held: whoever writes the
// queue (a waker or the drainer, woken by the deadline) drops it.
func (w *connWriter) abortLocked() {
	w.st.failed = true
	if w.file != nil {
		_ = w.file.SetWriteDeadline(time.Now())
	}
}

// holdForDrain reports whether the socket refused some of the replies
// (they are queued); if so the executor is owed a resume once they are
// written, as after a blocked write.
func (w *connWriter) holdForDrain() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.st.out != outIdle && !w.st.failed {
		w.st.blocked = true
		return true
	}
	return false
}

// idle reports whether nothing is queued and nobody is to write.
func (w *connWriter) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st.out == outIdle && w.queued == 0
}
