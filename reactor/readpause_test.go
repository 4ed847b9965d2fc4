//go:build linux && !poll_opt && !tandem_portable

package reactor

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

func TestCheckReadPausing(t *testing.T) {
	if err := checkReadPausing(); err != nil {
		t.Fatalf("read pausing does not work on this kernel: %v", err)
	}
}

// pauseEngine is a bare gnet engine for TestReadPauseOnGnetLoop: it pauses
// a connection's reads at its first traffic and resumes them when woken.
type pauseEngine struct {
	gnet.BuiltinEventEngine
	eps    epolls
	addr   chan string
	opened chan gnet.Conn
	reads  chan []byte
	ep     int // loop-owned
	paused bool
	pauses int // loop-owned: the first traffic pauses reads, once
	errs   chan error
}

func (e *pauseEngine) OnBoot(eng gnet.Engine) gnet.Action {
	fd, err := eng.DupListener("tcp", "127.0.0.1:0")
	if err != nil {
		e.errs <- err
		return gnet.Shutdown
	}
	defer unix.Close(fd)
	sa, _ := unix.Getsockname(fd)
	a := sa.(*unix.SockaddrInet4)
	e.addr <- (&net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}).String()
	return gnet.None
}

func (e *pauseEngine) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	e.ep = e.eps.of(c.EventLoop(), c.Fd())
	e.opened <- c
	return nil, gnet.None
}

func (e *pauseEngine) OnTraffic(c gnet.Conn) gnet.Action {
	if e.paused {
		// Woken by the test: resume.
		if err := setReading(e.ep, c.Fd(), true); err != nil {
			e.errs <- err
		}
		e.paused = false
	}
	buf, _ := c.Next(-1)
	if len(buf) == 0 {
		return gnet.None
	}
	if e.pauses == 0 {
		e.pauses++
		if err := setReading(e.ep, c.Fd(), false); err != nil {
			e.errs <- err
		}
		e.paused = true
	}
	e.reads <- append([]byte(nil), buf...)
	return gnet.None
}

// TestReadPauseOnGnetLoop pauses and resumes a connection's reads on a
// real gnet loop, checking through the kernel's own report that the
// registration is the one readpause.go assumes before, during and after.
// It fails when a gnet upgrade changes how connections are registered.
func TestReadPauseOnGnetLoop(t *testing.T) {
	e := &pauseEngine{addr: make(chan string, 1), opened: make(chan gnet.Conn, 1), reads: make(chan []byte, 2), errs: make(chan error, 4)}
	done := make(chan error, 1)
	go func() {
		done <- gnet.Run(e, "tcp://127.0.0.1:0", gnet.WithNumEventLoop(1), gnet.WithReusePort(false))
	}()
	var addr string
	select {
	case addr = <-e.addr:
	case err := <-e.errs:
		t.Fatal(err)
	case err := <-done:
		t.Fatalf("gnet.Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("engine did not boot")
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gnet.Stop(ctx, "tcp://127.0.0.1:0")
		<-done
	}()
	client, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var c gnet.Conn
	select {
	case c = <-e.opened:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnOpen")
	}
	ep := e.ep
	if ep < 0 {
		t.Fatal("the loop's epoll instance was not found, or gnet registers connections differently from what readpause.go assumes")
	}
	fd := c.Fd()
	check := func(when string, want uint32) {
		t.Helper()
		ev, data, ok := registration(ep, fd)
		if !ok || ev != want || data != uint64(fd) {
			t.Fatalf("%s: registration events %#x data %d (found %v), want events %#x data %d", when, ev, data, ok, want, fd)
		}
	}
	check("before pausing", gnetReadEvents)
	read := func(want string) {
		t.Helper()
		select {
		case b := <-e.reads:
			if string(b) != want {
				t.Fatalf("read %q, want %q", b, want)
			}
		case err := <-e.errs:
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%q never read", want)
		}
	}
	if _, err := client.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	read("a") // OnTraffic paused reading
	if _, err := client.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	check("paused", 0)
	if len(e.reads) != 0 {
		t.Fatal("bytes read while paused")
	}
	if err := c.Wake(nil); err != nil {
		t.Fatal(err)
	}
	read("b")
	check("resumed", gnetReadEvents)
}

// TestNoPausingClosesOverCap: where reads cannot pause (the start-up check
// failed, or a poll_opt build), a client that pipelines and never reads is
// closed once its input passes the high-water mark, instead of buffering.
func TestNoPausingClosesOverCap(t *testing.T) {
	for _, mode := range []Mode{ModePool, ModeInline} {
		t.Run(string(mode), func(t *testing.T) {
			srv := startTest(t, mode, nil)
			srv.(*gnetServer).epolls.disable() // before any connection
			conn, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.(*net.TCPConn).SetReadBuffer(16 << 10)
			chunk := bytes.Repeat([]byte("big-"+strings.Repeat("x", 1019)+"\n"), 64)
			_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			for i := 0; i < 4096; i++ { // up to 256 MiB
				if _, err := conn.Write(chunk); err != nil {
					break
				}
			}
			for i := 0; srv.Stats().ClosedOverflow == 0; i++ {
				if i == 10_000 {
					t.Fatalf("connection not closed over the caps: %+v", srv.Stats())
				}
				time.Sleep(time.Millisecond)
			}
			if st := srv.Stats(); st.ReadPauses != 0 {
				t.Errorf("ReadPauses = %d without pausing", st.ReadPauses)
			}
		})
	}
}
