package reactor

import (
	"errors"
	"net"
	"syscall"
)

// Pusher is implemented by a Session that writes to its connection between
// replies: memcached's watch command turns a connection into a stream of log
// lines. The reactor calls SetPush once, before the first Execute, with the
// connection's descriptor (the lines name it) and push.
//
// push(p) writes p after every reply handed out so far and does not retain
// p; it is safe from any goroutine. In the gnet modes it queues p for the
// connection's writer and returns at once; in goroutine mode it writes p,
// blocking while the peer does not read. It returns the bytes still queued
// for the peer (always 0 in goroutine mode), and an error once the
// connection is closed. push(nil) only reports the queue.
//
// The executor writes a connection's replies without a lock of its own, so
// a session must stop producing replies once it pushes: after watch it
// answers nothing more (as memcached, which stops reading the connection).
type Pusher interface {
	SetPush(fd int, push func(p []byte) (queued int, err error))
}

// errPushClosed is push's error once the connection is gone.
var errPushClosed = errors.New("reactor: connection closed")

// attachPush hands a gnet connection's push to its session, if it wants one.
func (gc *gconn) attachPush() {
	if p, ok := gc.sess.(Pusher); ok {
		p.SetPush(gc.fd, gc.w.push)
	}
}

// attachNetPush hands a goroutine-mode connection's push to its session, if
// it wants one: a net.Conn is safe for concurrent writes, each written
// whole, and the connection goroutine has written every reply out before
// it executes the next request.
func attachNetPush(sess Session, c net.Conn) {
	p, ok := sess.(Pusher)
	if !ok {
		return
	}
	fd := -1
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(d uintptr) { fd = int(d) })
		}
	}
	p.SetPush(fd, func(b []byte) (int, error) {
		if len(b) == 0 {
			return 0, nil
		}
		if _, err := c.Write(b); err != nil {
			return 0, errPushClosed
		}
		return 0, nil
	})
}

// push queues a copy of p behind every reply already handed to write, for
// the loop (or, once gnet let go of the connection, the drainer) to write
// out, and returns the bytes queued; see Pusher. It never blocks and never
// marks the executor blocked: the pushing session bounds what it pushes by
// the queue it is told about.
func (w *connWriter) push(p []byte) (int, error) {
	w.mu.Lock()
	if w.st.failed || w.st.closed || w.st.closing {
		w.mu.Unlock()
		return 0, errPushClosed
	}
	if len(p) == 0 {
		queued := w.queued
		w.mu.Unlock()
		return queued, nil
	}
	if len(w.queue) == 0 {
		w.off = 0
	}
	w.queue = append(w.queue, append([]byte(nil), p...))
	w.queued += len(p)
	w.limits.add(len(p))
	queued := w.queued
	w.doLocked(w.st.queued(false))
	return queued, nil
}
