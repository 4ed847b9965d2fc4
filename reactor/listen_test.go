package reactor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestListeners serves two TCP addresses and a unix socket at once in every
// mode: each answers, the socket file gets the -a mode and is removed when
// the server stops.
func TestListeners(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "tandem.sock")
			srv := startTest(t, mode, func(c *Config) {
				c.Addrs = []string{"127.0.0.1:0", "127.0.0.2:0"}
				c.UnixSocket = sock
				c.UnixMask = 0o750
				c.Backlog = 7
			})
			addrs := srv.Addrs()
			if len(addrs) != 3 || addrs[2].Network() != "unix" {
				t.Fatalf("Addrs() = %v, want two TCP addresses and the socket", addrs)
			}
			for _, a := range addrs {
				c, err := net.DialTimeout(a.Network(), a.String(), 5*time.Second)
				if err != nil {
					t.Fatalf("dial %v: %v", a, err)
				}
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(c, "hi\n")
				if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "R:hi\n" {
					t.Errorf("%v: %q, %v", a, line, err)
				}
				c.Close()
			}
			fi, err := os.Stat(sock)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o750 {
				t.Errorf("socket file mode %v, want a socket with 0750", fi.Mode())
			}
			for _, a := range addrs[:2] {
				if backlog, ok := listenBacklog(a.(*net.TCPAddr).Port); ok && backlog != 7 {
					t.Errorf("%v: backlog %d, want 7", a, backlog)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if waitGone(sock) != nil {
				t.Errorf("socket file %s left behind after shutdown", sock)
			}
		})
	}
}

// TestUnixSocketStaleAndLive: a stale socket file is replaced, a live one
// (another server answers on it) makes the server refuse to start.
func TestUnixSocketStaleAndLive(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			cfg := testConfig(t, mode)
			cfg.Addrs, cfg.UnixSocket = nil, sock
			srv, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Serve(); err == nil || !strings.Contains(err.Error(), "another server is listening") {
				t.Fatalf("Serve over a live socket: %v", err)
			}
			ln.Close() // now stale: the file stays, nobody listens
			if _, err := os.Stat(sock); err != nil {
				t.Fatal(err)
			}
			srv2 := startTest(t, mode, func(c *Config) { c.Addrs, c.UnixSocket = nil, sock })
			c, err := net.DialTimeout("unix", srv2.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatalf("dial over the replaced stale socket: %v", err)
			}
			c.Close()
		})
	}
}

// TestBindErrorNamesAddress: a busy address fails Serve with an error that
// names it, like Go's and memcached's.
func TestBindErrorNamesAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			cfg := testConfig(t, mode)
			cfg.Addrs = []string{"127.0.0.1:0", busy.Addr().String()}
			srv, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = srv.Serve()
			want := "listen tcp " + busy.Addr().String() + ": bind: address already in use"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Serve = %v, want an error containing %q", err, want)
			}
			if errors.Is(err, ErrServerClosed) {
				t.Fatal("a bind failure reported as a closed server")
			}
		})
	}
}

// listenBacklog reads a TCP listener's backlog with ss(8), which shows it
// as the Send-Q of a listening socket, if ss is installed.
func listenBacklog(port int) (int, bool) {
	out, err := exec.Command("ss", "-Hltn", fmt.Sprintf("sport = :%d", port)).Output()
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return 0, false
	}
	n, err := strconv.Atoi(f[2])
	return n, err == nil
}

// waitGone waits briefly for path to disappear.
func waitGone(path string) error {
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s still exists", path)
}
