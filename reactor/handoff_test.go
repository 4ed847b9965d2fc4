package reactor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tandemcache/tandem/protocol"
)

// handoffConn plays a gnet connection for one gconn, driven by the test
// on its own goroutine: in holds what gnet has read, and its descriptor is
// one end of a socket pair whose other end, peer, is the client's.
type handoffConn struct {
	gnet.Conn // unused methods panic
	fd        int
	in        []byte
	loop      *handoffLoop
}

func (c *handoffConn) Fd() int                                     { return c.fd }
func (c *handoffConn) RemoteAddr() net.Addr                        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *handoffConn) LocalAddr() net.Addr                         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *handoffConn) EventLoop() gnet.EventLoop                   { return c.loop }
func (c *handoffConn) Peek(int) ([]byte, error)                    { return c.in, nil }
func (c *handoffConn) InboundBuffered() int                        { return len(c.in) }
func (c *handoffConn) Wake(gnet.AsyncCallback) error               { return nil }
func (c *handoffConn) Close() error                                { return nil }
func (c *handoffConn) Discard(n int) (int, error)                  { c.in = c.in[n:]; return n, nil }
func (c *handoffConn) SetContext(any)                              {}
func (c *handoffConn) Context() any                                { return nil }
func (c *handoffConn) OutboundBuffered() int                       { return 0 }
func (c *handoffConn) Write(b []byte) (int, error)                 { return len(b), nil }
func (c *handoffConn) Writev(bs [][]byte) (int, error)             { return 0, nil }
func (c *handoffConn) AsyncWrite([]byte, gnet.AsyncCallback) error { return nil }

// handoffLoop plays the connection's event loop: it has no doorbell (its
// Enroll fails), so a listed writer asks for a run with Execute, which runs
// it at once when now is set (a loop on another core that gets there
// first) and else keeps it for the test to run.
type handoffLoop struct {
	gnet.EventLoop
	now     bool
	pending []gnet.Runnable
}

func (l *handoffLoop) Enroll(context.Context, net.Conn) (<-chan gnet.RegisteredResult, error) {
	return nil, errors.New("no doorbell in this test")
}

func (l *handoffLoop) Execute(_ context.Context, r gnet.Runnable) error {
	if l.now {
		return r.Run(context.Background())
	}
	l.pending = append(l.pending, r)
	return nil
}

func (l *handoffLoop) run() {
	rs := l.pending
	l.pending = nil
	for _, r := range rs {
		_ = r.Run(context.Background())
	}
}

// hookSession is lineSession with a hook run inside Execute: the test acts
// as the loop there, while the worker runs.
type hookSession struct {
	lineSession
	hook func(key string)
	big  int // the reply size of "big"
}

func (s *hookSession) Execute(r *protocol.Request, out []byte) ([]byte, bool) {
	if s.hook != nil {
		s.hook(string(r.Key))
	}
	if string(r.Key) == "big" {
		return append(append(out, bytes.Repeat([]byte("b"), s.big)...), '\n'), false
	}
	return append(append(out, r.Key...), '\n'), false
}

// countExec records submitted tasks without running them: the test runs
// the slices itself.
type countExec struct{ n int }

func (e *countExec) Submit(Task) error { e.n++; return nil }

type handoffRig struct {
	s    *gnetServer
	gc   *gconn
	c    *handoffConn
	sess *hookSession
	exec *countExec
	peer *os.File
}

func newHandoffRig(t *testing.T) *handoffRig {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	r := &handoffRig{sess: &hookSession{big: 8 << 10}, exec: &countExec{}, peer: os.NewFile(uintptr(fds[1]), "peer")}
	cfg := Config{Mode: ModePool, Addrs: []string{"127.0.0.1:0"}, Loops: 1, MaxConns: 10, Workers: 1, Executor: r.exec,
		NewSession: func(net.Addr) Session { return r.sess }, OutputHighWater: 4 << 10, Logger: zerolog.Nop()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r.s = newGnetServer(cfg)
	r.s.epolls.disable()
	r.s.addrs = []net.Addr{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}}
	r.c = &handoffConn{fd: fds[0], loop: &handoffLoop{}}
	r.gc = newGconn(r.s, r.c)
	t.Cleanup(func() {
		r.gc.w.closeWhenDone(time.Millisecond)
		_ = unix.Close(fds[0])
		_ = r.peer.Close()
	})
	return r
}

func (r *handoffRig) state() execState {
	r.gc.mu.Lock()
	defer r.gc.mu.Unlock()
	return r.gc.execState
}

func (r *handoffRig) read(t *testing.T, n int) string {
	t.Helper()
	_ = r.peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(r.peer, b); err != nil {
		t.Fatalf("peer read %d bytes: %v", n, err)
	}
	return string(b)
}

// TestHandoffInputWhileWorkerRuns drives the first lost wake-up: new input
// arrives while the worker runs the connection's slice. The loop frames it
// but must not dispatch the connection again (at most one task per
// connection); the worker, ending its slice, finds it pending and parks the
// connection for its next slice (requeue) instead of going idle, which
// would strand the request.
func TestHandoffInputWhileWorkerRuns(t *testing.T) {
	r := newHandoffRig(t)
	r.c.in = []byte("a\n")
	r.gc.frame()
	if st := r.state(); st.state != stQueued || r.exec.n != 1 {
		t.Fatalf("after the first frame: %v, %d tasks submitted; want queued, 1", st.state, r.exec.n)
	}
	r.sess.hook = func(key string) {
		if key != "a" {
			return
		}
		// The loop, while the worker runs "a": "b" arrives and is framed.
		r.c.in = append(r.c.in, "b\n"...)
		r.gc.frame()
		if st := r.state(); st.state != stRunning || r.exec.n != 1 {
			t.Errorf("input framed while the worker ran: %v, %d tasks submitted; want running, 1", st.state, r.exec.n)
		}
	}
	r.gc.runSlice()
	if st := r.state(); st.state != stQueued {
		t.Fatalf("after the slice with input framed meanwhile: %v, want queued (requeue)", st.state)
	}
	if q, _ := r.s.parked.load(); q != 1 {
		t.Fatalf("%d connections parked, want 1", q)
	}
	r.s.parked.mu.Lock()
	next := r.s.parked.popLocked()
	r.s.parked.mu.Unlock()
	if next != r.gc {
		t.Fatal("the parked connection is not the one that ran")
	}
	r.gc.runSlice()
	if st := r.state(); st.state != stIdle || r.exec.n != 1 {
		t.Fatalf("after the second slice: %v, %d tasks; want idle, 1", st.state, r.exec.n)
	}
	r.c.loop.run()
	if got := r.read(t, 4); got != "a\nb\n" {
		t.Fatalf("peer got %q, want the replies in order", got)
	}
}

// TestHandoffDrainedWhileWorkerRuns drives the second lost wake-up: the
// worker's write blocks (over the high-water mark), and the loop writes the
// queue out and resumes the connection before the worker recorded that it
// stopped. The resume must not be lost: the worker, ending its slice, goes
// on (requeue) instead of blocking for a resume that already came. The
// control case: with the loop not there yet, the connection blocks, and the
// loop's write dispatches it.
func TestHandoffDrainedWhileWorkerRuns(t *testing.T) {
	for _, loopFirst := range []bool{true, false} {
		name := map[bool]string{true: "loop first", false: "worker first"}[loopFirst]
		t.Run(name, func(t *testing.T) {
			r := newHandoffRig(t)
			r.c.loop.now = loopFirst
			r.c.in = []byte("big\nc\n")
			r.s.cfg.ReqsPerEvent = 1
			r.gc.frame()
			r.gc.runSlice()
			st := r.state()
			switch {
			case loopFirst && (st.state != stQueued || st.owed):
				t.Fatalf("resumed before the worker stopped: %v owed %v; want queued, not owed", st.state, st.owed)
			case !loopFirst && st.state != stBlocked:
				t.Fatalf("blocked with the loop not there yet: %v, want blocked", st.state)
			}
			if !loopFirst {
				r.c.loop.run() // the loop writes; the writer resumes the connection
				parked, _ := r.s.parked.load()
				if st := r.state(); st.state != stQueued || parked+int64(r.exec.n) != 2 {
					t.Fatalf("after the loop wrote: %v, %d parked, %d tasks; want queued and dispatched", st.state, parked, r.exec.n)
				}
			}
			if got := r.read(t, r.sess.big+1); got != string(bytes.Repeat([]byte("b"), r.sess.big))+"\n" {
				t.Fatal("the big reply differs")
			}
		})
	}
}
