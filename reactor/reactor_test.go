package reactor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol"
	"github.com/tandemcache/tandem/workerpool"
)

// lineSession is a toy protocol: each "\n"-terminated line is a request and
// its reply is "R:<line>\n". "quit" closes, "panic" panics, "slow" sleeps.
type lineSession struct{}

func (lineSession) Next(buf []byte, r *protocol.Request) int {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return 0
	}
	r.Cmd, r.Key = protocol.CmdGet, buf[:i]
	return i + 1
}

func (lineSession) NeedBytes() int { return 0 }

func (lineSession) Execute(r *protocol.Request, out []byte) ([]byte, bool) {
	switch string(r.Key) {
	case "quit":
		return out, true
	case "panic":
		panic("boom")
	case "slow":
		time.Sleep(5 * time.Millisecond)
	case "big":
		out = append(out, "R:"...)
		out = append(out, bytes.Repeat([]byte("b"), bigReply)...)
		return append(out, '\n'), false
	}
	if bytes.HasPrefix(r.Key, []byte("big-")) { // "big" with a long request line, for fewer requests per byte
		out = append(out, "R:"...)
		out = append(out, bytes.Repeat([]byte("b"), bigReply)...)
		return append(out, '\n'), false
	}
	out = append(out, "R:"...)
	out = append(out, r.Key...)
	return append(out, '\n'), false
}

func (lineSession) Close() {}

// bigReply is the payload of the "big" request: larger than socket buffers,
// so writes hit EAGAIN while the client is not reading.
const bigReply = 256 << 10

type poolExec struct{ p *workerpool.Pool }

func (e poolExec) Submit(t Task) error { return e.p.Submit(t) }

// startTest runs a server of the given mode on a free port.
func startTest(t testing.TB, mode Mode, mod func(*Config)) Server {
	t.Helper()
	cfg := testConfig(t, mode)
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	select {
	case <-srv.Ready():
	case err := <-errc:
		t.Fatalf("Serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-errc; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return srv
}

// testConfig is a server configuration for tests: the toy protocol on a
// free loopback port, two loops, and in pool mode a pool of two workers.
func testConfig(t testing.TB, mode Mode) Config {
	t.Helper()
	cfg := Config{
		Mode:       mode,
		Addrs:      []string{"127.0.0.1:0"},
		Loops:      2,
		MaxConns:   100,
		NewSession: func(net.Addr) Session { return lineSession{} },
		Logger:     zerolog.Nop(),
	}
	if mode == ModePool {
		p, err := workerpool.New(workerpool.Config{Workers: 2, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Release(time.Second) })
		cfg.Executor = poolExec{p}
		cfg.Workers = 2
	}
	return cfg
}

var allModes = []Mode{ModePool, ModeInline, ModeGoroutine}

// variants are the modes plus single-loop, single-worker pool mode, where
// one worker serves every connection.
var variants = []struct {
	name string
	mode Mode
	mod  func(*Config)
}{
	{"pool", ModePool, nil},
	{"pool-t1-w1", ModePool, func(c *Config) { c.Loops, c.Workers = 1, 1 }},
	{"inline", ModeInline, nil},
	{"goroutine", ModeGoroutine, nil},
}

func TestConfigValidate(t *testing.T) {
	ok := func() Config {
		return Config{Mode: ModeInline, Addrs: []string{"127.0.0.1:0"}, Loops: 1, MaxConns: 1, NewSession: func(net.Addr) Session { return lineSession{} }}
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"valid", func(*Config) {}, ""},
		{"bad mode", func(c *Config) { c.Mode = "x" }, "unknown mode"},
		{"no loops", func(c *Config) { c.Loops = 0 }, "loops"},
		{"no conns", func(c *Config) { c.MaxConns = 0 }, "conn limit"},
		{"pool without executor", func(c *Config) { c.Mode = ModePool }, "Executor"},
		{"pool without workers", func(c *Config) { c.Mode, c.Executor = ModePool, poolExec{} }, "workers"},
		{"bad addr", func(c *Config) { c.Addrs = []string{"nope"} }, "listen address"},
		{"nothing to listen on", func(c *Config) { c.Addrs = nil }, "nothing to listen on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.mod(&c)
			err := c.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.want)
			}
		})
	}
}

// TestOrderUnderLoad pipelines slow and fast requests on many connections
// through a 2-worker pool, so connections wait in the run queue and long
// pipelines are served in slices; every reply must arrive in order.
func TestOrderUnderLoad(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			srv := startTest(t, v.mode, v.mod)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for c := 0; c < 8; c++ {
				wg.Add(1)
				go func(c int) {
					defer wg.Done()
					conn, err := net.Dial("tcp", srv.Addr().String())
					if err != nil {
						errs <- err
						return
					}
					defer conn.Close()
					_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
					var req, want strings.Builder
					for i := 0; i < 200; i++ {
						line := fmt.Sprintf("c%d-%d", c, i)
						if i%50 == 0 {
							line = "slow"
						}
						req.WriteString(line + "\n")
						want.WriteString("R:" + line + "\n")
					}
					if _, err := io.WriteString(conn, req.String()); err != nil {
						errs <- err
						return
					}
					got := make([]byte, want.Len())
					if _, err := io.ReadFull(conn, got); err != nil || string(got) != want.String() {
						errs <- fmt.Errorf("conn %d: replies out of order or short (%v)", c, err)
					}
				}(c)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestRepliesBeforeClose checks that a connection closed by a request gets
// every earlier reply first, also when those replies were sent in an earlier
// batch and are still on their way to the socket (a big one the socket
// cannot take at once).
func TestRepliesBeforeClose(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			srv := startTest(t, v.mode, v.mod)
			want := "R:x\nR:" + strings.Repeat("b", bigReply) + "\nR:y\n"
			for i := 0; i < 10; i++ {
				conn, err := net.Dial("tcp", srv.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
				if _, err := io.WriteString(conn, "x\nbig\n"); err != nil {
					t.Fatal(err)
				}
				// The first batch ran and its replies reached the socket
				// (the big one's start is here) before the second is sent.
				first := make([]byte, len("R:x\nR:"))
				if _, err := io.ReadFull(conn, first); err != nil {
					t.Fatalf("round %d: the first batch's replies: %q, %v", i, first, err)
				}
				if _, err := io.WriteString(conn, "y\nquit\nz\n"); err != nil {
					t.Fatal(err)
				}
				rest, _ := io.ReadAll(conn) // until the server closes
				if g := string(first) + string(rest); g != want {
					t.Fatalf("round %d: got %d bytes, want %d (prefix %q)", i, len(g), len(want), g[:min(len(g), 16)])
				}
				conn.Close()
			}
		})
	}
}

// TestPanicClosesOnlyItsConnection checks a panicking request closes its
// connection while others keep being served.
func TestPanicClosesOnlyItsConnection(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			srv := startTest(t, mode, nil)
			good, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer good.Close()
			_ = good.SetDeadline(time.Now().Add(10 * time.Second))
			bad, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer bad.Close()
			_ = bad.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.WriteString(bad, "a\npanic\nb\n")
			rest, _ := io.ReadAll(bad)
			if string(rest) != "R:a\n" {
				t.Fatalf("panicking connection got %q, want only the reply before the panic", rest)
			}
			_, _ = io.WriteString(good, "x\n")
			line, err := bufio.NewReader(good).ReadString('\n')
			if err != nil || line != "R:x\n" {
				t.Fatalf("other connection after a panic: %q, %v", line, err)
			}
			if srv.Stats().Panics != 1 {
				t.Fatalf("Stats().Panics = %d, want 1", srv.Stats().Panics)
			}
		})
	}
}

// TestEndlessLineClosed sends a line that never ends: an incomplete request
// cannot pause reads (only more input completes it), so the connection is
// closed once it buffers MaxInput.
func TestEndlessLineClosed(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			srv := startTest(t, mode, func(c *Config) { c.MaxInput = 1 << 20 })
			conn, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			for i := 0; i < 64; i++ { // up to 4 MiB, 4x the cap
				if _, err := conn.Write(chunk); err != nil {
					break
				}
			}
			if _, err := conn.Read(make([]byte, 1)); err == nil {
				t.Fatalf("connection over the input cap still open")
			}
			if st := srv.Stats(); st.ClosedOverflow != 1 {
				t.Fatalf("ClosedOverflow = %d, want 1", st.ClosedOverflow)
			}
		})
	}
}

// TestUnreadRepliesPauseReading pipelines requests with 256 KiB replies and
// never reads: the server must stop running them once the unsent replies
// pass the high-water mark and stop reading the connection (the client's
// writes block on full socket buffers) instead of buffering, and keep the
// connection open, as memcached does.
func TestUnreadRepliesPauseReading(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			srv := startTest(t, mode, nil)
			conn, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.(*net.TCPConn).SetReadBuffer(16 << 10)
			// 1 KiB requests: what the server holds when it stops reading
			// is a few dozen requests, not thousands (shutdown runs them).
			chunk := bytes.Repeat([]byte("big-"+strings.Repeat("x", 1019)+"\n"), 64)
			const total = 256 << 20 // 64 TiB of replies if it all ran
			written := 0
			_ = conn.SetWriteDeadline(time.Now().Add(3 * time.Second))
			for written < total {
				n, err := conn.Write(chunk)
				written += n
				if err != nil {
					break
				}
			}
			if written >= total {
				t.Fatalf("the server took all %d bytes of requests whose replies nobody reads", written)
			}
			if mode == ModeGoroutine {
				return // its goroutine blocks in write: nothing more is read
			}
			st := srv.Stats()
			if err := checkReadPausing(); err != nil {
				// The fallback (readpause_other.go): closed, not paused.
				if st.ReadPauses != 0 || st.ClosedOverflow != 1 {
					t.Errorf("without read pausing (%v): ReadPauses = %d, ClosedOverflow = %d; want 0 and 1", err, st.ReadPauses, st.ClosedOverflow)
				}
				return
			}
			if st.ReadPauses == 0 {
				t.Errorf("ReadPauses = 0 after %d bytes of requests", written)
			}
			// Queued replies up to the high-water mark plus one write, and
			// framed input up to its high-water mark plus one read.
			if limit := int64(DefaultOutputHighWater + bigReply + 4*DefaultInputHighWater); st.BufferBytes > limit {
				t.Errorf("BufferBytes = %d, want <= %d", st.BufferBytes, limit)
			}
			if st.ClosedOverflow != 0 {
				t.Errorf("ClosedOverflow = %d, want 0", st.ClosedOverflow)
			}
		})
	}
}

// TestIdleTimeout closes a connection that sends nothing.
func TestIdleTimeout(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			srv := startTest(t, mode, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
			conn, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			start := time.Now()
			if _, err := conn.Read(make([]byte, 1)); err == nil {
				t.Fatal("idle connection got data")
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Fatalf("idle connection closed after %v", d)
			}
		})
	}
}

// TestLargeRepliesToASlowReader fills the socket while the client does not
// read, so replies take the loop's buffered path (and, with worker writes,
// the fallback from a direct write); order and content must hold.
func TestLargeRepliesToASlowReader(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			srv := startTest(t, v.mode, v.mod)
			conn, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			var req, want strings.Builder
			big := "R:" + strings.Repeat("b", bigReply) + "\n"
			for i := 0; i < 16; i++ {
				req.WriteString("big\n" + fmt.Sprintf("s%d\n", i))
				want.WriteString(big + fmt.Sprintf("R:s%d\n", i))
			}
			if _, err := io.WriteString(conn, req.String()); err != nil {
				t.Fatal(err)
			}
			testenv.WaitUndelivered(t, conn, 10*time.Second) // the server's writes block
			got := make([]byte, want.Len())
			if _, err := io.ReadFull(conn, got); err != nil {
				t.Fatalf("read: %v", err)
			}
			if string(got) != want.String() {
				t.Fatalf("replies to a slow reader differ from the requests' order")
			}
		})
	}
}

// countSession is blockSession that also counts the requests it executes.
type countSession struct {
	blockSession
	ran *atomic.Int64
}

func (s countSession) Execute(r *protocol.Request, out []byte) ([]byte, bool) {
	s.ran.Add(1)
	return s.blockSession.Execute(r, out)
}

// TestRequestsReadBeforeCloseRun pipelines a request that blocks its
// executor, then 500 more, then closes (FIN) or resets (RST): the server
// reads everything and sees the close while the first request still runs.
// Every request it read must run once the executor is free.
func TestRequestsReadBeforeCloseRun(t *testing.T) {
	for _, v := range variants {
		for _, reset := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reset=%v", v.name, reset), func(t *testing.T) {
				var ran atomic.Int64
				release := make(chan struct{})
				srv := startTest(t, v.mode, func(c *Config) {
					if v.mod != nil {
						v.mod(c)
					}
					c.NewSession = func(net.Addr) Session {
						return countSession{blockSession{release: release}, &ran}
					}
				})
				conn, err := net.Dial("tcp", srv.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				var req strings.Builder
				req.WriteString("block\n")
				const n = 500
				for i := 0; i < n; i++ {
					fmt.Fprintf(&req, "x%d\n", i)
				}
				if _, err := io.WriteString(conn, req.String()); err != nil {
					t.Fatal(err)
				}
				if reset {
					_ = conn.(*net.TCPConn).SetLinger(0)
				}
				conn.Close()
				// Wait until the server saw the close (the loop is blocked in
				// inline mode, so there give up after a while), then let the
				// first request finish.
				closed := false
				for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					if srv.Stats().CurrConns == 0 {
						closed = true
						break
					}
				}
				close(release)
				want := int64(n + 1)
				for end := time.Now().Add(20 * time.Second); ran.Load() < want && time.Now().Before(end); {
					time.Sleep(5 * time.Millisecond)
				}
				if got := ran.Load(); got != want {
					t.Fatalf("ran %d of %d requests (close seen before the release: %v)", got, want, closed)
				}
			})
		}
	}
}
