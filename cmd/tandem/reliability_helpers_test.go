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
	"sync"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// Helpers shared by the reliability, abuse, transcript and linearizability
// tests: process inspection through /proc, stats, and a conversation driver
// that tells a reply from a closed or desynchronised connection.

// pid is the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// alive reports whether the server process is still running.
func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// procFDs counts the open file descriptors of process pid.
func procFDs(t testing.TB, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("reading /proc/%d/fd: %v", pid, err)
	}
	return len(ents)
}

// procRSS returns the resident set size of process pid in bytes.
func procRSS(t testing.TB, pid int) int64 {
	t.Helper()
	rss, err := readRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return rss
}

// readRSS reads VmRSS from /proc/<pid>/status; safe from any goroutine.
func readRSS(pid int) (int64, error) { return readProcStatusKB(pid, "VmRSS") }

// readPeakRSS reads VmHWM, the peak resident set size of the process's
// life so far, which no sampling can miss.
func readPeakRSS(pid int) (int64, error) { return readProcStatusKB(pid, "VmHWM") }

// readProcStatusKB reads a "<field>: <n> kB" line of /proc/<pid>/status, in
// bytes.
func readProcStatusKB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s line %q: %w", field, sc.Text(), err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// serverStats fetches "stats" (or "stats <group>") on a fresh connection.
func serverStats(addr string, group string) (map[string]string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	cmd := "stats\r\n"
	if group != "" {
		cmd = "stats " + group + "\r\n"
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return nil, err
	}
	st := map[string]string{}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading stats: %w", err)
		}
		line = strings.TrimSuffix(line, "\r\n")
		if line == "END" {
			return st, nil
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 || f[0] != "STAT" {
			return nil, fmt.Errorf("unexpected stats line %q", line)
		}
		st[f[1]] = f[2]
	}
}

// statUint reads one numeric stat.
func statUint(t testing.TB, st map[string]string, name string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(st[name], 10, 64)
	if err != nil {
		t.Fatalf("stat %s = %q: %v", name, st[name], err)
	}
	return v
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// streamState is what a connection did after the reply to a request.
type streamState int

const (
	// inSync: the sentinel sent after the request was answered at once.
	inSync streamState = iota
	// closedConn: the server closed the connection.
	closedConn
	// swallowed: the server neither answered the sentinel nor closed (it is
	// still reading a declared value, which swallows the sentinel).
	swallowed
)

func (s streamState) String() string {
	return [...]string{"in sync", "closed", "swallowing"}[s]
}

// conversation is the outcome of one request on a fresh connection.
type conversation struct {
	reply string // bytes before the sentinel's reply (all bytes when closed or swallowed)
	state streamState
}

// writeStyle says how a request is cut into writes.
type writeStyle int

const (
	// writeWhole sends the request with one write.
	writeWhole writeStyle = iota
	// writeTiny sends it in writes of 1 to 3 bytes (Nagle off), so the
	// server sees it split at nearly every offset.
	writeTiny
)

// converse opens a connection to addr, writes the segments of req in the
// given style followed by the sentinel, and returns what the server sent
// before the sentinel's reply and what the connection did (see settle;
// quiet > 0 allows it to swallow the input). Between segments it waits until
// the server has read the previous one (testenv.WaitRead), so each segment
// reaches the server as a read of its own, and, where await names it, until
// the reply to the segments so far has arrived (memcached drops replies it
// still holds when some errors follow). Replies are read while writing, so a
// large request cannot deadlock against the replies it produces.
func converse(addr string, segments, await []string, style writeStyle, quiet time.Duration) (conversation, error) {
	return converseWith(addr, segments, await, style, quiet, sentinel, sentinelReply)
}

// binarySentinel is a binary-protocol noop with opaque 0xdeadbeef, and
// binarySentinelReply its reply: the sentinel of binary connections.
const (
	binarySentinel      = "\x80\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xde\xad\xbe\xef\x00\x00\x00\x00\x00\x00\x00\x00"
	binarySentinelReply = "\x81\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xde\xad\xbe\xef\x00\x00\x00\x00\x00\x00\x00\x00"
)

// converseWith is converse with another sentinel request and reply.
func converseWith(addr string, segments, await []string, style writeStyle, quiet time.Duration, sentinel, sentinelReply string) (conversation, error) {
	c, err := net.DialTimeout("tcp", addr, hangGuard)
	if err != nil {
		return conversation{}, err
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	_ = c.SetWriteDeadline(time.Now().Add(hangGuard))
	r := newReplyReader(c)
	for i, seg := range segments {
		if i > 0 {
			if err := testenv.WaitRead(c, hangGuard); err != nil {
				return conversation{reply: string(r.take())}, err
			}
			if i <= len(await) && await[i-1] != "" {
				n := len(await[i-1])
				// A wrong reply, or a close, shows in the comparison.
				if ok, _ := r.await(func(b []byte) bool { return len(b) >= n }, time.Now().Add(hangGuard)); !ok {
					break
				}
			}
		}
		if writeChunks(c, seg, style) != nil {
			break // the server closed: the reader sees it
		}
	}
	_, _ = io.WriteString(c, sentinel)
	state, err := r.settle(endsWith(sentinelReply), quiet)
	got := r.take()
	if err == nil && state == inSync {
		got = got[:len(got)-len(sentinelReply)]
	}
	return conversation{reply: string(got), state: state}, err
}

// writeChunks writes s whole or in tiny pieces.
func writeChunks(c net.Conn, s string, style writeStyle) error {
	if style == writeWhole || len(s) == 0 {
		_, err := io.WriteString(c, s)
		return err
	}
	for i := 0; i < len(s); {
		n := min(1+i%3, len(s)-i)
		if _, err := io.WriteString(c, s[i:i+n]); err != nil {
			return err
		}
		i += n
		if i%16 == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

// escapeTranscript renders b as the body of a transcript "> " or "< " line
// (see protocol/testdata/transcripts/README.md), so that a divergence can be
// pasted into a transcript file as a regression case.
func escapeTranscript(b string) string {
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '\r':
			sb.WriteString(`\r`)
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\t':
			sb.WriteString(`\t`)
		case c == '"':
			sb.WriteString(`\"`)
		case c == '\\':
			sb.WriteString(`\\`)
		case c == ' ' && (i == 0 || i == len(b)-1):
			sb.WriteString(`\x20`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// transcriptCase renders a request and memcached's reply as a transcript
// case, one reply line per "< " line.
func transcriptCase(name, req, reply string, closed bool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "=== %s\n> %s\n", name, escapeTranscript(req))
	for _, line := range strings.SplitAfter(reply, "\n") {
		if line != "" {
			fmt.Fprintf(&sb, "< %s\n", escapeTranscript(line))
		}
	}
	if closed {
		sb.WriteString("! close\n")
	}
	return sb.String()
}

var (
	plainBinOnce sync.Once
	plainBin     string
	plainBinErr  error
)

// plainBinary returns a tandem binary built without the race detector, for
// tests that measure the server's memory: the race detector's shadow memory
// multiplies RSS. Without -race it is the shared test binary.
func plainBinary(t testing.TB) string {
	t.Helper()
	if !raceEnabled {
		return binPath
	}
	plainBinOnce.Do(func() {
		plainBin = filepath.Join(filepath.Dir(binPath), "tandem-norace")
		out, err := exec.Command("go", "build", "-o", plainBin, ".").CombinedOutput()
		if err != nil {
			plainBinErr = fmt.Errorf("building tandem without -race: %v\n%s", err, out)
		}
	})
	if plainBinErr != nil {
		t.Fatal(plainBinErr)
	}
	return plainBin
}

// startServerBin is startServer with another tandem binary (see plainBinary).
func startServerBin(t testing.TB, bin, mode string, extra ...string) *server {
	t.Helper()
	args := append([]string{"-p", "0", "-l", "127.0.0.1", "--mode", mode, "--log-format", "json"}, extra...)
	return startServerArgs(t, bin, args...)
}

// startServerArgs runs bin with exactly args and waits until it listens;
// args must include "--log-format json", which carries the bound address.
func startServerArgs(t testing.TB, bin string, args ...string) *server {
	t.Helper()
	return startServerCmd(t, exec.Command(bin, args...))
}

// startServerCmd is startServerArgs with a command prepared by the caller
// (its environment, say).
func startServerCmd(t testing.TB, cmd *exec.Cmd) *server {
	t.Helper()
	args := cmd.Args[1:]
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, exited: make(chan struct{})}
	addrc := make(chan string, 1)
	go s.readLog(pr, addrc)
	go func() { s.err = cmd.Wait(); close(s.exited) }()
	select {
	case s.Addr = <-addrc:
	case <-s.exited:
		t.Fatalf("tandem %v exited before listening: %v\n%s", args, s.err, s.Log())
	case <-time.After(20 * time.Second):
		s.Kill()
		t.Fatalf("tandem %v did not start listening\n%s", args, s.Log())
	}
	t.Cleanup(s.Kill)
	return s
}

// serverVariant is a mode plus extra flags, for tests that also cover pool
// mode with one loop and one worker (the whole hand-off on one worker).
type serverVariant struct {
	name, mode string
	extra      []string
}

var variants = []serverVariant{
	{"pool", "pool", nil},
	{"inline", "inline", nil},
	{"goroutine", "goroutine", nil},
	{"pool-t1-w1", "pool", []string{"-t", "1", "--workers", "1"}},
}

// forVariants runs f as a parallel subtest per variant.
func forVariants(t *testing.T, f func(t *testing.T, v serverVariant)) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			f(t, v)
		})
	}
}
