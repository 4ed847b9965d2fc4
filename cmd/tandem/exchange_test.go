package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// sentinel is sent after a case so the reader knows when the reply is
// complete; its reply is stripped before comparison.
const (
	sentinel      = "version\r\n"
	sentinelReply = "VERSION 1.6.18\r\n"
)

// hangGuard bounds every wait for a server: a correct server answers long
// before it, so it only turns a hang into a failure.
const hangGuard = time.Minute

// exchange sends req on a fresh connection followed by the sentinel and
// returns everything received before the sentinel's reply, and whether the
// server closed the connection. A server that neither answers the sentinel
// nor closes within the hang guard is an error: the differential cases
// never leave a server waiting for input.
func exchange(addr, req string) (reply string, closed bool, err error) {
	got, state, err := exchangeUntil(addr, req+sentinel, endsWith(sentinelReply))
	if err == nil && state == inSync {
		got = got[:len(got)-len(sentinelReply)]
	}
	return string(got), state == closedConn, err
}

// exchangeUntil writes req on a fresh connection and returns what the
// server sends until done holds or it closes (see settle, without quiet).
func exchangeUntil(addr, req string, done func([]byte) bool) ([]byte, streamState, error) {
	c, err := net.DialTimeout("tcp", addr, hangGuard)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	r := newReplyReader(c)
	_ = c.SetWriteDeadline(time.Now().Add(hangGuard))
	// The server may close while we write (e.g. an overlong line): the
	// reader sees the close.
	_, _ = io.WriteString(c, req)
	state, err := r.settle(done, 0)
	return r.take(), state, err
}

// endsWith reports whether a reply ends in suffix.
func endsWith(suffix string) func([]byte) bool {
	return func(b []byte) bool { return bytes.HasSuffix(b, []byte(suffix)) }
}

// replyReader collects, in the background, everything a server sends on one
// connection, so that a test can write (even more than the socket buffers
// hold) while the replies are read, and wait for what it expects.
type replyReader struct {
	c    net.Conn
	wake chan struct{} // signalled after every read

	mu   sync.Mutex
	buf  []byte    // guarded by mu: received, not yet taken
	last time.Time // guarded by mu: when bytes last arrived
	err  error     // guarded by mu: why reading stopped (the server closed)
}

// newReplyReader starts reading c until it fails or is closed.
func newReplyReader(c net.Conn) *replyReader {
	r := &replyReader{c: c, wake: make(chan struct{}, 1), last: time.Now()}
	go func() {
		b := make([]byte, 64<<10)
		for {
			n, err := c.Read(b)
			r.mu.Lock()
			r.buf = append(r.buf, b[:n]...)
			if n > 0 {
				r.last = time.Now()
			}
			if err != nil {
				r.err = err
			}
			r.mu.Unlock()
			select {
			case r.wake <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

// await waits until done holds for the bytes received, reading stops, or
// the deadline passes. It reports whether done held, and why reading
// stopped, if it did.
func (r *replyReader) await(done func([]byte) bool, deadline time.Time) (ok bool, stopped error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		r.mu.Lock()
		ok, stopped = done(r.buf), r.err
		r.mu.Unlock()
		if ok || stopped != nil {
			return ok, stopped
		}
		select {
		case <-r.wake:
		case <-timer.C:
			return false, nil
		}
	}
}

// lastArrival is when bytes last arrived.
func (r *replyReader) lastArrival() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// take returns the bytes received so far and forgets them.
func (r *replyReader) take() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buf
	r.buf = nil
	return b
}

// settle decides what the connection did with a request and its sentinel,
// once both are written: the reply ended (done holds: inSync) or the server
// closed (closedConn). With quiet > 0 a third outcome is allowed: the
// server swallows the input (it is still reading a declared value). No
// reply proves that, so it is decided only after the server has read every
// byte sent (testenv.WaitRead, a fence without timing) and then sent
// nothing for quiet. Anything else within the hang guard is an error.
func (r *replyReader) settle(done func([]byte) bool, quiet time.Duration) (streamState, error) {
	guard := time.Now().Add(quiet + hangGuard)
	state := func(ok bool, stopped error) (streamState, bool) {
		switch {
		case ok:
			return inSync, true
		case stopped != nil:
			return closedConn, true
		}
		return 0, false
	}
	if quiet == 0 {
		if s, ok := state(r.await(done, guard)); ok {
			return s, nil
		}
		return swallowed, fmt.Errorf("neither the sentinel's reply nor a close within %v", hangGuard)
	}
	// Most replies end at once; only then is the fence worth its cost.
	if s, ok := state(r.await(done, time.Now().Add(quiet/4))); ok {
		return s, nil
	}
	if err := testenv.WaitRead(r.c, hangGuard); err != nil {
		return swallowed, err
	}
	fenced := time.Now()
	for time.Now().Before(guard) {
		since := r.lastArrival()
		if since.Before(fenced) {
			since = fenced
		}
		if s, ok := state(r.await(done, since.Add(quiet))); ok {
			return s, nil
		}
		if !r.lastArrival().After(since) {
			return swallowed, nil // silent for quiet after reading everything
		}
	}
	return swallowed, fmt.Errorf("neither the sentinel's reply, a close nor %v of silence within %v", quiet, hangGuard)
}
