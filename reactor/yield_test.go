package reactor

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// wakeConn is a gnet.Conn that counts its wake-ups (nothing else is used).
type wakeConn struct {
	gnet.Conn
	wakes int
}

func (c *wakeConn) Wake(gnet.AsyncCallback) error {
	c.wakes++
	return nil
}

// TestTurnBudget checks inline mode's turns on one loop: reads always run;
// wake-up turns, yields and the writer's resumes alike, run up to
// yieldBudget after the loop last polled; beyond that a connection runs
// nothing, is deferred and the loop's doorbell rung once, and only the
// doorbell's OnTraffic (the loop polled its sockets) wakes it and starts a
// new count. Before, a resume's turn counted as a read and restarted the
// count, and deferred connections were woken by a 100 us timer into the
// same pass of gnet's task queue: with 400 clients pipelining gets they
// never read, a loop went 0.2-1.3 s without polling its sockets.
func TestTurnBudget(t *testing.T) {
	fds, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	pl := &perLoop{out: loopOut{bell: fds[0], rings: true}}
	pl.turns.out, pl.out.turns = &pl.out, &pl.turns
	s := &gnetServer{}
	conns := make([]*gconn, yieldBudget+3)
	for i := range conns {
		conns[i] = &gconn{s: s, c: &wakeConn{}, turns: &pl.turns}
	}
	rings := func() int {
		t.Helper()
		buf := make([]byte, 16)
		n, err := unix.Read(fds[1], buf)
		if err == unix.EAGAIN {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	wakes := func(gc *gconn) int { return gc.c.(*wakeConn).wakes }

	if !conns[0].turn() || pl.turns.run != 0 {
		t.Fatalf("a read: ran false or counted (%d turns)", pl.turns.run)
	}
	for i, gc := range conns[:yieldBudget] {
		if i%2 == 0 {
			gc.yield()
		} else {
			gc.do(stepWake) // the writer's resume
		}
		if wakes(gc) != 1 || !gc.turn() {
			t.Fatalf("wake-up turn %d within the budget: %d wakes, not run", i, wakes(gc))
		}
	}
	late, resumed := conns[yieldBudget], conns[yieldBudget+1]
	late.yield()
	resumed.do(stepWake)
	if late.turn() || resumed.turn() {
		t.Fatal("a wake-up turn beyond the budget ran before the loop polled")
	}
	if n := rings(); n != 1 {
		t.Fatalf("%d rings of the doorbell for two deferred connections, want 1", n)
	}
	if !conns[yieldBudget+2].turn() {
		t.Fatal("a read did not run while wake-up turns were deferred")
	}
	if wakes(late) != 1 || wakes(resumed) != 1 {
		t.Fatal("a deferred connection was woken before the loop polled")
	}

	pl.turns.polled() // the doorbell's OnTraffic
	for _, gc := range []*gconn{late, resumed} {
		if wakes(gc) != 2 || !gc.turn() {
			t.Fatalf("after the poll: %d wakes, want 2, and a turn", wakes(gc))
		}
	}
	if pl.turns.run != 2 {
		t.Errorf("%d turns counted after the poll, want 2", pl.turns.run)
	}
}

// TestInlineDoorbell checks that inline mode's loops get their doorbells
// (deferred turns need them) and are told of its rings.
func TestInlineDoorbell(t *testing.T) {
	srv := startTest(t, ModeInline, nil)
	s := srv.(*gnetServer)
	for range 2 { // two connections land on both loops (gnet's round robin)
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		got := make([]byte, 4)
		if _, err := c.Write([]byte("k\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "R:k\n" {
			t.Fatalf("reply %q: %v", got, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s.loopsMu.Lock()
		loops, rung := len(s.loops), 0
		for _, pl := range s.loops {
			if pl.out.hasBell() && pl.out.turns == &pl.turns && pl.turns.out == &pl.out {
				rung++
			}
		}
		s.loopsMu.Unlock()
		if loops == 2 && rung == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d loops, %d with a doorbell told to their turns; want 2 and 2", loops, rung)
		}
	}
}
