package handler

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/protocol"
)

func TestMurmur3(t *testing.T) {
	// Reference values of MurmurHash3_x86_32 with seed 0.
	for in, want := range map[string]uint32{"": 0, "hello world": 0x5e928f0f, "a": 0x3c2569b2} {
		if got := murmur3([]byte(in)); got != want {
			t.Errorf("murmur3(%q) = %#x, want %#x", in, got, want)
		}
	}
}

// TestPrefixStats checks what memcached 1.6.18 counts per prefix, and its
// dump order (recorded from memcached with the same commands).
func TestPrefixStats(t *testing.T) {
	setK := bin(protocol.OpSet, "u:1", u32(0)+u32(0), "v", 1, 0)
	tests := []struct {
		name, in, want string
	}{
		{"order of buckets", "set a:1 0 0 1\r\nx\r\nget a:1 a:2 b:1 nocolon\r\nset b:1 0 0 1\r\nx\r\n" +
			"delete a:1\r\ndelete zz:1\r\nincr b:1 1\r\ntouch b:1 0\r\nmg a:3 v\r\nms c:1 1\r\nx\r\ngets b:1\r\n",
			"PREFIX b get 2 hit 1 set 1 del 0\r\nPREFIX zz get 0 hit 0 set 0 del 1\r\nPREFIX a get 2 hit 1 set 1 del 1\r\n"},
		{"gat gats", "set p:1 0 0 1\r\nx\r\ngat 0 p:1 p:2\r\ngats 0 p:1\r\nbget p:1\r\n", // bget: gone in memcached 1.6.45
			"PREFIX p get 3 hit 2 set 1 del 0\r\n"},
		{"too large and bad chunk count", "set q:1 0 0 2000000\r\n" + strings.Repeat("z", 2000000) + "\r\nset r:1 0 0 1\r\nxx\r\n",
			"PREFIX q get 0 hit 0 set 1 del 0\r\nPREFIX r get 0 hit 0 set 1 del 0\r\n"},
		{"bad line does not", "set s:1 0 abc 1\r\nx\r\ndelete s:1 5\r\ngat x s:1\r\n", ""},
		{"every storage command", "cas t:1 0 0 1 5\r\nx\r\nadd t:1 0 0 1\r\nx\r\nadd t:1 0 0 1\r\nx\r\nappend t:1 0 0 1\r\nx\r\nset t:1 0 0 1 noreply\r\nx\r\n",
			"PREFIX t get 0 hit 0 set 5 del 0\r\n"},
		{"empty prefix", "get a:b:c ::x :y\r\nset :z 0 0 1\r\nx\r\n",
			"PREFIX  get 2 hit 0 set 1 del 0\r\nPREFIX a get 1 hit 0 set 0 del 0\r\n"},
		{"keys before a bad one", "get w:1 w:2 " + strings.Repeat("k", 251) + "\r\n",
			"PREFIX w get 2 hit 0 set 0 del 0\r\n"},
		{"binary", setK + bin(protocol.OpGet, "u:1", "", "", 2, 0) + bin(protocol.OpGetK, "u:2", "", "", 3, 0) +
			bin(protocol.OpDelete, "u:1", "", "", 4, 0) + bin(protocol.OpIncrement, "u:3", u64(1)+u64(0)+u32(0), "", 5, 0) +
			bin(protocol.OpTouch, "u:1", u32(0), "", 6, 0) + bin(protocol.OpGAT, "u:1", u32(0), "", 7, 0) +
			bin(protocol.OpGetQ, "u:1", "", "", 8, 0) + bin(protocol.OpAppend, "u:1", "", "x", 9, 0),
			"PREFIX u get 5 hit 1 set 2 del 1\r\n"},
		{"binary too large", bin(protocol.OpSet, "big:1", u32(0)+u32(0), strings.Repeat("x", 2000000), 1, 0) +
			bin(protocol.OpAppend, "big:2", "", strings.Repeat("x", 2000000), 2, 0),
			"PREFIX big get 0 hit 0 set 2 del 0\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, func(c *Config) { c.DetailEnabled = true })
			run(h.NewSession(""), tc.in)
			got, _ := run(h.NewSession(""), "stats detail dump\r\n")
			if got != tc.want+"END\r\n" {
				t.Fatalf("%.200q:\n got %q\nwant %q", tc.in, got, tc.want+"END\r\n")
			}
		})
	}
}

func TestPrefixStatsSwitch(t *testing.T) {
	h, _ := newTestHandler(t, func(c *Config) { c.PrefixDelimiter = '/' })
	s := h.NewSession("")
	got, _ := run(s, "get a/1\r\nstats detail on\r\nget a/1 b:1\r\nstats detail off\r\nget a/2\r\nstats detail dump\r\nstats detail\r\nstats detail bogus\r\n")
	want := "END\r\nOK\r\nEND\r\nOK\r\nEND\r\nPREFIX a get 1 hit 0 set 0 del 0\r\nEND\r\n" +
		"CLIENT_ERROR usage: stats detail on|off|dump\r\nCLIENT_ERROR usage: stats detail on|off|dump\r\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if l := h.live(); l.DetailEnabled || l.PrefixDelimiter != '/' {
		t.Errorf("live settings %+v", l)
	}
}

func TestPrefixStatsBounded(t *testing.T) {
	var p prefixStats
	p.init(':', true)
	for i := range maxPrefixes + 10 {
		p.recordSet([]byte(strconv.Itoa(i) + ":x"))
	}
	if p.n != maxPrefixes {
		t.Fatalf("%d prefixes kept, want the cap %d", p.n, maxPrefixes)
	}
}
