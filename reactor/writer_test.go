package reactor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// fakeLoop stands in for a gnet loop: Execute records the runnable, and the
// test runs it, as the loop would, with run.
type fakeLoop struct {
	mu      sync.Mutex
	pending []gnet.Runnable
	calls   int
	err     error         // Execute's error: the engine is stopping
	asked   chan struct{} // signalled (without blocking) on every Execute
}

func (l *fakeLoop) Execute(_ context.Context, r gnet.Runnable) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	select {
	case l.asked <- struct{}{}:
	default:
	}
	if l.err != nil {
		return l.err
	}
	l.pending = append(l.pending, r)
	return nil
}

// run runs what was asked of the loop so far and reports how many runs.
func (l *fakeLoop) run() int {
	l.mu.Lock()
	rs := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, r := range rs {
		_ = r.Run(context.Background())
	}
	return len(rs)
}

// writerRig is a connection writer on one end of a socket pair, whose
// descriptor plays gnet's; peer is the client's end.
type writerRig struct {
	t       *testing.T
	w       *connWriter
	loop    *fakeLoop
	gnetFD  int
	peer    *os.File
	resumed atomic.Int32
	resumes chan struct{} // one value per resume
	limits  bufLimits
}

func newWriterRig(t *testing.T, pool bool, sndbuf int) *writerRig {
	t.Helper()
	fds, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	if sndbuf > 0 {
		_ = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, sndbuf)
		_ = unix.SetsockoptInt(fds[1], unix.SOL_SOCKET, unix.SO_RCVBUF, sndbuf)
	}
	r := &writerRig{t: t, loop: &fakeLoop{asked: make(chan struct{}, 1)}, gnetFD: fds[0], peer: os.NewFile(uintptr(fds[1]), "peer"),
		resumes: make(chan struct{}, 64)}
	r.limits.highWater = 64 << 10
	r.w = newConnWriter(fds[0], new(sync.Mutex), &r.limits, &loopOut{loop: r.loop}, pool, func() {
		r.resumed.Add(1)
		r.resumes <- struct{}{}
	})
	t.Cleanup(func() {
		_ = r.peer.Close()
		r.w.mu.Lock()
		closeGnet := r.w.st.attached
		r.w.mu.Unlock()
		r.w.closeWhenDone(time.Millisecond)
		if closeGnet {
			_ = unix.Close(r.gnetFD)
		}
	})
	return r
}

// read reads n bytes at the peer.
func (r *writerRig) read(n int) []byte {
	r.t.Helper()
	_ = r.peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(r.peer, b); err != nil {
		r.t.Fatalf("peer read %d bytes: %v", n, err)
	}
	return b
}

// state returns the writer's duplicate descriptor (-1: none) and who is to
// write its queue.
func (r *writerRig) state() (fd int, out outState) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.w.fd, r.w.st.out
}

// pump runs the loop each time a run is asked for, until the test ends: the
// loop of a connection whose waker lists it again.
func (r *writerRig) pump() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	r.t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		for {
			select {
			case <-r.loop.asked:
				r.loop.run()
			case <-done:
				return
			}
		}
	}()
}

// waitIdle waits until the writer has nothing queued, listed or flushing.
func (r *writerRig) waitIdle() {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !r.w.idle(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatal("the writer did not drain")
		}
	}
}

// TestWriterPoolRepliesGoThroughTheLoop checks that in pool mode a worker's
// write only queues: the bytes leave on the loop's run, one run for every
// write made before it.
func TestWriterPoolRepliesGoThroughTheLoop(t *testing.T) {
	r := newWriterRig(t, true, 0)
	for _, s := range []string{"VALUE a 0 1\r\nx\r\nEND\r\n", "STORED\r\n", "DELETED\r\n"} {
		if reuse, blocked := r.w.write([]byte(s)); blocked || len(reuse) != 0 {
			t.Fatalf("write(%q) = %q, blocked %v", s, reuse, blocked)
		}
	}
	if _, out := r.state(); out != outListed {
		t.Fatal("a pool writer with replies is not listed on its loop")
	}
	_ = r.peer.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, _ := r.peer.Read(make([]byte, 1)); n != 0 {
		t.Fatal("a worker's write reached the socket before the loop ran")
	}
	if r.loop.calls != 1 {
		t.Fatalf("%d Execute calls for three writes, want 1", r.loop.calls)
	}
	if n := r.loop.run(); n != 1 {
		t.Fatalf("%d runs", n)
	}
	want := "VALUE a 0 1\r\nx\r\nEND\r\nSTORED\r\nDELETED\r\n"
	if got := r.read(len(want)); string(got) != want {
		t.Fatalf("peer got %q", got)
	}
	if fd, out := r.state(); fd != -1 || out != outIdle || !r.w.idle() {
		t.Fatalf("after the run: duplicate %d, %v", fd, out)
	}
}

// TestWriterInlineWritesAtOnce checks that inline mode's executor, the
// loop, writes on gnet's descriptor without a run or a duplicate.
func TestWriterInlineWritesAtOnce(t *testing.T) {
	r := newWriterRig(t, false, 0)
	if _, blocked := r.w.write([]byte("STORED\r\n")); blocked {
		t.Fatal("blocked")
	}
	if got := r.read(8); string(got) != "STORED\r\n" {
		t.Fatalf("peer got %q", got)
	}
	if r.loop.calls != 0 {
		t.Fatal("inline write asked the loop for a run")
	}
}

// TestWriterSlowPeer checks the slow path: the socket refuses bytes, a
// waker waits for it on a duplicate (writing nothing), the executor blocks
// past the high-water mark, the loop writes whatever the socket takes each
// time the waker lists it, and once the peer read everything the executor
// is resumed; the duplicate is kept (a peer slow once is likely slow again:
// no descriptor churn per slice), and later replies take the usual path.
func TestWriterSlowPeer(t *testing.T) {
	for _, pool := range []bool{true, false} {
		t.Run(map[bool]string{true: "pool", false: "inline"}[pool], func(t *testing.T) {
			r := newWriterRig(t, pool, 4<<10)
			var want bytes.Buffer
			blocked := false
			for i := 0; !blocked; i++ {
				b := bytes.Repeat([]byte{byte('a' + i%26)}, 16<<10)
				want.Write(b)
				_, blocked = r.w.write(b)
				r.loop.run()
				if i > 1000 {
					t.Fatal("never blocked")
				}
			}
			if fd, out := r.state(); out != outWaiting || fd < 0 || fd == r.gnetFD {
				t.Fatalf("socket full: %v, duplicate %d (gnet's %d)", out, fd, r.gnetFD)
			}
			r.pump()
			if got := r.read(want.Len()); !bytes.Equal(got, want.Bytes()) {
				t.Fatal("the peer got other bytes than were written, or out of order")
			}
			r.waitIdle()
			select {
			case <-r.resumes: // the resume comes after the writer went idle
			case <-time.After(10 * time.Second):
				t.Fatal("not resumed")
			}
			if r.resumed.Load() != 1 {
				t.Fatalf("resumed %d times, want 1", r.resumed.Load())
			}
			if fd, out := r.state(); fd < 0 || out != outIdle {
				t.Fatalf("after draining: duplicate %d, %v", fd, out)
			}
			r.w.write([]byte("END\r\n"))
			if got := r.read(5); string(got) != "END\r\n" {
				t.Fatalf("after draining, peer got %q", got)
			}
			r.waitIdle() // the loop counts the bytes off after the peer may have read them
			if r.limits.used.Load() != 0 {
				t.Fatalf("%d bytes still counted", r.limits.used.Load())
			}
		})
	}
}

// TestWriterLeave checks a close with replies not yet written (a half-closed
// peer): leave takes a duplicate before gnet closes its descriptor, the
// drainer writes what was listed for the loop, the executor's later
// replies follow in order, and closeWhenDone ends the stream with EOF.
func TestWriterLeave(t *testing.T) {
	r := newWriterRig(t, true, 0)
	r.w.write([]byte("one\r\n"))
	r.w.leave()
	_ = unix.Close(r.gnetFD) // gnet closes its descriptor after OnClose
	if fd, out := r.state(); fd < 0 || fd == r.gnetFD || out != outDraining {
		t.Fatalf("after leave: duplicate %d, %v", fd, out)
	}
	r.loop.run() // the run asked for before the close finds the drainer on it
	r.w.write([]byte("two\r\n"))
	r.w.closeWhenDone(time.Second)
	if got := r.read(10); string(got) != "one\r\ntwo\r\n" {
		t.Fatalf("peer got %q", got)
	}
	_ = r.peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := r.peer.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the last reply: %d bytes, %v; want EOF", n, err)
	}
}

// TestWriterLeaveAfterAbort checks that a connection the server closed
// takes no duplicate: its replies are dropped.
func TestWriterLeaveAfterAbort(t *testing.T) {
	r := newWriterRig(t, true, 0)
	r.w.write([]byte("dropped\r\n"))
	r.w.abort()
	r.w.leave()
	_ = unix.Close(r.gnetFD)
	r.loop.run()
	r.waitIdle()
	if fd, out := r.state(); fd != -1 || out != outIdle {
		t.Fatalf("after abort and leave: duplicate %d, %v", fd, out)
	}
	if _, err := r.w.push([]byte("x")); err == nil {
		t.Fatal("push after abort succeeded")
	}
}

// TestWriterEngineStopped checks that replies listed when the loop refuses
// runs (the engine is stopping) are dropped and a blocked executor resumed.
func TestWriterEngineStopped(t *testing.T) {
	r := newWriterRig(t, true, 0)
	r.loop.err = errors.New("engine stopping")
	if _, blocked := r.w.write(make([]byte, 100<<10)); !blocked {
		t.Fatal("100 KiB over a 64 KiB high-water mark did not block")
	}
	if !r.w.idle() || r.resumed.Load() != 1 || r.limits.used.Load() != 0 {
		t.Fatalf("idle %v, resumed %d, %d bytes counted", r.w.idle(), r.resumed.Load(), r.limits.used.Load())
	}
}

// TestWriterPushGoesThroughTheLoop checks that a pushed line (watch) of an
// open connection is written by its loop in both modes.
func TestWriterPushGoesThroughTheLoop(t *testing.T) {
	r := newWriterRig(t, false, 0)
	if n, err := r.w.push([]byte("ts=1 gid=1\n")); err != nil || n != 11 {
		t.Fatalf("push = %d, %v", n, err)
	}
	r.loop.run()
	if got := r.read(11); string(got) != "ts=1 gid=1\n" {
		t.Fatalf("peer got %q", got)
	}
}

// TestWriterListedWhileLoopBusy checks that a reply listed while its loop is
// in OnTraffic (loopOut.enter) asks for no run: the loop writes it as it
// leaves; after that, a reply asks for a run again.
func TestWriterListedWhileLoopBusy(t *testing.T) {
	r := newWriterRig(t, true, 0)
	lo := r.w.out
	lo.enter()
	if _, blocked := r.w.write([]byte("STORED\r\n")); blocked {
		t.Fatal("blocked")
	}
	if r.loop.calls != 0 {
		t.Fatalf("%d runs asked for while the loop was in OnTraffic, want 0", r.loop.calls)
	}
	lo.leave()
	if got := string(r.read(8)); got != "STORED\r\n" {
		t.Fatalf("peer read %q", got)
	}
	r.waitIdle()
	if _, blocked := r.w.write([]byte("DELETED\r\n")); blocked {
		t.Fatal("blocked")
	}
	if r.loop.calls != 1 {
		t.Fatalf("%d runs asked for after the loop left OnTraffic, want 1", r.loop.calls)
	}
	r.loop.run()
	if got := string(r.read(9)); got != "DELETED\r\n" {
		t.Fatalf("peer read %q", got)
	}
}

// TestWriterLoopQueueBound checks that a pool executor with more requests
// in hand stops once more than loopQueueMax waits for the loop to write it,
// or framed for it, and is resumed when the loop wrote it; one with nothing
// left to run is not stopped (it would be handed back to the pool for
// nothing), nor is the inline executor, which writes itself.
func TestWriterLoopQueueBound(t *testing.T) {
	reply := bytes.Repeat([]byte("v"), 4<<10)
	more := func() bool { return true }
	last := newWriterRig(t, true, 0)
	if _, blocked := last.w.write(bytes.Repeat(reply, 8)); blocked {
		t.Fatal("the last reply of a slice stopped its executor")
	}
	last.loop.run()
	last.read(8 * len(reply))
	last.w.moreLocked = more // the loop framed more meanwhile
	if _, blocked := last.w.write(bytes.Repeat(reply, 8)); !blocked {
		t.Fatal("the last reply of a slice did not stop an executor with requests framed for it")
	}
	last.loop.run()
	last.read(8 * len(reply))

	r := newWriterRig(t, true, 0)
	r.w.moreLocked = more
	blockedAt := 0
	for i := 1; i <= 8 && blockedAt == 0; i++ {
		if _, blocked := r.w.write(reply); blocked {
			blockedAt = i * len(reply)
		}
	}
	if blockedAt <= loopQueueMax || blockedAt > loopQueueMax+len(reply) {
		t.Fatalf("pool writer blocked at %d bytes queued for the loop, want just over %d", blockedAt, loopQueueMax)
	}
	if r.resumed.Load() != 0 {
		t.Fatal("resumed before the loop ran")
	}
	r.loop.run()
	r.read(blockedAt)
	r.waitIdle()
	if n := r.resumed.Load(); n != 1 {
		t.Fatalf("resumed %d times after the loop wrote the queue, want 1", n)
	}

	in := newWriterRig(t, false, 0)
	in.w.moreLocked = more
	for i := 0; i < 8; i++ {
		if _, blocked := in.w.write(reply); blocked {
			t.Fatalf("inline writer blocked after %d bytes written at once", (i+1)*len(reply))
		}
	}
	in.read(8 * len(reply))
}

// TestWaitWritableDrainedBefore is the waker's lost wake-up: the socket was
// full when the loop wrote, the peer read everything before the waker
// started, and Go's poller had already recorded (and the waker's wait then
// discarded) the only edge the socket will send. The waker must find the
// socket writable by asking it, not wait for an edge that never comes
// (found by TestBinaryT over a unix socket: a 560 KB reply stopped after
// the first bytes the socket took).
func TestWaitWritableDrainedBefore(t *testing.T) {
	fds, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	peer := os.NewFile(uintptr(fds[1]), "peer")
	defer peer.Close()
	file := os.NewFile(uintptr(fds[0]), "conn") // registered with the poller
	defer file.Close()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	filled := 0
	for {
		n, err := unix.Write(fds[0], chunk)
		if n > 0 {
			filled += n
		}
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := io.ReadFull(peer, make([]byte, filled)); err != nil {
		t.Fatal(err)
	}
	// The socket is empty and writable; the poller has its edge (or will:
	// either way the waker must return).
	time.Sleep(time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- waitWritable(file) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waker waits for an edge that already came: the socket was writable all along")
	}
}
