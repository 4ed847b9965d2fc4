package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// Listening like memcached: several -l (repeated or a comma list, each
// address with -p or its own port) and a unix socket with -s/-a, which
// disables TCP. Each case runs in every variant and against memcached.

// TestSeveralListenAddresses listens on three loopback addresses given as a
// comma list and a repeated -l with its own port; each answers a real
// client.
func TestSeveralListenAddresses(t *testing.T) {
	check := func(t *testing.T, addrs []string) {
		for _, a := range addrs {
			c := memcache.New(a)
			c.Timeout = 5 * time.Second
			key := "k" + strings.NewReplacer(".", "", ":", "").Replace(a)
			if err := c.Set(&memcache.Item{Key: key, Value: []byte(a)}); err != nil {
				t.Fatalf("set via %s: %v", a, err)
			}
			if it, err := c.Get(key); err != nil || string(it.Value) != a {
				t.Fatalf("get via %s: %v", a, err)
			}
		}
	}
	argsFor := func(p1, p2 int) ([]string, []string) {
		port, own := strconv.Itoa(p1), strconv.Itoa(p2)
		return []string{"-p", port, "-l", "127.0.0.1,127.0.0.2", "-l", "127.0.0.3:" + own},
			[]string{"127.0.0.1:" + port, "127.0.0.2:" + port, "127.0.0.3:" + own}
	}
	t.Run("memcached", func(t *testing.T) {
		path := testenv.NeedTool(t, "memcached", "memcached")
		args, addrs := argsFor(testenv.FreePort(t), testenv.FreePort(t))
		startRaw(t, path, append(args, "-U", "0", "-u", "root"), addrs[0])
		check(t, addrs)
	})
	forVariants(t, func(t *testing.T, v serverVariant) {
		args, addrs := argsFor(testenv.FreePort(t), testenv.FreePort(t))
		s := startServerArgs(t, binPath, append(append(args, "--mode", v.mode, "--log-format", "json"), v.extra...)...)
		check(t, addrs)
		if !strings.Contains(s.Log(), `"addrs":["127.0.0.1:`) {
			t.Errorf("the start line does not list the addresses:\n%s", s.Log())
		}
	})
}

// TestUnixSocket serves a unix socket with -s and -a: a real client works
// through it, the file has the -a mode, no TCP port listens, stats settings
// names it, and the file is gone after a SIGTERM.
func TestUnixSocket(t *testing.T) {
	check := func(t *testing.T, sock string, port int) {
		fi, err := os.Stat(sock)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o750 {
			t.Errorf("socket file mode %v, want a socket with 0750", fi.Mode())
		}
		c := memcache.New(sock)
		c.Timeout = 5 * time.Second
		if err := c.Set(&memcache.Item{Key: "u", Value: []byte("nix")}); err != nil {
			t.Fatalf("set over the socket: %v", err)
		}
		if it, err := c.Get("u"); err != nil || string(it.Value) != "nix" {
			t.Fatalf("get over the socket: %v", err)
		}
		if got := unixStatsSetting(t, sock, "domain_socket"); got != sock {
			t.Errorf("stats settings domain_socket = %q, want %q", got, sock)
		}
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
			c.Close()
			t.Errorf("-s must disable TCP, but port %d answers", port)
		}
	}
	t.Run("memcached", func(t *testing.T) {
		path := testenv.NeedTool(t, "memcached", "memcached")
		sock := filepath.Join(t.TempDir(), "mc.sock")
		port := testenv.FreePort(t)
		cmd := startRaw(t, path, []string{"-s", sock, "-a", "750", "-p", strconv.Itoa(port), "-U", "0", "-u", "root"}, sock)
		check(t, sock, port)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	forVariants(t, func(t *testing.T, v serverVariant) {
		sock := filepath.Join(t.TempDir(), "tandem.sock")
		port := testenv.FreePort(t)
		s := startServerArgs(t, binPath, append([]string{"-s", sock, "-a", "750", "-p", strconv.Itoa(port),
			"--mode", v.mode, "--log-format", "json"}, v.extra...)...)
		check(t, sock, port)
		if code, err := s.Stop(20 * time.Second); err != nil || code != 0 {
			t.Fatalf("exit %d, %v", code, err)
		}
		if _, err := os.Stat(sock); err == nil {
			t.Errorf("socket file %s left behind after exit", sock)
		}
		// A stale file left by a crash is replaced at the next start; a
		// live server on it is not.
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		_, stderr, code := runTandem(t, "-s", sock, "--mode", v.mode)
		if code != 1 || !strings.Contains(stderr, "another server is listening") {
			t.Errorf("start over a live socket: exit %d, %q", code, stderr)
		}
		ln.Close()
		startServerArgs(t, binPath, "-s", sock, "--mode", v.mode, "--log-format", "json")
		if got := unixStatsSetting(t, sock, "domain_socket"); got != sock {
			t.Errorf("after replacing a stale socket: domain_socket = %q", got)
		}
	})
}

// startRaw starts a server process and waits until addr (host:port, or a
// unix socket path) accepts connections.
func startRaw(t *testing.T, path string, args []string, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	if !waitFor(10*time.Second, func() bool {
		c, err := net.DialTimeout(network, addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("%s %q: %s does not answer", filepath.Base(path), args, addr)
	}
	return cmd
}

// unixStatsSetting reads one "stats settings" field over a unix socket.
func unixStatsSetting(t *testing.T, sock, name string) string {
	t.Helper()
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "stats settings\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stats settings: %v", err)
		}
		if line == "END\r\n" {
			return ""
		}
		var k, v string
		if n, _ := fmt.Sscanf(line, "STAT %s %s", &k, &v); n == 2 && k == name {
			return v
		}
	}
}
