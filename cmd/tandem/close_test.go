package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// Requests a client sends right before it closes (FIN), resets (RST) or
// half-closes its side must all run, and on a half-closed socket their
// replies must arrive, in order, before the server closes: what memcached
// does. Each case runs against every variant and against memcached, whose
// count is the expected one.

// closeCase sends something on one or more connections that then close,
// and returns what it measured: how many of n keys were stored, or how many
// of n replies arrived.
type closeCase struct {
	name string
	n    int
	run  func(t *testing.T, addr, prefix string, n int) int
	// beyond marks a case where tandem must do better than memcached 1.6.18:
	// on a reset connection memcached drops the requests it read but had
	// not run yet (it runs -R of them per event and the next read fails),
	// while tandem runs every request it read.
	beyond bool
}

// storeThenClose returns a case body that writes, for each of the n keys,
// the storage request req(key) — on one connection, or on a connection of
// its own each when perConn — then closes (resets when rst), and counts the
// keys stored.
func storeThenClose(req func(key string) string, perConn, rst bool) func(t *testing.T, addr, prefix string, n int) int {
	return func(t *testing.T, addr, prefix string, n int) int {
		send := func(payload string) {
			c := dialRaw(t, addr)
			if rst {
				_ = c.(*net.TCPConn).SetLinger(0) // close sends RST
			}
			writeAll(t, c, payload)
			c.Close()
		}
		var b strings.Builder
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("%s%d", prefix, i)
			if perConn {
				send(req(key))
				continue
			}
			b.WriteString(req(key))
		}
		if !perConn {
			send(b.String())
		}
		return storedCount(t, addr, prefix, n)
	}
}

func closeCases() []closeCase {
	set := func(key string) string { return "set " + key + " 0 0 1\r\nx\r\n" }
	setNoreply := func(key string) string { return "set " + key + " 0 0 2 noreply\r\nok\r\n" }
	metaQuiet := func(key string) string { return "ms " + key + " 2 q\r\nok\r\n" }
	binaryQuiet := func(key string) string { return binSetQ(key, "ok") }
	return []closeCase{
		{name: "fin-after-one-set", n: 20, run: storeThenClose(set, true, false)},
		{name: "fin-after-500-noreply-sets", n: 500, run: storeThenClose(setNoreply, false, false)},
		{name: "rst-after-one-set", n: 20, run: storeThenClose(set, true, true)},
		{name: "rst-after-200-pipelined-sets", n: 200, run: storeThenClose(set, false, true), beyond: true},
		{name: "meta-quiet-sets-then-close", n: 200, run: storeThenClose(metaQuiet, false, false)},
		{name: "binary-quiet-sets-then-close", n: 200, run: storeThenClose(binaryQuiet, false, false)},
		{name: "deletes-and-incr-then-close", n: 100, run: func(t *testing.T, addr, prefix string, n int) int {
			// Set up n counters, then on another connection delete the even
			// ones and increment the odd ones, and close at once.
			setup := dialRaw(t, addr)
			var b strings.Builder
			for i := 0; i < n; i++ {
				fmt.Fprintf(&b, "set %s%d 0 0 1 noreply\r\n1\r\n", prefix, i)
			}
			b.WriteString("mn\r\n")
			writeAll(t, setup, b.String())
			readUntil(t, setup, "MN\r\n")
			setup.Close()
			b.Reset()
			for i := 0; i < n; i++ {
				if i%2 == 0 {
					fmt.Fprintf(&b, "delete %s%d noreply\r\n", prefix, i)
				} else {
					fmt.Fprintf(&b, "incr %s%d 41 noreply\r\n", prefix, i)
				}
			}
			c := dialRaw(t, addr)
			writeAll(t, c, b.String())
			c.Close()
			// Count the keys in their final state: evens gone, odds at 42.
			final := 0
			waitFor(10*time.Second, func() bool {
				final = 0
				q := dialRaw(t, addr)
				defer q.Close()
				r := bufio.NewReader(q)
				for i := 0; i < n; i++ {
					writeAll(t, q, fmt.Sprintf("get %s%d\r\n", prefix, i))
					v := readGetValue(t, r)
					if (i%2 == 0 && v == "") || (i%2 == 1 && v == "42") {
						final++
					}
				}
				return final == n
			})
			return final
		}},
		{name: "half-close-version", n: 20, run: halfCloseReplies("version\r\n", "\r\n")},
		{name: "half-close-stats", n: 20, run: halfCloseReplies("stats\r\n", "END\r\n")},
		{name: "half-close-get", n: 20, run: halfCloseReplies("get nosuchkey\r\n", "END\r\n")},
		{name: "half-close-after-8mb-of-replies", n: 1, run: func(t *testing.T, addr, prefix string, n int) int {
			// Replies far larger than socket buffers are still being written
			// when the server reads EOF; the client reads them all, slowly at
			// first.
			val := strings.Repeat("v", 4096)
			c := dialRaw(t, addr)
			writeAll(t, c, fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", prefix, len(val), val))
			r := bufio.NewReader(c)
			readUntilReader(t, r, "STORED\r\n")
			const gets = 2000
			writeAll(t, c, strings.Repeat("get "+prefix+"\r\n", gets)+"version\r\n")
			_ = c.(*net.TCPConn).CloseWrite()
			testenv.WaitUndelivered(t, c, 30*time.Second) // the server is blocked on the full socket
			want := fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", prefix, len(val), val)
			for i := 0; i < gets; i++ {
				got := make([]byte, len(want))
				if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
					t.Logf("reply %d: %q, %v", i, quote(string(got)), err)
					return 0
				}
			}
			line, err := r.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "VERSION ") {
				t.Logf("after the gets: %q, %v", line, err)
				return 0
			}
			if _, err := r.ReadByte(); err != io.EOF {
				t.Logf("the server did not close after the last reply: %v", err)
				return 0
			}
			return 1
		}},
	}
}

// halfCloseReplies sends req, shuts down the write side and counts the
// connections that got a complete reply (ending in term) followed by EOF.
func halfCloseReplies(req, term string) func(t *testing.T, addr, prefix string, n int) int {
	return func(t *testing.T, addr, prefix string, n int) int {
		ok := 0
		for i := 0; i < n; i++ {
			c := dialRaw(t, addr)
			writeAll(t, c, req)
			_ = c.(*net.TCPConn).CloseWrite()
			b, err := io.ReadAll(c)
			c.Close()
			if err == nil && len(b) >= len(term) && strings.HasSuffix(string(b), term) {
				ok++
			}
		}
		return ok
	}
}

func TestRequestsBeforeClose(t *testing.T) {
	mc := testenv.StartMemcached(t)
	want := map[string]int{}
	for _, tc := range closeCases() {
		got := tc.run(t, mc.Addr, "ref-"+tc.name+"-", tc.n)
		want[tc.name] = got
		if tc.beyond {
			t.Logf("memcached: %s: %d of %d (tandem must run all)", tc.name, got, tc.n)
			want[tc.name] = tc.n
		} else if got != tc.n {
			t.Errorf("memcached: %s: %d of %d", tc.name, got, tc.n)
		}
	}
	forVariants(t, func(t *testing.T, v serverVariant) {
		s := startServer(t, v.mode, v.extra...)
		for _, tc := range closeCases() {
			if got := tc.run(t, s.Addr, tc.name+"-", tc.n); got != want[tc.name] {
				t.Errorf("%s: %d of %d, memcached %d", tc.name, got, tc.n, want[tc.name])
			}
		}
		if !s.alive() {
			t.Fatalf("server exited:\n%s", s.Log())
		}
	})
}

// TestShutdownRunsBufferedRequests sends pipelined sets and stops the server
// with SIGTERM right away: every set it read must be applied before it exits
// (checked through the replies it sent, which come only after execution).
func TestShutdownRunsBufferedRequests(t *testing.T) {
	forVariants(t, func(t *testing.T, v serverVariant) {
		s := startServer(t, v.mode, v.extra...)
		c := dialRaw(t, s.Addr)
		const n = 2000
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "set k%d 0 0 2\r\nok\r\n", i)
		}
		writeAll(t, c, b.String())
		// Wait until the server has read the first request (its reply
		// arrives), so the rest is in flight or buffered when the signal
		// lands.
		r := bufio.NewReader(c)
		readUntilReader(t, r, "STORED\r\n")
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		got := 1
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			if line == "STORED\r\n" {
				got++
			}
		}
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("no exit within 30 s of SIGTERM\n%s", s.Log())
		}
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("exit %d after SIGTERM\n%s", code, s.Log())
		}
		// Whatever the server read, it answered; what it did not read is
		// lost with the connection. It must not have dropped the tail of
		// what it read: the replies form a prefix of the requests.
		if got == 0 {
			t.Fatalf("no reply at all")
		}
		t.Logf("%d of %d sets answered before exit", got, n)
	})
}

// storedCount counts how many of prefix0..prefix(n-1) are stored, polling
// until all are (requests of a closed connection may still be running) or a
// generous guard passes.
func storedCount(t *testing.T, addr, prefix string, n int) int {
	t.Helper()
	count := 0
	waitFor(10*time.Second, func() bool {
		count = 0
		c := dialRaw(t, addr)
		defer c.Close()
		r := bufio.NewReader(c)
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "mg %s%d v\r\n", prefix, i)
		}
		b.WriteString("mn\r\n")
		writeAll(t, c, b.String())
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("counting %s*: %v", prefix, err)
			}
			switch {
			case line == "MN\r\n":
				return count == n
			case strings.HasPrefix(line, "VA "):
				count++
				if _, err := r.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	return count
}

// readGetValue reads one get reply and returns its data ("" on a miss).
func readGetValue(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line == "END\r\n" {
		return ""
	}
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "VALUE" {
		t.Fatalf("get reply %q", line)
	}
	n, _ := strconv.Atoi(f[3])
	data := make([]byte, n+2)
	if _, err := io.ReadFull(r, data); err != nil {
		t.Fatal(err)
	}
	if end, err := r.ReadString('\n'); err != nil || end != "END\r\n" {
		t.Fatalf("after the value: %q, %v", end, err)
	}
	return string(data[:n])
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	return c
}

func writeAll(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func readUntil(t *testing.T, c net.Conn, suffix string) string {
	t.Helper()
	return readUntilReader(t, bufio.NewReader(c), suffix)
}

func readUntilReader(t *testing.T, r *bufio.Reader, suffix string) string {
	t.Helper()
	var b strings.Builder
	for !strings.HasSuffix(b.String(), suffix) {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			t.Fatalf("reading until %q: got %q, %v", suffix, quote(b.String()), err)
		}
	}
	return b.String()
}

// binSetQ encodes a binary SETQ (quiet set) of key to value.
func binSetQ(key, value string) string {
	const extras = 8
	h := make([]byte, 24, 24+extras+len(key)+len(value))
	h[0], h[1] = 0x80, 0x11
	binary.BigEndian.PutUint16(h[2:], uint16(len(key)))
	h[4] = extras
	binary.BigEndian.PutUint32(h[8:], uint32(extras+len(key)+len(value)))
	h = append(h, make([]byte, extras)...)
	h = append(h, key...)
	h = append(h, value...)
	return string(h)
}
