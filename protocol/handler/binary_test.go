package handler

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// bin builds a binary request.
func bin(op uint8, key, extras, value string, opaque uint32, cas uint64) string {
	return string(protocol.AppendBinRequest(nil, op, opaque, cas, []byte(extras), []byte(key), []byte(value)))
}

func u32(v uint32) string { return string(binary.BigEndian.AppendUint32(nil, v)) }
func u64(v uint64) string { return string(binary.BigEndian.AppendUint64(nil, v)) }

// binReplies renders binary responses as "op/status/opaque extras key value"
// lines; CAS ids are shown as "cas" when not 0.
func binReplies(t *testing.T, out string) string {
	t.Helper()
	var b strings.Builder
	for len(out) > 0 {
		if len(out) < protocol.BinHeaderLen || out[0] != protocol.BinResMagic {
			t.Fatalf("bad response bytes %q", out)
		}
		el := int(out[4])
		kl := int(binary.BigEndian.Uint16([]byte(out[2:])))
		bl := int(binary.BigEndian.Uint32([]byte(out[8:])))
		body := out[24 : 24+bl]
		fmt.Fprintf(&b, "%#x/%#x/%d", out[1], binary.BigEndian.Uint16([]byte(out[6:])), binary.BigEndian.Uint32([]byte(out[12:])))
		if binary.BigEndian.Uint64([]byte(out[16:])) != 0 {
			b.WriteString(" cas")
		}
		fmt.Fprintf(&b, " %q %q %q\n", body[:el], body[el:el+kl], body[el+kl:])
		out = out[24+bl:]
	}
	return b.String()
}

func TestBinaryExecute(t *testing.T) {
	set := func(op uint8, key, value string, flags uint32, opaque uint32, cas uint64) string {
		return bin(op, key, u32(flags)+u32(0), value, opaque, cas)
	}
	incr := func(op uint8, key string, delta, initial uint64, exp uint32, opaque uint32) string {
		return bin(op, key, u64(delta)+u64(initial)+u32(exp), "", opaque, 0)
	}
	noop := bin(protocol.OpNoop, "", "", "", 99, 0)
	tests := []struct {
		name, in, want string
		closed         bool
	}{
		{"set get getk", set(protocol.OpSet, "k", "v", 5, 1, 0) + bin(protocol.OpGet, "k", "", "", 2, 0) + bin(protocol.OpGetK, "k", "", "", 3, 0),
			"0x1/0x0/1 cas \"\" \"\" \"\"\n0x0/0x0/2 cas \"\\x00\\x00\\x00\\x05\" \"\" \"v\"\n0xc/0x0/3 cas \"\\x00\\x00\\x00\\x05\" \"k\" \"v\"\n", false},
		{"misses", bin(protocol.OpGet, "x", "", "", 1, 0) + bin(protocol.OpGetK, "x", "", "", 2, 0) + bin(protocol.OpGetQ, "x", "", "", 3, 0) + noop,
			"0x0/0x1/1 \"\" \"\" \"Not found\"\n0xc/0x1/2 \"\" \"x\" \"\"\n0xa/0x0/99 \"\" \"\" \"\"\n", false},
		{"quiet set and errors", set(protocol.OpSetQ, "k", "v", 0, 1, 0) + set(protocol.OpAddQ, "k", "v", 0, 2, 0) + set(protocol.OpReplaceQ, "n", "v", 0, 3, 0) + noop,
			"0x12/0x2/2 \"\" \"\" \"Data exists for key.\"\n0x13/0x1/3 \"\" \"\" \"Not found\"\n0xa/0x0/99 \"\" \"\" \"\"\n", false},
		{"cas turns add into cas", set(protocol.OpAdd, "n", "v", 0, 1, 77), "0x2/0x1/1 \"\" \"\" \"Not found\"\n", false},
		{"delete with cas", set(protocol.OpSet, "k", "v", 0, 1, 0) + bin(protocol.OpDelete, "k", "", "", 2, 12345) + bin(protocol.OpDeleteQ, "k", "", "", 3, 0) + bin(protocol.OpDeleteQ, "k", "", "", 4, 0),
			"0x1/0x0/1 cas \"\" \"\" \"\"\n0x4/0x2/2 \"\" \"\" \"Data exists for key.\"\n0x14/0x1/4 \"\" \"\" \"Not found\"\n", false},
		{"incr creates", incr(protocol.OpIncrement, "c", 5, 10, 0, 1) + incr(protocol.OpIncrement, "c", 5, 10, 0, 2) + incr(protocol.OpDecrement, "d", 1, 0, 0xffffffff, 3),
			"0x5/0x0/1 cas \"\" \"\" \"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\n\"\n0x5/0x0/2 cas \"\" \"\" \"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x0f\"\n0x6/0x1/3 \"\" \"\" \"Not found\"\n", false},
		{"incr non-numeric", set(protocol.OpSetQ, "k", "abc", 0, 1, 0) + incr(protocol.OpIncrementQ, "k", 1, 0, 0, 2),
			"0x15/0x6/2 \"\" \"\" \"Non-numeric server-side value for incr or decr\"\n", false},
		{"append prepend", set(protocol.OpSetQ, "k", "b", 3, 1, 0) + bin(protocol.OpAppendQ, "k", "", "c", 2, 0) + bin(protocol.OpPrepend, "k", "", "a", 3, 0) + bin(protocol.OpAppend, "x", "", "a", 4, 0) + bin(protocol.OpGet, "k", "", "", 5, 0),
			"0xf/0x0/3 cas \"\" \"\" \"\"\n0xe/0x5/4 \"\" \"\" \"Not stored.\"\n0x0/0x0/5 cas \"\\x00\\x00\\x00\\x03\" \"\" \"abc\"\n", false},
		{"touch gat", set(protocol.OpSetQ, "k", "v", 9, 1, 0) + bin(protocol.OpTouch, "k", u32(10), "", 2, 0) + bin(protocol.OpGATKQ, "x", u32(10), "", 3, 0) + bin(protocol.OpGATK, "k", u32(10), "", 4, 0),
			"0x1c/0x0/2 cas \"\\x00\\x00\\x00\\t\" \"\" \"\"\n0x23/0x0/4 cas \"\\x00\\x00\\x00\\t\" \"k\" \"v\"\n", false},
		{"version noop quit", bin(protocol.OpVersion, "", "", "", 1, 0) + bin(protocol.OpQuit, "", "", "", 2, 0) + noop,
			"0xb/0x0/1 \"\" \"\" \"" + Version + "\"\n0x7/0x0/2 \"\" \"\" \"\"\n", true},
		{"flushq", set(protocol.OpSetQ, "k", "v", 0, 1, 0) + bin(protocol.OpFlushQ, "", "", "", 2, 0) + bin(protocol.OpGet, "k", "", "", 3, 0),
			"0x0/0x1/3 \"\" \"\" \"Not found\"\n", false},
		{"unknown and sasl without auth", bin(protocol.OpVerbosity, "", u32(1), "", 1, 0) + bin(protocol.OpSASLList, "", "", "", 2, 0),
			"0x1b/0x81/1 \"\" \"\" \"Unknown command\"\n", false},
		{"too large set unlinks", set(protocol.OpSetQ, "k", "v", 0, 1, 0) + set(protocol.OpSet, "k", strings.Repeat("x", 2<<20), 0, 2, 0) + bin(protocol.OpGet, "k", "", "", 3, 0),
			"0x1/0x3/2 \"\" \"\" \"Too large.\"\n0x0/0x1/3 \"\" \"\" \"Not found\"\n", false},
		{"invalid closes", bin(protocol.OpGet, "k", "ab", "", 1, 0), "0x0/0x4/1 \"\" \"\" \"Invalid arguments\"\n", true},
		{"stat reset", bin(protocol.OpStat, "reset", "", "", 1, 0) + bin(protocol.OpStat, "bogus", "", "", 2, 0),
			"0x10/0x0/1 \"\" \"\" \"\"\n0x10/0x1/2 \"\" \"\" \"Not found\"\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, nil)
			out, closed := run(h.NewSession(""), tc.in)
			if got := binReplies(t, out); got != tc.want || closed != tc.closed {
				t.Fatalf("got (closed=%v)\n%s\nwant (closed=%v)\n%s", closed, got, tc.closed, tc.want)
			}
		})
	}
}

func TestBinaryStats(t *testing.T) {
	h, _ := newTestHandler(t, func(c *Config) {
		c.Settings = func(Live) []Setting { return []Setting{{Name: "maxconns", Value: "10"}} }
	})
	out, _ := run(h.NewSession(""), bin(protocol.OpStat, "settings", "", "", 4, 0)+bin(protocol.OpStat, "", "", "", 5, 0))
	got := binReplies(t, out)
	if !strings.HasPrefix(got, "0x10/0x0/4 \"\" \"maxconns\" \"10\"\n0x10/0x0/4 \"\" \"\" \"\"\n") ||
		!strings.Contains(got, "0x10/0x0/5 \"\" \"version\" \""+Version+"\"\n") || !strings.HasSuffix(got, "0x10/0x0/5 \"\" \"\" \"\"\n") {
		t.Fatalf("stats:\n%s", got)
	}
}

func TestBinarySASL(t *testing.T) {
	creds, _ := ParseCredentials(strings.NewReader("user:pass\n"))
	h, _ := newTestHandler(t, func(c *Config) { c.Auth = creds })
	get := bin(protocol.OpGet, "k", "", "", 3, 0)
	out, closed := run(h.NewSession(""), bin(protocol.OpSASLList, "", "", "", 1, 0)+
		bin(protocol.OpSASLAuth, "PLAIN", "", "\x00user\x00pass", 2, 0)+get)
	want := "0x20/0x0/1 \"\" \"\" \"PLAIN\"\n0x21/0x0/2 \"\" \"\" \"Authenticated\"\n0x0/0x1/3 \"\" \"\" \"Not found\"\n"
	if got := binReplies(t, out); got != want || closed {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	out, closed = run(h.NewSession(""), bin(protocol.OpSASLAuth, "PLAIN", "", "\x00user\x00bad", 2, 0)+get)
	want = "0x21/0x20/2 \"\" \"\" \"Auth failure.\"\n0x0/0x20/3 \"\" \"\" \"Auth failure.\"\n"
	if got := binReplies(t, out); got != want || !closed {
		t.Fatalf("got (closed=%v)\n%s\nwant\n%s", closed, got, want)
	}
	if st := h.Stats(); st.Counters[AuthCmds] != 2 || st.Counters[AuthErrors] != 1 {
		cmds, errs := st.Counters[AuthCmds], st.Counters[AuthErrors]
		t.Fatalf("auth stats %d/%d", cmds, errs)
	}
}

func BenchmarkBinaryGetHit(b *testing.B) {
	benchExec(b, bin(protocol.OpSetQ, "key:0001", u32(0)+u32(0), "01234567890123456789012345678901", 0, 0),
		bin(protocol.OpGet, "key:0001", "", "", 1, 0))
}

func TestBinaryNoAllocs(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	s := h.NewSession("")
	run(s, bin(protocol.OpSetQ, "key:0001", u32(0)+u32(0), "0123456789", 0, 0))
	in := []byte(bin(protocol.OpGet, "key:0001", "", "", 1, 0) + bin(protocol.OpSet, "key:0001", u32(0)+u32(0), "abcdefghij", 2, 0))
	r := new(struct{ r protocol.Request })
	out := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(200, func() {
		rest := in
		out = out[:0]
		for len(rest) > 0 {
			n := s.Next(rest, &r.r)
			rest = rest[n:]
			out, _ = s.Execute(&r.r, out)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per get+set", allocs)
	}
}

// TestBinaryStatCachedump checks that the key dumps are text-only, as in
// memcached 1.6.18: a binary stat "cachedump" is not found.
func TestBinaryStatCachedump(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	if o, _ := h.cfg.Cache.Store(cache.Set, []byte("a"), []byte("x"), 0, 0, 0); o != cache.Stored {
		t.Fatal(o)
	}
	out, _ := run(h.NewSession(""), bin(protocol.OpStat, "cachedump 1 0", "", "", 7, 0))
	got := binReplies(t, out)
	if got != "0x10/0x1/7 \"\" \"\" \"Not found\"\n" {
		t.Fatalf("binary stat cachedump:\n%s", got)
	}
}
