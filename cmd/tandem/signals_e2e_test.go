package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestSignalUnderLoad stops a saturated server: loopback clients pipeline
// sets and gets as fast as the server answers, and once every client has had
// replies, a SIGHUP and then the stop signal are sent back to back (the
// sequence that lost the stop signal, signals.go). The server must log
// "shutting down" with the signal and exit 0, in every mode.
func TestSignalUnderLoad(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			s := startServer(t, mode)
			const clients = 8
			var (
				wg      sync.WaitGroup
				started sync.WaitGroup // each client has had one batch of replies
				batches atomic.Int64
			)
			started.Add(clients)
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					loadClient(s.Addr, i, &started, &batches)
				}()
			}
			started.Wait()
			for _, sg := range []syscall.Signal{syscall.SIGHUP, sig} {
				if err := s.cmd.Process.Signal(sg); err != nil {
					t.Fatal(err)
				}
			}
			// A hang guard, not a timed assertion: a lost signal never exits.
			code := waitExit(s.cmd, s.exited, 2*time.Minute)
			wg.Wait()
			log := s.Log()
			if code != 0 {
				s.Kill()
				t.Fatalf("%v under load (%d batches answered): exit %d, want 0\n%s", sig, batches.Load(), code, log)
			}
			want := fmt.Sprintf(`"signal":%q`, sig.String())
			if !strings.Contains(log, want) || !strings.Contains(log, `"message":"shutting down"`) || !strings.Contains(log, `"message":"stopped"`) {
				t.Fatalf("%v under load: no shutting down line with %s and no stopped line\n%s", sig, want, log)
			}
		}
	})
}

// loadClient pipelines batches of 16 sets and gets on one connection until
// the server closes it, 20,000 batches or two minutes, whichever comes
// first; it marks started after its first complete batch (or when it gives
// up) and counts the batches answered.
func loadClient(addr string, id int, started *sync.WaitGroup, batches *atomic.Int64) {
	var once sync.Once
	defer once.Do(started.Done)
	c, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	val := strings.Repeat("v", 100)
	var req strings.Builder
	for k := range 16 {
		fmt.Fprintf(&req, "set load:%d:%d 0 0 %d\r\n%s\r\nget load:%d:%d\r\n", id, k, len(val), val, id, k)
	}
	// Each pair answers STORED, then VALUE line, data, END.
	reply := len("STORED\r\n") + len(fmt.Sprintf("VALUE load:%d:00 0 100\r\n", id)) + len(val) + 2 + len("END\r\n")
	r := bufio.NewReader(c)
	for range 20000 {
		if _, err := io.WriteString(c, req.String()); err != nil {
			return
		}
		for k := range 16 {
			n := reply
			if k < 10 {
				n-- // one digit fewer in the key
			}
			if _, err := r.Discard(n); err != nil {
				return
			}
		}
		batches.Add(1)
		once.Do(started.Done)
	}
}
