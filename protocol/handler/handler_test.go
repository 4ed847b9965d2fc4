package handler

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// fakeClock is a settable cache clock.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) Now() int64      { return c.now.Load() }
func (c *fakeClock) Advance(s int64) { c.now.Add(s) }

func newTestHandler(t *testing.T, mod func(*Config)) (*Handler, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.now.Store(1_800_000_000)
	// 32 shards (the default at -m 64 is 4) so that the per-shard stats have many rows.
	c, err := cache.New(cache.Config{MaxBytes: 64 << 20, MaxItemSize: 1 << 20, Shards: 32, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Cache: c, MaxItemSize: 1 << 20, TandemVersion: "test"}
	if mod != nil {
		mod(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h, clk
}

// run feeds input through a session the way the reactor does and returns
// the replies and whether the session asked to close.
func run(s *Session, input string) (string, bool) {
	buf := []byte(input)
	var r protocol.Request
	var out []byte
	for len(buf) > 0 {
		n := s.Next(buf, &r)
		if n == 0 {
			break
		}
		buf = buf[n:]
		if r.Cmd == protocol.CmdNone {
			continue
		}
		var closeConn bool
		out, closeConn = s.Execute(&r, out)
		if closeConn {
			return string(out), true
		}
	}
	return string(out), false
}

func TestExecute(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"set get", "set a 5 0 3\r\nabc\r\nget a\r\n", "STORED\r\nVALUE a 5 3\r\nabc\r\nEND\r\n"},
		{"get miss", "get nope\r\n", "END\r\n"},
		{"multi get", "set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\nget a x b\r\n", "STORED\r\nSTORED\r\nVALUE a 0 1\r\n1\r\nVALUE b 0 1\r\n2\r\nEND\r\n"},
		{"add", "add a 0 0 1\r\n1\r\nadd a 0 0 1\r\n2\r\n", "STORED\r\nNOT_STORED\r\n"},
		{"replace", "replace a 0 0 1\r\n1\r\nset a 0 0 1\r\n1\r\nreplace a 0 0 1\r\n2\r\nget a\r\n", "NOT_STORED\r\nSTORED\r\nSTORED\r\nVALUE a 0 1\r\n2\r\nEND\r\n"},
		{"append prepend", "set a 3 0 1\r\nb\r\nappend a 0 0 1\r\nc\r\nprepend a 0 0 1\r\na\r\nget a\r\n", "STORED\r\nSTORED\r\nSTORED\r\nVALUE a 3 3\r\nabc\r\nEND\r\n"},
		{"cas missing", "cas a 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n"},
		{"incr decr", "set n 0 0 2\r\n10\r\nincr n 5\r\ndecr n 20\r\n", "STORED\r\n15\r\n0\r\n"},
		{"incr non-numeric", "set n 0 0 1\r\nx\r\nincr n 1\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"incr missing", "incr n 1\r\n", "NOT_FOUND\r\n"},
		{"delete", "set a 0 0 1\r\n1\r\ndelete a\r\ndelete a\r\n", "STORED\r\nDELETED\r\nNOT_FOUND\r\n"},
		{"touch", "set a 0 0 1\r\n1\r\ntouch a 10\r\ntouch b 10\r\n", "STORED\r\nTOUCHED\r\nNOT_FOUND\r\n"},
		{"noreply", "set a 0 0 1 noreply\r\n1\r\nincr a 1 noreply\r\nget a\r\n", "VALUE a 0 1\r\n2\r\nEND\r\n"},
		{"version", "version\r\n", "VERSION " + Version + "\r\n"},
		{"verbosity", "verbosity 1\r\n", "OK\r\n"},
		{"flush_all", "set a 0 0 1\r\n1\r\nflush_all\r\nget a\r\n", "STORED\r\nOK\r\nEND\r\n"},
		{"flush_all bad delay", "flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n"},
		{"unknown", "bogus\r\n", "ERROR\r\n"},
		{"stats unknown group", "stats bogus\r\n", "ERROR\r\n"},
		{"stats reset", "stats reset\r\n", "RESET\r\n"},
		{"shutdown disabled", "shutdown\r\n", "SERVER_ERROR: shutdown not enabled\r\n"},
		{"shutdown disabled noreply", "shutdown noreply\r\n", ""},
		{"too large set unlinks", "set a 0 0 1\r\n1\r\nset a 0 0 2000000\r\n" + strings.Repeat("x", 2000000) + "\r\nget a\r\n",
			"STORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, nil)
			got, _ := run(h.NewSession(""), tc.input)
			if got != tc.want {
				t.Fatalf("input %q\n got %q\nwant %q", tc.input, got, tc.want)
			}
		})
	}
}

func TestQuitCloses(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	got, closed := run(h.NewSession(""), "get a\r\nquit\r\nget a\r\n")
	if got != "END\r\n" || !closed {
		t.Fatalf("got %q closed=%v, want END and close", got, closed)
	}
}

func TestExpiryUsesClock(t *testing.T) {
	h, clk := newTestHandler(t, nil)
	s := h.NewSession("")
	if got, _ := run(s, "set a 0 10 1\r\n1\r\nget a\r\n"); got != "STORED\r\nVALUE a 0 1\r\n1\r\nEND\r\n" {
		t.Fatalf("before expiry: %q", got)
	}
	clk.Advance(11)
	if got, _ := run(s, "get a\r\n"); got != "END\r\n" {
		t.Fatalf("after expiry: %q", got)
	}
	if got, _ := run(s, "set b 0 0 1\r\n1\r\nflush_all 5\r\nget b\r\n"); got != "STORED\r\nOK\r\nVALUE b 0 1\r\n1\r\nEND\r\n" {
		t.Fatalf("delayed flush before its time: %q", got)
	}
	clk.Advance(6)
	if got, _ := run(s, "get b\r\n"); got != "END\r\n" {
		t.Fatalf("delayed flush after its time: %q", got)
	}
}

func TestGetsReportsCAS(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	s := h.NewSession("")
	got, _ := run(s, "set a 0 0 1\r\n1\r\ngets a\r\n")
	var cas uint64
	if _, err := fmt.Sscanf(got, "STORED\r\nVALUE a 0 1 %d\r\n1\r\nEND\r\n", &cas); err != nil || cas == 0 {
		t.Fatalf("gets reply %q: cas %d, %v", got, cas, err)
	}
	if got, _ := run(s, "cas a 0 0 1 "+strconv.FormatUint(cas, 10)+"\r\n2\r\ncas a 0 0 1 "+strconv.FormatUint(cas, 10)+"\r\n3\r\n"); got != "STORED\r\nEXISTS\r\n" {
		t.Fatalf("cas sequence: %q", got)
	}
}

func TestOptionalCommands(t *testing.T) {
	var level atomic.Int64
	shut := make(chan struct{}, 1)
	h, _ := newTestHandler(t, func(c *Config) {
		c.DisableFlushAll = true
		c.EnableShutdown = true
		c.OnShutdown = func() { shut <- struct{}{} }
		c.OnVerbosity = func(l int) { level.Store(int64(l)) }
	})
	s := h.NewSession("")
	if got, _ := run(s, "flush_all\r\n"); got != "CLIENT_ERROR flush_all not allowed\r\n" {
		t.Fatalf("flush_all with -F: %q", got)
	}
	if got, _ := run(s, "verbosity 2\r\n"); got != "OK\r\n" || level.Load() != 2 {
		t.Fatalf("verbosity: %q level %d", got, level.Load())
	}
	for _, bad := range []string{"shutdown foo\r\n", "shutdown graceful x\r\n"} {
		if got, closed := run(s, bad); closed || got != "CLIENT_ERROR invalid shutdown mode\r\n" {
			t.Fatalf("%q with -A: %q, closed %v", bad, got, closed)
		}
	}
	if got, closed := run(s, "shutdown noreply\r\n"); closed || got != "" {
		t.Fatalf("shutdown noreply with -A: %q, closed %v (memcached 1.6.45: a silent invalid mode)", got, closed)
	}
	if _, closed := run(s, "shutdown\r\n"); !closed {
		t.Fatalf("shutdown with -A did not close the connection")
	}
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
		t.Fatal("OnShutdown not called")
	}
}

func TestStatsFields(t *testing.T) {
	h, _ := newTestHandler(t, func(c *Config) {
		c.Server = func() ServerInfo { return ServerInfo{Mode: "pool", Threads: 2, CurrConns: 3, MaxConns: 10} }
		c.Settings = func(Live) []Setting { return []Setting{{Name: "maxconns", Value: "10"}} }
	})
	s := h.NewSession("")
	got, _ := run(s, "set a 0 0 1\r\n1\r\nget a\r\nget b\r\nstats\r\n")
	for _, want := range []string{"STAT pid ", "STAT version " + Version + "\r\n", "STAT curr_connections 3\r\n",
		"STAT get_hits 1\r\n", "STAT get_misses 1\r\n", "STAT cmd_set 1\r\n", "STAT curr_items 1\r\n",
		"STAT threads 2\r\n", "STAT limit_maxbytes 67108864\r\n", "STAT tandem_mode pool\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("stats output lacks %q", want)
		}
	}
	if !strings.HasSuffix(got, "END\r\n") {
		t.Errorf("stats output does not end with END")
	}
	if got, _ := run(s, "stats settings\r\n"); got != "STAT maxconns 10\r\nEND\r\n" {
		t.Errorf("stats settings = %q", got)
	}
}

// TestLargeClientFlags: with LargeClientFlags a session stores and returns
// 64-bit client flags in get, gets, mg f and me's item size (8 bytes of
// flags), and the binary protocol returns their low 32 bits (its extras);
// without it a larger number is truncated to 32 bits, as memcached stores it.
func TestLargeClientFlags(t *testing.T) {
	const script = "set k 18446744073709551615 0 1\r\nx\r\nget k\r\nms m 2 F4294967296\r\nab\r\nmg m f v\r\n" +
		"set n 99999999999999999999 0 2\r\nxy\r\nappend k 7 0 1\r\ny\r\nmg k f s\r\nmd m x F8589934592\r\nmg m f s\r\nme k\r\n"
	for _, tc := range []struct {
		large bool
		want  string
	}{
		// memcached 1.6.45 refuses meta F above 32 bits (transcript.Differences, meta F).
		{false, "STORED\r\nVALUE k 4294967295 1\r\nx\r\nEND\r\nCLIENT_ERROR bad command line format\r\nEN\r\n" +
			"CLIENT_ERROR bad command line format\r\nSTORED\r\nHD f4294967295 s2\r\nCLIENT_ERROR bad command line format\r\nEN\r\n" +
			"ME k exp=-1 la=0 cas=2 fetch=yes cls=1 size=66\r\n"},
		{true, "STORED\r\nVALUE k 18446744073709551615 1\r\nx\r\nEND\r\nHD\r\nVA 2 f4294967296\r\nab\r\n" +
			"CLIENT_ERROR bad command line format\r\nSTORED\r\nHD f18446744073709551615 s2\r\nHD\r\nHD f8589934592 s0\r\n" +
			"ME k exp=-1 la=0 cas=3 fetch=yes cls=1 size=70\r\n"},
	} {
		h, _ := newTestHandler(t, func(cfg *Config) {
			c, err := cache.New(cache.Config{MaxBytes: 64 << 20, MaxItemSize: 1 << 20, Shards: 4, LargeClientFlags: tc.large})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Cache, cfg.LargeClientFlags = c, tc.large
		})
		if got, _ := run(h.NewSession(""), script); got != tc.want {
			t.Errorf("large %v:\n got %q\nwant %q", tc.large, got, tc.want)
		}
		// The binary protocol's get carries 32 bits of flags.
		got, _ := run(h.NewSession(""), bin(protocol.OpGet, "k", "", "", 1, 0))
		if len(got) < 28 || binary.BigEndian.Uint32([]byte(got[24:28])) != 0xffffffff {
			t.Errorf("large %v: binary get %q, want flags 0xffffffff in the extras", tc.large, got)
		}
	}
	// A handler must agree with its cache.
	c, _ := cache.New(cache.Config{MaxBytes: 64 << 20})
	if _, err := New(Config{Cache: c, MaxItemSize: 1 << 20, LargeClientFlags: true}); err == nil {
		t.Error("a large-flags handler over a 32-bit cache was accepted")
	}
}
