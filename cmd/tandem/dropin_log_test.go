package main

import (
	"github.com/tandemcache/tandem/cmd/testenv"

	"bytes"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The command log of -vv (and of "verbosity 2" at run time), compared with
// what memcached -vv prints, and the log's millisecond timestamps.

// verboseExchange is what the command log is checked with, and the lines
// both servers must log for it, in order ("<" command, ">" reply).
const verboseExchange = "set a 0 0 1\r\nx\r\nget a b\r\nbogus\r\nincr a 1\r\n"

var verboseWant = []string{
	"< set a 0 0 1", "> STORED",
	"< get a b", "> sending key a", "> END",
	"< bogus", "> ERROR",
	"< incr a 1", "> CLIENT_ERROR cannot increment or decrement non-numeric value",
}

// subsequence reports whether want appears in got in order.
func subsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// tandemCommandLog returns the command log messages of a JSON log, checking
// that each line has a millisecond timestamp and the debug level.
func tandemCommandLog(t *testing.T, log string) []string {
	t.Helper()
	ms := regexp.MustCompile(`T\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$`)
	var msgs []string
	for _, line := range strings.Split(log, "\n") {
		var e struct {
			Level, Component, Time, Message string
			Peer                            *string
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if !ms.MatchString(e.Time) {
			t.Errorf("log time %q has no millisecond precision", e.Time)
		}
		if e.Component == "handler" {
			if e.Level != "debug" || e.Peer == nil {
				t.Errorf("command log line %q: want level debug and a peer field", line)
			}
			msgs = append(msgs, e.Message)
		}
	}
	return msgs
}

// TestVerboseCommandLog checks -vv and "verbosity 2" on tandem in every
// mode, and memcached -vv's stderr for the same lines.
func TestVerboseCommandLog(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-vv")
		if _, _, err := exchange(s.Addr, verboseExchange); err != nil {
			t.Fatal(err)
		}
		if !waitFor(5*time.Second, func() bool { return subsequence(tandemCommandLog(t, s.Log()), verboseWant) }) {
			t.Fatalf("-vv command log lacks %q:\n%s", verboseWant, s.Log())
		}

		q := startServer(t, mode)
		if _, _, err := exchange(q.Addr, "get quiet\r\nverbosity 2\r\n"+verboseExchange+"verbosity 0\r\nget quiet\r\n"); err != nil {
			t.Fatal(err)
		}
		var got []string
		if !waitFor(5*time.Second, func() bool { got = tandemCommandLog(t, q.Log()); return subsequence(got, verboseWant) }) {
			t.Fatalf("verbosity 2 command log lacks %q:\n%s", verboseWant, q.Log())
		}
		for _, m := range got {
			if strings.Contains(m, "quiet") {
				t.Errorf("logged %q outside verbosity 2", m)
			}
		}
	})
	t.Run("memcached", func(t *testing.T) {
		t.Parallel()
		mc := testenv.NeedTool(t, "memcached", "memcached")
		port := testenv.FreePort(t)
		cmd := exec.Command(mc, mcArgs(port, "-vv")...)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if !waitFor(5*time.Second, func() bool { return serves(addr) }) {
			t.Fatal("memcached -vv does not serve")
		}
		if _, _, err := exchange(addr, verboseExchange); err != nil {
			t.Fatal(err)
		}
		fd := regexp.MustCompile(`^([<>])[0-9]+ `)
		var got []string
		if !waitFor(5*time.Second, func() bool {
			got = got[:0]
			for _, line := range strings.Split(stderr.String(), "\n") {
				if fd.MatchString(line) {
					got = append(got, fd.ReplaceAllString(line, "$1 "))
				}
			}
			return subsequence(got, verboseWant)
		}) {
			t.Fatalf("memcached -vv lacks %q: %q", verboseWant, got)
		}
	})
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
