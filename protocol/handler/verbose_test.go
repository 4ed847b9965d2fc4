package handler

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/protocol"
)

// logLines returns the messages and peers of a JSON log.
func logLines(t *testing.T, log *bytes.Buffer) (msgs []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if line == "" {
			continue
		}
		var e struct{ Level, Peer, Message string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e.Level != "debug" || e.Peer != "10.0.0.1:5000" {
			t.Errorf("log line %q: want level debug and the peer", line)
		}
		msgs = append(msgs, e.Message)
	}
	return msgs
}

func TestCommandLog(t *testing.T) {
	var log bytes.Buffer
	h, _ := newTestHandler(t, func(c *Config) {
		c.Verbosity = 2
		c.Logger = zerolog.New(&log)
	})
	s := h.NewSession("10.0.0.1:5000")
	run(s, "set a 0 0 1\r\nx\r\nget a b\r\nbogus\r\nset b 0 0 1 noreply\r\ny\r\nmg a v k\r\nstats\r\n")
	s.Close()
	want := []string{
		"< set a 0 0 1", "> STORED",
		"< get a b", "> sending key a", "> END",
		"< bogus", "> ERROR",
		"< set b 0 0 1 noreply",
		"< mg a v k", "> VA 1 ka",
		"< stats",
	}
	if got := logLines(t, &log); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("command log:\n got %q\nwant %q", got, want)
	}
}

func TestCommandLogFollowsVerbosity(t *testing.T) {
	var log bytes.Buffer
	var levels []int
	h, _ := newTestHandler(t, func(c *Config) {
		c.Logger = zerolog.New(&log)
		c.OnVerbosity = func(l int) { levels = append(levels, l) }
	})
	s := h.NewSession("10.0.0.1:5000")
	run(s, "get quiet\r\nverbosity 2\r\nget loud\r\nverbosity 1 noreply\r\nget quiet\r\n")
	want := []string{"> OK", "< get loud", "> END", "< verbosity 1 noreply"}
	if got := logLines(t, &log); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("command log:\n got %q\nwant %q", got, want)
	}
	if len(levels) != 2 || levels[0] != 2 || levels[1] != 1 {
		t.Errorf("OnVerbosity got %v, want [2 1]", levels)
	}
	if l := h.live(); l.Verbosity != 1 {
		t.Errorf("live verbosity %d, want 1", l.Verbosity)
	}
}

func TestCommandLogBinary(t *testing.T) {
	var log bytes.Buffer
	h, _ := newTestHandler(t, func(c *Config) {
		c.Verbosity = 3
		c.Logger = zerolog.New(&log)
	})
	run(h.NewSession("10.0.0.1:5000"), bin(protocol.OpGet, "k", "", "", 1, 0))
	want := []string{"< binary request", "> binary response"}
	if got := logLines(t, &log); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("command log:\n got %q\nwant %q", got, want)
	}
}
