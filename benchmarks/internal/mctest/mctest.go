// Package mctest holds the benchmarks module's test plumbing: it starts the
// real memcached on a free 127.0.0.1 port for a test and stops it when the
// test ends. Tests of loadgen and of the commands share it instead of each
// carrying a copy. It imports nothing from the rest of the module, so any
// package's tests can use it.
package mctest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/benchmarks/internal/freeport"
)

// startWait bounds how long memcached may take to accept connections.
const startWait = 5 * time.Second

// Memcached starts `memcached -t 1 -m 64 -U 0` plus extra on a free
// 127.0.0.1 port and returns its address. The process is killed when the
// test ends. The test is skipped when memcached is not installed, and fails
// when it cannot be started.
func Memcached(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		t.Skip("memcached not installed (apt-get install -y memcached)")
	}
	for range 3 { // the port can be taken between Get and memcached's bind
		port := FreePort(t)
		args := append([]string{"-p", strconv.Itoa(port), "-l", "127.0.0.1", "-U", "0", "-t", "1", "-m", "64"}, extra...)
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root") // memcached refuses to run as root otherwise
		}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatalf("mctest: start memcached: %v", err)
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		stop := func() {
			_ = cmd.Process.Kill()
			<-exited
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		// Another process may hold the port while memcached fails to bind.
		if waitListening(addr, exited) && servedBy(addr, cmd.Process.Pid) {
			t.Cleanup(stop)
			return addr
		}
		stop()
	}
	t.Fatal("mctest: memcached did not start")
	return ""
}

// waitListening reports whether addr accepts a connection before the
// process exits or startWait passes.
func waitListening(addr string, exited <-chan struct{}) bool {
	for deadline := time.Now().Add(startWait); time.Now().Before(deadline); {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// servedBy reports whether the server at addr is process pid, by the pid
// its `stats` gives. This module's memcached speaks plain text (the server
// module's testenv, which also starts it with TLS, asks /proc instead).
func servedBy(addr string, pid int) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // a hang guard
	if _, err := c.Write([]byte("stats\r\n")); err != nil {
		return false
	}
	want := "STAT pid " + strconv.Itoa(pid)
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		switch line := strings.TrimSuffix(sc.Text(), "\r"); {
		case line == want:
			return true
		case line == "END" || strings.HasPrefix(line, "STAT pid "):
			return false
		}
	}
	return false
}

// FreePort returns a port free on 127.0.0.1, or fails the test.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
