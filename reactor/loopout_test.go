package reactor

import (
	"context"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
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
		for _, lo := range s.outs {
			los = append(los, lo)
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
