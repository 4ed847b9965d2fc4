package reactor

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
)

// TestLoopDoorbell checks pool mode's reply path through the loop: every
// loop gets its doorbell once it has opened a connection, a round trip
// allocates nothing once it has (gnet's Execute allocated twice per ring),
// and the engine's stop closes every doorbell.
func TestLoopDoorbell(t *testing.T) {
	srv := startTest(t, ModePool, nil)
	s := srv.(*gnetServer)
	// Two connections open at once land on both loops (gnet's round robin).
	conns := make([]net.Conn, 2)
	for i := range conns {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		conns[i] = c
	}
	req, got := []byte("k\n"), make([]byte, 4) // the client allocates nothing per round trip
	roundTrip := func(c net.Conn) {
		t.Helper()
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "R:k\n" {
			t.Fatalf("reply %q: %v", got, err)
		}
	}
	for _, c := range conns {
		roundTrip(c)
	}
	outs := func() []*loopOut {
		s.loopsMu.Lock()
		defer s.loopsMu.Unlock()
		var los []*loopOut
		for _, pl := range s.loops {
			los = append(los, &pl.out)
		}
		return los
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		los, rung := outs(), 0
		for _, lo := range los {
			if lo.hasBell() {
				rung++
			}
		}
		if len(los) == 2 && rung == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d loops with replies, %d with a doorbell; want 2 and 2", len(los), rung)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range conns {
		roundTrip(c) // replies through the doorbells
	}

	if !raceEnabled {
		const n = 2000
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			roundTrip(conns[0])
		}
		runtime.ReadMemStats(&after)
		// The timers and the collector of a running process allocate a
		// little in the background; a ring that allocated would be >= 2.
		if per := float64(after.Mallocs-before.Mallocs) / n; per > 0.5 {
			t.Errorf("%.2f allocations per round trip, want 0", per)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, lo := range outs() {
		if lo.hasBell() {
			t.Error("a doorbell is still open after the engine stopped")
		}
	}
}

// enrollLoop is a gnet.EventLoop whose Enroll fails (err) or answers
// without ever opening the connection, as gnet does when the loop cannot
// register it.
type enrollLoop struct {
	*fakeLoop
	err error
}

func (l enrollLoop) Register(context.Context, net.Addr) (<-chan gnet.RegisteredResult, error) {
	return nil, errors.New("not used")
}

func (l enrollLoop) Enroll(_ context.Context, c net.Conn) (<-chan gnet.RegisteredResult, error) {
	if l.err != nil {
		return nil, l.err
	}
	_ = c.Close()
	ch := make(chan gnet.RegisteredResult, 1)
	ch <- gnet.RegisteredResult{}
	return ch, nil
}

func (l enrollLoop) Schedule(context.Context, gnet.Runnable, time.Duration) error { return nil }
func (l enrollLoop) Close(gnet.Conn) error                                        { return nil }

// TestLoopDoorbellNotOpened checks that a loop whose doorbell could not be
// enrolled, or was never opened, is asked with Execute and that no
// descriptor is left behind.
func TestLoopDoorbellNotOpened(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"enroll refused", errors.New("engine in shutdown")},
		{"never opened", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds := openFDs(t)
			s := newGnetServer(Config{Logger: zerolog.Nop()})
			loop := enrollLoop{fakeLoop: &fakeLoop{}, err: tc.err}
			lo := &loopOut{loop: loop}
			s.enrollBell(loop, lo)
			if lo.hasBell() {
				t.Fatal("rings go to a doorbell the loop never opened")
			}
			lo.bellOpened() // too late: must not revive it
			if lo.hasBell() {
				t.Fatal("a doorbell given up on was revived")
			}
			lo.rearm()
			if loop.calls != 1 {
				t.Errorf("%d Execute calls, want 1", loop.calls)
			}
			if now := openFDs(t); now != fds {
				t.Errorf("%d descriptors open, %d before", now, fds)
			}
		})
	}
}

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(ents)
}
