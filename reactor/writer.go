package reactor

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// connWriter sends one connection's replies, in request order, through its
// own duplicate of the socket descriptor (gnet modes).
//
// Whoever executes the connection's requests (its event loop in inline mode,
// the worker running it in pool mode) calls write with each run of replies;
// one goroutine at a time does, so write needs no ordering of its own. write
// tries the socket at once. What the socket does not take is queued, and a
// flusher goroutine, parked in Go's network poller while the socket is full,
// writes the queue out. While the queue holds more than the high-water mark
// (or anything at all while the server's connection buffers are over their
// global limit), write reports the connection blocked: its executor stops
// running requests, and the flusher calls resume once the queue is empty.
//
// Owning a descriptor of its own is what lets replies outlive gnet's side of
// the connection: gnet closes its descriptor as soon as it reads EOF, but the
// socket stays open until the writer closes its duplicate, after the last
// reply of every request read before the close. It also means a write never
// lands on a descriptor number that gnet has closed and reused.
type connWriter struct {
	fd     int      // our duplicate of the socket
	file   *os.File // created on the first write that would block; owns fd from then on
	limits *bufLimits
	resume func() // called by the flusher, without locks held, when a blocked executor may go on

	mu       sync.Mutex
	queue    [][]byte // guarded by mu: replies not yet written; queue[0][off:] goes next
	off      int      // guarded by mu
	queued   int      // guarded by mu: bytes in queue from off on
	flushing bool     // guarded by mu: the flusher goroutine runs (set whenever queued > 0)
	blocked  bool     // guarded by mu: write reported blocked; resume is owed once the queue drains
	failed   bool     // guarded by mu: the peer is gone; replies are dropped from now on
	closing  bool     // guarded by mu: close the descriptor once the queue is empty
	closed   bool     // guarded by mu: the descriptor is closed
	deadline time.Duration
	spare    []byte // guarded by mu: a drained buffer kept for reuse
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

// newConnWriter duplicates fd for a writer. The duplicate shares the socket's
// file status flags, so it is non-blocking like gnet's.
func newConnWriter(fd int, limits *bufLimits, resume func()) (*connWriter, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &connWriter{fd: dup, limits: limits, resume: resume}, nil
}

// write sends out, or queues what the socket does not take. It returns a
// buffer the caller may reuse for its next replies (out itself, emptied,
// when everything was written) and whether the executor must stop until
// resume is called.
func (w *connWriter) write(out []byte) (reuse []byte, blocked bool) {
	if len(out) == 0 {
		return out, false
	}
	w.mu.Lock()
	if w.failed || w.closed {
		w.mu.Unlock()
		return out[:0], false
	}
	if w.flushing {
		return w.enqueueLocked(out, 0)
	}
	w.mu.Unlock()
	// Nothing is queued and no flusher runs: only this goroutine writes.
	n, err := writeAll(w.fd, out)
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

// enqueueLocked queues out[from:], starting the flusher if none runs, and
// unlocks w.mu. from is non-zero only when the queue is empty (a direct
// write that the socket took in part).
func (w *connWriter) enqueueLocked(out []byte, from int) ([]byte, bool) {
	if len(w.queue) == 0 {
		w.off = from
	}
	w.queue = append(w.queue, out)
	n := len(out) - from
	w.queued += n
	w.limits.add(n)
	start := !w.flushing
	w.flushing = true
	if start && w.file == nil {
		// Register the descriptor with Go's network poller, for the
		// flusher to wait in.
		w.file = os.NewFile(uintptr(w.fd), "tandem-conn")
	}
	blocked := w.queued > w.limits.highWater || w.limits.over()
	if blocked {
		w.blocked = true
	}
	reuse := w.spare
	w.spare = nil
	w.mu.Unlock()
	if start {
		go w.flush()
	}
	return reuse[:0], blocked
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
			w.dropLocked()
			w.flushing = false
			resume := w.blocked
			w.blocked = false
			closeNow := w.closing && !w.closed
			if closeNow {
				w.closeLocked()
			}
			w.mu.Unlock()
			if resume {
				w.resume()
			}
			return
		}
		iov := w.iovLocked()
		deadline := w.deadline
		w.mu.Unlock()
		n, err := w.waitWrite(iov, deadline)
		w.mu.Lock()
		w.consumeLocked(n)
		if err != nil {
			w.failed = true
		}
		w.mu.Unlock()
	}
}

// iovLocked returns the queued bytes as a vector for one writev.
func (w *connWriter) iovLocked() [][]byte {
	iov := make([][]byte, 0, min(len(w.queue), 64))
	for i, b := range w.queue {
		if i == cap(iov) {
			break
		}
		if i == 0 {
			b = b[w.off:]
		}
		iov = append(iov, b)
	}
	return iov
}

// consumeLocked drops n written bytes from the front of the queue.
func (w *connWriter) consumeLocked(n int) {
	w.queued -= n
	w.limits.add(-n)
	for n > 0 {
		rest := len(w.queue[0]) - w.off
		if n < rest {
			w.off += n
			return
		}
		n -= rest
		w.recycleLocked(w.queue[0])
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.off = 0
	}
	if len(w.queue) == 0 {
		w.queue = nil
	}
}

// dropLocked discards whatever is queued (the peer is gone).
func (w *connWriter) dropLocked() {
	w.limits.add(-w.queued)
	w.queue, w.off, w.queued = nil, 0, 0
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
	if !w.flushing {
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
	w.failed = true
	if w.file != nil {
		_ = w.file.SetWriteDeadline(time.Now())
	}
}

func (w *connWriter) closeLocked() {
	w.closed = true
	if w.file != nil {
		_ = w.file.Close()
	} else {
		_ = unix.Close(w.fd)
	}
}

// holdForDrain reports whether the socket refused some of the replies
// (they are queued); if so the executor is owed a resume once they are
// written, as after a blocked write.
func (w *connWriter) holdForDrain() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flushing && !w.failed {
		w.blocked = true
		return true
	}
	return false
}

// idle reports whether nothing is queued.
func (w *connWriter) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.flushing
}
