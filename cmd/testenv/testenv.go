// Package testenv holds the test plumbing shared by the server module's
// tests: free loopback ports, the Debian tools the differential and
// conformance tests compare against (memcached, memccapable, nutcracker),
// and a fence that waits until a peer has read what a test wrote.
//
// It is for this module's tests only (it imports testing) and makes no
// compatibility promise. It lives under cmd/ without an internal element so
// that tests of every package (protocol, reactor, cmd/tandem) can import
// it: Go allows cmd/internal/... only below cmd/. The benchmarks keep their
// own copies and import nothing internal.
package testenv

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

// RequireToolsEnv names the environment variable that turns a missing tool
// from a loud skip into a test failure. .ci/test sets it once it has
// installed the tools, so that no differential or conformance test can be
// skipped in CI.
const RequireToolsEnv = "TANDEM_REQUIRE_TOOLS"

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. Prefer
// listening on port 0 where the code under test allows it: another process
// may take the port between this call and its use.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// NeedTool returns the path of the Debian tool name (package pkg), looked up
// in PATH and then in /usr/sbin (which a non-root PATH may lack). When it is
// missing the test is skipped with a message starting "SKIPPED", or fails
// when RequireToolsEnv is set.
func NeedTool(t testing.TB, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/sbin/" + name; isExecutable(p) {
		return p
	}
	if os.Getenv(RequireToolsEnv) != "" {
		t.Fatalf("%s not installed (Debian package %s) but %s is set: .ci/test installs it", name, pkg, RequireToolsEnv)
	}
	t.Skipf("SKIPPED: %s not installed (Debian package %s); the README's test command installs it", name, pkg)
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Memcached is a running memcached, the reference of the differential tests.
type Memcached struct {
	Addr   string // 127.0.0.1:port
	Cmd    *exec.Cmd
	Exited <-chan struct{} // closed once the process has exited and been waited for
}

// StartMemcached runs memcached on a free loopback port with -m 256 -t 2,
// no UDP, and the extra arguments (later ones win), and stops it when the
// test ends. It skips or fails like NeedTool when memcached is missing.
func StartMemcached(t testing.TB, extra ...string) *Memcached {
	t.Helper()
	return StartMemcachedBinary(t, NeedTool(t, "memcached", "memcached"), extra...)
}

// StartMemcachedBinary is StartMemcached with the memcached binary at path
// (another release, e.g. one built from source).
func StartMemcachedBinary(t testing.TB, path string, extra ...string) *Memcached {
	t.Helper()
	var log bytes.Buffer
	for attempt := 0; attempt < 5; attempt++ {
		port := FreePort(t) // memcached cannot listen on port 0 and report it
		args := append([]string{"-p", strconv.Itoa(port), "-l", "127.0.0.1", "-U", "0", "-m", "256", "-t", "2"}, extra...)
		if os.Getuid() == 0 {
			args = append(args, "-u", "root")
		}
		cmd := exec.Command(path, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		// Accepting is not enough: another test's server may have taken
		// the port first, answering while this memcached fails to bind.
		if waitListening(addr, exited, time.Minute) && Listens(cmd.Process.Pid, addr) {
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			return &Memcached{Addr: addr, Cmd: cmd, Exited: exited}
		}
		_ = cmd.Process.Kill()
		<-exited
		// Most likely another process took the port: try another.
		log.WriteString("port " + strconv.Itoa(port) + ": " + stderr.String() + "\n")
	}
	t.Fatalf("could not start memcached:\n%s", log.String())
	return nil
}

// Listens reports whether process pid holds the socket listening on addr
// (ip:port), from /proc: the listener's inode in /proc/net/tcp among the
// process's descriptors. It tells a server from
// another process that took its port, whatever the server speaks (TLS,
// SASL).
func Listens(pid int, addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return false
	}
	socks, err := tcpSockets()
	if err != nil {
		return false
	}
	var names []string
	for k, row := range socks {
		if k.local == ap && row.listen {
			names = append(names, "socket:["+row.inode+"]")
		}
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(dir + "/" + fd.Name()); err == nil && slices.Contains(names, target) {
			return true
		}
	}
	return false
}

// waitListening dials addr until it accepts, the process exits, or the hang
// guard passes.
func waitListening(addr string, exited <-chan struct{}, guard time.Duration) bool {
	deadline := time.Now().Add(guard)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
