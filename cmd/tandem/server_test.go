package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the tandem binary built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tandem-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "tandem")
	args := []string{"build", "-o", binPath}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, ".")
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building tandem:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// modes is the end-to-end matrix.
var modes = []string{"pool", "inline", "goroutine"}

// server is a running tandem process.
type server struct {
	t    testing.TB
	cmd  *exec.Cmd
	Addr string

	mu     sync.Mutex
	stderr bytes.Buffer // guarded by mu
	exited chan struct{}
	err    error // valid after exited is closed
}

// startServer runs the binary on a free loopback port with the given mode and
// extra flags, and waits until it listens (see startServerArgs).
func startServer(t testing.TB, mode string, extra ...string) *server {
	t.Helper()
	return startServerBin(t, binPath, mode, extra...)
}

// readLog copies the server's log and reports the listening address.
func (s *server) readLog(r io.Reader, addrc chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Bytes()
		s.mu.Lock()
		s.stderr.Write(line)
		s.stderr.WriteByte('\n')
		s.mu.Unlock()
		if sent {
			continue
		}
		var entry struct {
			Message string `json:"message"`
			Addr    string `json:"addr"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.Message == "tandem listening" {
			addrc <- entry.Addr
			sent = true
		}
	}
}

// Log returns what the server logged so far.
func (s *server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// Kill stops the server at once.
func (s *server) Kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Stop sends SIGTERM and waits for the exit status.
func (s *server) Stop(timeout time.Duration) (exitCode int, err error) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(timeout):
		s.Kill()
		return -1, fmt.Errorf("no exit within %v", timeout)
	}
	return s.cmd.ProcessState.ExitCode(), nil
}

// dial opens a raw connection with a deadline for the whole test step, a
// hang guard.
func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes req and reads until the reply has want's length (or the
// connection closes, or a minute passes: a hang guard), returning what was
// read.
func roundTrip(t testing.TB, c net.Conn, req string, wantLen int) string {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("write %q: %v", req, err)
	}
	return readN(t, c, wantLen)
}

func readN(t testing.TB, c net.Conn, n int) string {
	t.Helper()
	buf := make([]byte, n)
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := io.ReadFull(c, buf)
	if err != nil {
		return string(buf[:got])
	}
	return string(buf)
}

// forModes runs f as a subtest per mode, in parallel.
func forModes(t *testing.T, f func(t *testing.T, mode string)) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f(t, mode)
		})
	}
}

func quote(s string) string {
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return strings.ReplaceAll(fmt.Sprintf("%q", s), `\r\n`, `\r\n`)
}
