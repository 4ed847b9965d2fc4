package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// pipelineTranscript builds n pipelined commands (set, get, incr triples)
// and the replies they must produce, in order.
func pipelineTranscript(n int) (req, want string) {
	var rb, wb strings.Builder
	rb.WriteString("set ctr 0 0 1\r\n0\r\n")
	wb.WriteString("STORED\r\n")
	for i := 0; i < n/3; i++ {
		v := fmt.Sprintf("value-%d", i)
		fmt.Fprintf(&rb, "set key%d %d 0 %d\r\n%s\r\n", i, i, len(v), v)
		fmt.Fprintf(&rb, "get key%d\r\n", i)
		rb.WriteString("incr ctr 1\r\n")
		fmt.Fprintf(&wb, "STORED\r\nVALUE key%d %d %d\r\n%s\r\nEND\r\n%d\r\n", i, i, len(v), v, i+1)
	}
	return rb.String(), wb.String()
}

// TestPipelinedRepliesInOrder sends 1,000 mixed commands in one write; the
// replies must come back complete and in request order.
func TestPipelinedRepliesInOrder(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2", "--workers", "4")
		req, want := pipelineTranscript(1000)
		for round := 0; round < 3; round++ {
			c := dial(t, s.Addr)
			got := roundTrip(t, c, req, len(want))
			if got != want {
				t.Fatalf("round %d: pipelined replies differ at byte %d:\n got %s\nwant %s", round, firstDiff(got, want), quote(got[firstDiff(got, want):]), quote(want[firstDiff(got, want):]))
			}
			c.Close()
		}
	})
}

// TestManyPipelinedConnections runs pipelined transcripts on several
// connections at once, so batches of different connections interleave on
// the workers.
func TestManyPipelinedConnections(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2", "--workers", "2")
		const conns = 16
		errs := make(chan error, conns)
		for i := 0; i < conns; i++ {
			go func(i int) {
				c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
				if err != nil {
					errs <- err
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Minute)) // a hang guard
				req, want := pipelineTranscript(300)
				req = strings.ReplaceAll(req, "key", fmt.Sprintf("c%d-key", i))
				req = strings.ReplaceAll(req, "ctr", fmt.Sprintf("ctr%d", i))
				want = strings.ReplaceAll(want, "key", fmt.Sprintf("c%d-key", i))
				if _, err := c.Write([]byte(req)); err != nil {
					errs <- err
					return
				}
				buf := make([]byte, len(want))
				n := 0
				for n < len(buf) {
					m, err := c.Read(buf[n:])
					n += m
					if err != nil {
						break
					}
				}
				if got := string(buf[:n]); got != want {
					d := firstDiff(got, want)
					errs <- fmt.Errorf("conn %d: replies differ at byte %d: got %s want %s", i, d, quote(got[d:]), quote(want[d:]))
					return
				}
				errs <- nil
			}(i)
		}
		for i := 0; i < conns; i++ {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
}

// TestSplitWrites sends a transcript one byte per write.
func TestSplitWrites(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		c := dial(t, s.Addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		req, want := pipelineTranscript(30)
		for i := 0; i < len(req); i++ {
			if _, err := c.Write([]byte{req[i]}); err != nil {
				t.Fatal(err)
			}
			if i%7 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		if got := readN(t, c, len(want)); got != want {
			d := firstDiff(got, want)
			t.Fatalf("byte-by-byte transcript differs at %d: got %s want %s", d, quote(got[d:]), quote(want[d:]))
		}
	})
}

// TestNoreply checks that noreply suppresses replies and the stream stays in sync.
func TestNoreply(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		c := dial(t, s.Addr)
		req := "set a 1 0 1 noreply\r\na\r\n" +
			"add a 0 0 1 noreply\r\nb\r\n" +
			"append a 0 0 1 noreply\r\nc\r\n" +
			"set n 0 0 1 noreply\r\n5\r\n" +
			"incr n 3 noreply\r\n" +
			"touch a 100 noreply\r\n" +
			"delete nokey noreply\r\n" +
			"get a n\r\n"
		want := "VALUE a 1 2\r\nac\r\nVALUE n 0 1\r\n8\r\nEND\r\n"
		if got := roundTrip(t, c, req, len(want)); got != want {
			t.Fatalf("noreply transcript: got %s want %s", quote(got), quote(want))
		}
	})
}

// TestConnLimit opens more connections than -c allows.
func TestConnLimit(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-c", "5")
		var open []net.Conn
		for i := 0; i < 5; i++ {
			c := dial(t, s.Addr)
			if got := roundTrip(t, c, "version\r\n", len("VERSION 1.6.18\r\n")); !strings.HasPrefix(got, "VERSION ") {
				t.Fatalf("conn %d: version reply %q", i, got)
			}
			open = append(open, c)
		}
		extra := dial(t, s.Addr)
		want := "ERROR Too many open connections\r\n"
		if got := readN(t, extra, len(want)+1); got != want {
			t.Fatalf("connection over the limit got %q, want %q and close", got, want)
		}
		// The first ones keep working; closing one frees a slot.
		if got := roundTrip(t, open[0], "version\r\n", len("VERSION 1.6.18\r\n")); !strings.HasPrefix(got, "VERSION ") {
			t.Fatalf("existing conn after rejection: %q", got)
		}
		open[4].Close()
		deadline := time.Now().Add(time.Minute) // a hang guard
		for {
			c := dial(t, s.Addr)
			got := roundTrip(t, c, "version\r\n", len("VERSION 1.6.18\r\n"))
			if strings.HasPrefix(got, "VERSION ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no slot freed after closing a connection: %q", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
