package reactor

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandemcache/tandem/protocol"
)

// blockSession is lineSession whose "block" request waits for release.
type blockSession struct {
	lineSession
	release chan struct{}
}

func (s blockSession) Execute(r *protocol.Request, out []byte) ([]byte, bool) {
	if string(r.Key) == "block" {
		<-s.release
	}
	return s.lineSession.Execute(r, out)
}

func TestConnsAndLatency(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			var observed, bad atomic.Int64
			release := make(chan struct{})
			srv := startTest(t, mode, func(c *Config) {
				c.NewSession = func(net.Addr) Session { return blockSession{release: release} }
				c.ObserveLatency = func(d time.Duration) {
					observed.Add(1)
					if d < 0 || d > time.Minute {
						bad.Add(1)
					}
				}
			})
			const rounds = 3 * latencySampleEvery
			var clients []net.Conn
			for range 2 {
				c, err := net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				r := bufio.NewReader(c)
				for i := range rounds {
					fmt.Fprintf(c, "x%d\n", i)
					if line, err := r.ReadString('\n'); err != nil || line != fmt.Sprintf("R:x%d\n", i) {
						t.Fatalf("round %d: %q, %v", i, line, err)
					}
				}
				clients = append(clients, c)
			}
			if n := observed.Load(); n < 2 {
				t.Errorf("%d latency samples after %d batches on each of 2 connections, want >= 2", n, rounds)
			}
			if bad.Load() > 0 {
				t.Errorf("%d implausible latency samples", bad.Load())
			}

			infos := Conns(srv)
			var conns, listeners int
			for _, ci := range infos {
				if ci.Listening {
					listeners++
					if ci.Remote.String() != srv.Addr().String() || ci.FD <= 0 {
						t.Errorf("listener info %+v, want addr %v", ci, srv.Addr())
					}
					continue
				}
				conns++
				if ci.FD <= 0 || ci.Local.String() != srv.Addr().String() {
					t.Errorf("conn info %+v: want fd > 0 and local %v", ci, srv.Addr())
				}
				if age := time.Since(ci.LastActive); age < 0 || age > 30*time.Second {
					t.Errorf("conn %d last active %v ago", ci.FD, age)
				}
				found := false
				for _, c := range clients {
					found = found || c.LocalAddr().String() == ci.Remote.String()
				}
				if !found {
					t.Errorf("conn remote %v is none of the clients", ci.Remote)
				}
			}
			if conns != 2 {
				t.Errorf("Conns lists %d connections, want 2: %+v", conns, infos)
			}
			if wantL := map[Mode]int{ModeGoroutine: 1}[mode]; listeners != wantL {
				t.Errorf("Conns lists %d listeners, want %d", listeners, wantL)
			}

			// A connection blocked in Execute is reported as executing in pool mode.
			if mode != ModePool {
				close(release)
				return
			}
			fmt.Fprintf(clients[0], "block\n")
			deadline := time.Now().Add(10 * time.Second)
			executing := 0
			for executing == 0 && time.Now().Before(deadline) {
				for _, ci := range Conns(srv) {
					if ci.Executing {
						executing++
						if ci.Remote.String() != clients[0].LocalAddr().String() {
							t.Errorf("executing conn is %v, want %v", ci.Remote, clients[0].LocalAddr())
						}
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
			close(release)
			if executing != 1 {
				t.Errorf("%d connections reported executing, want 1", executing)
			}
			line, err := bufio.NewReader(clients[0]).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "R:block") {
				t.Fatalf("blocked request reply %q, %v", line, err)
			}
		})
	}
}

func TestActivityNow(t *testing.T) {
	coarse := func() int64 { return 1_000 }
	tests := []struct {
		name  string
		cfg   Config
		exact bool // want the system clock, not the coarse one
	}{
		{"no clock", Config{}, true},
		{"coarse clock", Config{Clock: coarse}, false},
		{"idle timeout needs the exact clock", Config{Clock: coarse, IdleTimeout: time.Second}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cfg.activityNow()
			if exact := got != 1_000*int64(time.Second); exact != tc.exact {
				t.Fatalf("activityNow() = %d, exact clock %v, want %v", got, exact, tc.exact)
			}
			if tc.exact && time.Since(time.Unix(0, got)) > time.Minute {
				t.Fatalf("activityNow() = %v, not now", time.Unix(0, got))
			}
		})
	}
}

// A connection that sends a request and closes its side at once is still
// listed while the request runs (memcached lists it until it answered):
// "stats conns" sent that way finds its own connection.
func TestConnsListsClosedConnWithWorkLeft(t *testing.T) {
	release := make(chan struct{})
	srv := startTest(t, ModePool, func(c *Config) {
		c.NewSession = func(net.Addr) Session { return blockSession{release: release} }
	})
	c, err := net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "block\n")
	_ = c.(*net.TCPConn).CloseWrite()
	for i := 0; srv.Stats().TotalConns == 0 || srv.Stats().CurrConns != 0; i++ {
		if i == 10_000 {
			close(release)
			t.Fatal("the server did not see the half-close")
		}
		time.Sleep(time.Millisecond)
	}
	infos := Conns(srv)
	close(release)
	if len(infos) != 1 || infos[0].Remote.String() != c.LocalAddr().String() {
		t.Errorf("Conns after the half-close with a request running = %+v, want the connection %v", infos, c.LocalAddr())
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "R:block\n" {
		t.Fatalf("reply %q, %v", line, err)
	}
	for i := 0; len(Conns(srv)) != 0; i++ {
		if i == 10_000 {
			t.Fatalf("Conns still lists %+v after the reply", Conns(srv))
		}
		time.Sleep(time.Millisecond)
	}
}
