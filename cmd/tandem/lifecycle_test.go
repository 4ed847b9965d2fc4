package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestConcurrentClients runs 50 clients with mixed operations on their own
// and shared keys, bounded in count; every client must finish all its
// operations within a generous hang guard.
func TestConcurrentClients(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2", "--workers", "4")
		const clients, ops = 50, 200
		deadline := time.Now().Add(3 * time.Minute) // a hang guard
		var done [clients]int                       // operations each client completed
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				mc := newClient(s.Addr)
				for j := 0; j < ops && time.Now().Before(deadline); j++ {
					own := fmt.Sprintf("c%d-%d", i, j%10)
					val := fmt.Sprintf("%d-%d", i, j)
					if err := mc.Set(&memcache.Item{Key: own, Value: []byte(val)}); err != nil {
						errs <- fmt.Errorf("client %d set: %w", i, err)
						return
					}
					it, err := mc.Get(own)
					if err != nil || string(it.Value) != val {
						errs <- fmt.Errorf("client %d get %s = %v, %v; want %s", i, own, it, err, val)
						return
					}
					shared := fmt.Sprintf("shared-%d", j%5)
					switch j % 4 {
					case 0:
						_ = mc.Set(&memcache.Item{Key: shared, Value: []byte("1")})
					case 1:
						if _, err := mc.Increment(shared, 1); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
							errs <- fmt.Errorf("client %d incr: %w", i, err)
							return
						}
					case 2:
						if err := mc.Delete(shared); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
							errs <- fmt.Errorf("client %d delete: %w", i, err)
							return
						}
					case 3:
						if _, err := mc.GetMulti([]string{shared, own, "nokey"}); err != nil {
							errs <- fmt.Errorf("client %d get multi: %w", i, err)
							return
						}
					}
					done[i]++
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
		for i, n := range done {
			if n != ops {
				t.Errorf("client %d completed %d of %d operations within the hang guard", i, n, ops)
			}
		}
	})
}

// TestGracefulShutdown sends SIGTERM while a client has a large batch of
// fully received requests outstanding: every reply must arrive, and the
// server must exit 0 (within a hang guard).
func TestGracefulShutdown(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2")
		c := dial(t, s.Addr)
		value := strings.Repeat("x", 10000)
		if got := roundTrip(t, c, fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", len(value), value), 8); got != "STORED\r\n" {
			t.Fatalf("set: %q", got)
		}
		// Background load on other connections.
		stopLoad := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mc := newClient(s.Addr)
				for k := 0; k < 100000; k++ {
					select {
					case <-stopLoad:
						return
					default:
					}
					if _, err := mc.Get("big"); err != nil {
						return
					}
				}
			}()
		}
		const n = 300
		req := strings.Repeat("get big\r\n", n)
		want := strings.Repeat(fmt.Sprintf("VALUE big 0 %d\r\n%s\r\nEND\r\n", len(value), value), n)
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		// The server has read every request (the replies cannot all fit
		// in the socket buffers, so most are still to be sent).
		if err := testenv.WaitRead(c, time.Minute); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		code := make(chan int, 1)
		go func() {
			ec, err := s.Stop(time.Minute) // a hang guard
			if err != nil {
				t.Error(err)
			}
			code <- ec
		}()
		got := readN(t, c, len(want))
		if got != want {
			t.Errorf("lost replies during shutdown: got %d of %d bytes", len(got), len(want))
		}
		if ec := <-code; ec != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0\n%s", ec, s.Log())
		}
		close(stopLoad)
		wg.Wait()
		t.Logf("shutdown took %v", time.Since(start).Round(time.Millisecond))
		if _, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			t.Errorf("server still accepts connections after exit")
		}
	})
}

// TestShutdownCommand checks that shutdown is refused unless -A is given.
func TestShutdownCommand(t *testing.T) {
	s := startServer(t, "pool")
	c := dial(t, s.Addr)
	want := "SERVER_ERROR: shutdown not enabled\r\n" // memcached 1.6.45 (transcript.Differences)
	if got := roundTrip(t, c, "shutdown\r\n", len(want)); got != want {
		t.Fatalf("shutdown without -A: %q, want %q", got, want)
	}
	s2 := startServer(t, "inline", "-A")
	c2 := dial(t, s2.Addr)
	_, _ = io.WriteString(c2, "shutdown\r\n")
	select {
	case <-s2.exited:
		if ec := s2.cmd.ProcessState.ExitCode(); ec != 0 {
			t.Fatalf("exit code after shutdown command: %d", ec)
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("server did not exit within a minute of the shutdown command")
	}
}

// TestInvalidFlags checks that bad flag values exit non-zero with one clear line.
func TestInvalidFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad mode", []string{"--mode", "fast"}, "--mode"},
		{"zero memory", []string{"-m", "0"}, "-m"},
		{"bad item size", []string{"-I", "huge"}, "-I"},
		{"zero threads", []string{"-t", "0"}, "-t"},
		{"shards not a power of two", []string{"--shards", "3"}, "--shards"},
		{"unknown flag", []string{"--frobnicate"}, "frobnicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(binPath, tc.args...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("tandem %v: err %v, want a non-zero exit", tc.args, err)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("tandem %v said %q, want it to mention %q", tc.args, out, tc.want)
			}
		})
	}
}

// TestHelpAndVersion checks --help documents the flags and --version works.
func TestHelpAndVersion(t *testing.T) {
	out, err := exec.Command(binPath, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, f := range []string{"--port", "--memory-limit", "--conn-limit", "--threads", "--max-item-size", "--mode", "--workers", "--log-level", "--log-format", "megabytes"} {
		if !strings.Contains(string(out), f) {
			t.Errorf("--help does not mention %s", f)
		}
	}
	out, err = exec.Command(binPath, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "tandem ") {
		t.Fatalf("--version = %q, %v", out, err)
	}
}
