package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// memcachedServer is the real memcached, for differential tests.
type memcachedServer struct {
	Addr string
	cmd  *exec.Cmd
}

// startMemcached runs /usr/bin/memcached on a free loopback port, or skips
// the test loudly when it is not installed.
func startMemcached(t testing.TB, extra ...string) *memcachedServer {
	t.Helper()
	path, err := exec.LookPath("memcached")
	if err != nil {
		t.Skip("SKIPPED: memcached not installed (Debian package memcached); the README's test command installs it")
	}
	for attempt := 0; attempt < 5; attempt++ {
		port := freePort(t)
		args := append([]string{"-p", strconv.Itoa(port), "-l", "127.0.0.1", "-U", "0", "-m", "256", "-t", "2"}, extra...)
		cmd := exec.Command(path, args...)
		if os.Getuid() == 0 {
			cmd.Args = append(cmd.Args, "-u", "root")
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
				m := &memcachedServer{Addr: addr, cmd: cmd}
				t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
				return m
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("memcached on port %d did not start (%s); retrying", port, stderr.String())
	}
	t.Fatal("could not start memcached")
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// sentinel is sent after a case so the reader knows when the reply is
// complete; its reply is stripped before comparison.
const (
	sentinel      = "version\r\n"
	sentinelReply = "VERSION 1.6.18\r\n"
)

// exchange sends req on a fresh connection followed by the sentinel and
// returns everything received before the sentinel's reply, and whether the
// server closed the connection.
func exchange(addr, req string) (reply string, closed bool, err error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req+sentinel); err != nil {
		// The server may close while we write (e.g. an overlong line).
		closed = true
	}
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for {
		if bytes.HasSuffix(got.Bytes(), []byte(sentinelReply)) {
			return string(got.Bytes()[:got.Len()-len(sentinelReply)]), false, nil
		}
		// A desynchronised stream may swallow the sentinel: stop after a
		// quiet period.
		_ = c.SetReadDeadline(time.Now().Add(700 * time.Millisecond))
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return got.String(), false, nil
			}
			return got.String(), true, nil
		}
	}
}
