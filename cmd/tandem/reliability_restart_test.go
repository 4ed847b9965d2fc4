package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestRestartUnderLoad kills the server with SIGKILL while clients are
// busy, starts it again on the same port at once (the port must be
// reusable immediately: SO_REUSEADDR), and checks that every client
// reconnects and is served again, and that no client ever read a value it
// did not write (after the restart a miss is the only other answer).
func TestRestartUnderLoad(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		port := strconv.Itoa(testenv.FreePort(t))
		s := startServer(t, mode, "-p", port, "-t", "2")
		addr := s.Addr

		const clients = 8
		var restarted atomic.Bool
		var after [clients]atomic.Int64 // successful round trips after the restart
		var before atomic.Int64
		stop := make(chan struct{})
		errc := make(chan error, clients)
		var wg sync.WaitGroup
		for id := 0; id < clients; id++ {
			wg.Add(1)
			go func(id int) {
				defer wg.Done()
				restartClient(addr, id, stop, &restarted, &before, &after[id], errc)
			}(id)
		}

		if !waitFor(time.Minute, func() bool { return before.Load() >= 200 }) {
			t.Fatalf("no load before the kill: %d round trips", before.Load())
		}
		s.Kill() // SIGKILL under load
		killed := time.Now()
		s2 := startServer(t, mode, "-p", port, "-t", "2")
		restarted.Store(true)
		t.Logf("%d round trips before SIGKILL; listening again on the same port %v after the kill",
			before.Load(), time.Since(killed).Round(time.Millisecond))

		recovered := waitFor(time.Minute, func() bool { // a hang guard
			for i := range after {
				if after[i].Load() < 20 {
					return false
				}
			}
			return true
		})
		close(stop)
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
		if !recovered {
			var counts []int64
			for i := range after {
				counts = append(counts, after[i].Load())
			}
			t.Errorf("clients did not all recover within a minute: round trips after the restart %v", counts)
		}
		checkHealthy(t, s2)
	})
}

// restartClient sets and reads back its own key in a loop, reconnecting
// after any error, until stop. It reports a value it did not write.
func restartClient(addr string, id int, stop <-chan struct{}, restarted *atomic.Bool, before, after *atomic.Int64, errc chan<- error) {
	key := "rs:" + strconv.Itoa(id)
	var c net.Conn
	var r *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		if c == nil {
			var err error
			c, err = net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				c = nil
				time.Sleep(20 * time.Millisecond)
				continue
			}
			r = bufio.NewReader(c)
		}
		val := strconv.Itoa(id*1_000_000 + i)
		wasRestarted := restarted.Load()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		req := fmt.Sprintf("set %s 0 0 %d\r\n%s\r\nget %s\r\n", key, len(val), val, key)
		want := fmt.Sprintf("STORED\r\nVALUE %s 0 %d\r\n%s\r\nEND\r\n", key, len(val), val)
		if _, err := io.WriteString(c, req); err != nil {
			c.Close()
			c = nil
			continue
		}
		buf := make([]byte, len(want))
		n, err := io.ReadFull(r, buf)
		if err != nil {
			// A connection cut by the kill: any prefix of the reply is fine.
			if string(buf[:n]) != want[:n] {
				errc <- fmt.Errorf("client %d: torn reply %q, want a prefix of %q", id, buf[:n], want)
				return
			}
			c.Close()
			c = nil
			continue
		}
		if string(buf) != want {
			errc <- fmt.Errorf("client %d: got %q, want %q", id, buf, want)
			return
		}
		if wasRestarted {
			after.Add(1)
		} else {
			before.Add(1)
		}
	}
}
