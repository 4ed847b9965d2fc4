package handler

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// classOf returns the class each key is dumped under, from the cache's own
// walk.
func classOf(t *testing.T, c *cache.Cache) map[string]int {
	t.Helper()
	cls := map[string]int{}
	for cur := (cache.Cursor{}); !cur.Done(); {
		cur = c.Walk(cur, 1024, func(class int, it *cache.Item) { cls[string(it.Key)] = class })
	}
	return cls
}

// dumpLines splits a metadump reply into its lines, sorted, and checks
// that it ends in END.
func dumpLines(t *testing.T, reply string) []string {
	t.Helper()
	body, ok := strings.CutSuffix(reply, "END\r\n")
	if !ok {
		t.Fatalf("dump does not end in END: ...%q", reply[max(0, len(reply)-80):])
	}
	if body == "" {
		return nil
	}
	if !strings.HasSuffix(body, "\n") || strings.Contains(body, "\r") {
		t.Fatalf("metadump lines must end in a bare \\n: %q", body[:min(len(body), 200)])
	}
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	slices.Sort(lines)
	return lines
}

func TestMetadumpFormat(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	s := h.NewSession("")
	// CAS uniques 1 to 3; "foo" is fetched; the third key is stored
	// base64-encoded (its bytes are not text).
	in := "set foo 5 0 3\r\nbar\r\nset a/b%c~-._ 0 100 2\r\nhi\r\nms AAEC/w== 2 b\r\nhi\r\nget foo\r\n"
	if got, _ := run(s, in); got != "STORED\r\nSTORED\r\nHD\r\nVALUE foo 5 3\r\nbar\r\nEND\r\n" {
		t.Fatalf("setup: %q", got)
	}
	cls := classOf(t, h.cfg.Cache)
	const now = 1_800_000_000
	want := []string{
		fmt.Sprintf("key=%%00%%01%%02%%FF exp=-1 la=%d cas=3 fetch=no cls=%d size=%d", now, cls["\x00\x01\x02\xff"], 4+2+cache.ItemOverhead),
		fmt.Sprintf("key=a%%2Fb%%25c~-._ exp=%d la=%d cas=2 fetch=no cls=%d size=%d", now+100, now, cls["a/b%c~-._"], 9+2+cache.ItemOverhead),
		fmt.Sprintf("key=foo exp=-1 la=%d cas=1 fetch=yes cls=%d size=%d", now, cls["foo"], 3+3+cache.ItemOverhead),
	}
	slices.Sort(want)
	for _, arg := range []string{"all", "hash"} {
		got, _ := run(s, "lru_crawler metadump "+arg+"\r\n")
		if lines := dumpLines(t, got); !slices.Equal(lines, want) {
			t.Errorf("metadump %s:\n got %q\nwant %q", arg, lines, want)
		}
	}
	// A list of every class the keys are in gives the same lines.
	ids := []string{}
	for _, c := range cls {
		ids = append(ids, strconv.Itoa(c))
	}
	got, _ := run(s, "lru_crawler metadump "+strings.Join(ids, ",")+"\r\n")
	if lines := dumpLines(t, got); !slices.Equal(lines, want) {
		t.Errorf("metadump %s:\n got %q\nwant %q", strings.Join(ids, ","), lines, want)
	}
}

// TestMetadumpArguments checks the class list against memcached 1.6.18's
// replies: ids 1 to 63 (and tandem's classes beyond), read as memcached
// reads numbers, empty ones skipped, duplicates and order ignored.
func TestMetadumpArguments(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	s := h.NewSession("")
	run(s, "set foo 0 0 1\r\nx\r\n")
	c := strconv.Itoa(classOf(t, h.cfg.Cache)["foo"])
	other := "1"
	if c == "1" {
		other = "2"
	}
	line := "key=foo exp=-1 la=1800000000 cas=1 fetch=no cls=" + c + " size=" + strconv.Itoa(4+cache.ItemOverhead) + "\n"
	maxID := strconv.Itoa(h.maxClass())
	tests := []struct {
		name, args, want string
	}{
		{"all", "metadump all", line + "END\r\n"},
		{"its class", "metadump " + c, line + "END\r\n"},
		{"another class", "metadump " + other, "END\r\n"},
		{"both, reversed, repeated", "metadump " + c + "," + other + "," + c, line + "END\r\n"},
		{"empty ids skipped", "metadump ," + c + ",,", line + "END\r\n"},
		{"plus sign and zeros", "metadump +0" + c, line + "END\r\n"},
		{"63 is a class", "metadump 63", "END\r\n"},
		{"no ids", "metadump ,", "NOTSTARTED no items to crawl\r\n"},
		{"class 0", "metadump 0", "BADCLASS invalid class id\r\n"},
		{"past the last class", "metadump " + maxID, "BADCLASS invalid class id\r\n"},
		{"one bad id in a list", "metadump " + c + ",x", "BADCLASS invalid class id\r\n"},
		{"negative", "metadump -1", "BADCLASS invalid class id\r\n"},
		{"all in a list", "metadump all,1", "BADCLASS invalid class id\r\n"},
		{"case matters", "metadump ALL", "BADCLASS invalid class id\r\n"},
		{"wraps like strtoul to 32 bits", "metadump 4294967296", "BADCLASS invalid class id\r\n"},
		{"no argument", "metadump", "ERROR\r\n"},
		{"extra argument", "metadump all extra", "ERROR\r\n"},
		{"other subcommand", "bogus all", "ERROR\r\n"},
		{"bare", "", "ERROR\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := strings.TrimSpace("lru_crawler " + tc.args)
			if got, _ := run(s, cmd+"\r\n"); got != tc.want {
				t.Fatalf("%s:\n got %q\nwant %q", cmd, got, tc.want)
			}
		})
	}
}

// fill stores n items with keys "key:<i>" and 20-byte values, and checks
// that the cache kept them all.
func fill(t *testing.T, h *Handler, n int) {
	t.Helper()
	val := []byte(strings.Repeat("v", 20))
	for i := range n {
		if o, _ := h.cfg.Cache.Store(cache.Set, []byte("key:"+strconv.Itoa(i)), val, 0, 0, 0); o != cache.Stored {
			t.Fatalf("store %d: %v", i, o)
		}
	}
	if st := h.cfg.Cache.Stats(); st.CurrItems != uint64(n) {
		t.Fatalf("the cache holds %d items, want %d", st.CurrItems, n)
	}
}

// TestMetadumpStreams checks that a session told to Stream answers a large
// metadump in bounded parts through Continue, with the same lines as one
// built at once, and keeps replies in order around it.
func TestMetadumpStreams(t *testing.T) {
	const n = 20000
	h, _ := newTestHandler(t, nil)
	fill(t, h, n)
	whole, _ := run(h.NewSession(""), "lru_crawler metadump all\r\n")
	wantLines := dumpLines(t, whole)
	if len(wantLines) != n {
		t.Fatalf("unstreamed dump has %d lines, want %d", len(wantLines), n)
	}

	s := h.NewSession("")
	s.Stream()
	var req protocol.Request
	in := []byte("lru_crawler metadump all\r\nversion\r\n")
	m := s.Next(in, &req)
	out, closeConn := s.Execute(&req, nil)
	if closeConn {
		t.Fatal("metadump closed the connection")
	}
	// A part is a part's worth of lines plus at most one walk's lines.
	maxPart := dumpPartBytes + dumpWalkSlots*len("key=key:99999 exp=-1 la=1800000000 cas=99999 fetch=no cls=64 size=99\n")
	if len(out) > maxPart {
		t.Fatalf("Execute's part is %d bytes, want at most %d", len(out), maxPart)
	}
	parts := 1
	for more := true; more; parts++ {
		before := len(out)
		out, more = s.Continue(out)
		if len(out)-before > maxPart {
			t.Fatalf("part %d is %d bytes, want at most %d", parts, len(out)-before, maxPart)
		}
	}
	if parts < 10 {
		t.Errorf("the dump came in %d parts, want many", parts)
	}
	if got := dumpLines(t, string(out)); !slices.Equal(got, wantLines) {
		t.Fatalf("streamed dump differs from the whole one (%d lines, want %d)", len(got), len(wantLines))
	}
	if o, more := s.Continue(out); more || len(o) != len(out) {
		t.Fatal("Continue after the end appended or reported more")
	}
	s.Next(in[m:], &req)
	if out, _ = s.Execute(&req, nil); string(out) != "VERSION "+Version+"\r\n" {
		t.Fatalf("next request: %q", out)
	}

	// An executor that runs the next request before the dump is done gets
	// the rest of the dump first: replies stay whole and in order.
	s.Next(in, &req)
	out, _ = s.Execute(&req, nil)
	s.Next(in[m:], &req)
	out, _ = s.Execute(&req, out)
	rest, ok := strings.CutSuffix(string(out), "VERSION "+Version+"\r\n")
	if !ok {
		t.Fatalf("reply does not end with the version: ...%q", out[max(0, len(out)-80):])
	}
	if got := dumpLines(t, rest); !slices.Equal(got, wantLines) {
		t.Fatalf("dump finished by Execute has %d lines, want %d", len(got), len(wantLines))
	}
}

// TestMetadumpLimit checks that without streaming one reply stops at the
// dump limit, ends in END, and says so in the log.
func TestMetadumpLimit(t *testing.T) {
	var log bytes.Buffer
	h, _ := newTestHandler(t, func(c *Config) { c.Logger = zerolog.New(&log) })
	h.dumpLimit = 100 << 10
	fill(t, h, 20000)
	got, _ := run(h.NewSession("peer"), "lru_crawler metadump all\r\nversion\r\n")
	rest, ok := strings.CutSuffix(got, "VERSION "+Version+"\r\n")
	if !ok {
		t.Fatalf("reply does not end with the version")
	}
	lines := dumpLines(t, rest)
	if len(rest) < h.dumpLimit || len(rest) > h.dumpLimit+2*dumpPartBytes || len(lines) >= 20000 {
		t.Fatalf("cut dump is %d bytes with %d lines; limit %d", len(rest), len(lines), h.dumpLimit)
	}
	if !strings.Contains(log.String(), "cut short") {
		t.Fatalf("no warning logged: %q", log.String())
	}
}

// TestCachedump checks "stats cachedump": the items of one class, raw keys,
// value sizes, absolute expiry times, the limit, and items stored with a
// base64 key left out, as memcached 1.6.18 does.
func TestCachedump(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	s := h.NewSession("")
	run(s, "set foo 5 0 3\r\nbar\r\nset a/b%c~-._ 0 100 2\r\nhi\r\nms AAEC/w== 2 b\r\nhi\r\n")
	cls := classOf(t, h.cfg.Cache)
	want := map[string]string{
		"foo":       "ITEM foo [3 b; 0 s]\r\n",
		"a/b%c~-._": "ITEM a/b%c~-._ [2 b; 1800000100 s]\r\n",
	}
	byClass := map[int][]string{}
	for k, line := range want {
		byClass[cls[k]] = append(byClass[cls[k]], line)
	}
	for c, lines := range byClass {
		got, _ := run(s, "stats cachedump "+strconv.Itoa(c)+" 0\r\n")
		body, ok := strings.CutSuffix(got, "END\r\n")
		if !ok {
			t.Fatalf("class %d: no END: %q", c, got)
		}
		gotLines := strings.SplitAfter(body, "\r\n")
		gotLines = gotLines[:len(gotLines)-1]
		slices.Sort(gotLines)
		slices.Sort(lines)
		if !slices.Equal(gotLines, lines) {
			t.Errorf("class %d:\n got %q\nwant %q", c, gotLines, lines)
		}
		// A limit of 1 shows one of them.
		got, _ = run(s, "stats cachedump "+strconv.Itoa(c)+" 1\r\n")
		if strings.Count(got, "ITEM ") != 1 || !strings.HasSuffix(got, "END\r\n") {
			t.Errorf("class %d, limit 1: %q", c, got)
		}
	}
	if bc := cls["\x00\x01\x02\xff"]; len(byClass[bc]) == 0 {
		if got, _ := run(s, "stats cachedump "+strconv.Itoa(bc)+" 0\r\n"); got != "END\r\n" {
			t.Errorf("a class with only a base64 key: %q, want END", got)
		}
	}
}

// TestCachedumpLimit checks memcached's 2 MiB cap on a cachedump reply.
func TestCachedumpLimit(t *testing.T) {
	clk := &fakeClock{}
	c, err := cache.New(cache.Config{MaxBytes: 64 << 20, Shards: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Cache: c, MaxItemSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	for i := range n {
		key := fmt.Sprintf("%0200d", i)
		if o, _ := c.Store(cache.Set, []byte(key), []byte("v"), 0, 0, 0); o != cache.Stored {
			t.Fatalf("store %d: %v", i, o)
		}
	}
	got, _ := run(h.NewSession(""), "stats cachedump 1 0\r\n")
	lineLen := len(fmt.Sprintf("ITEM %0200d [1 b; 0 s]\r\n", 0))
	shown := strings.Count(got, "ITEM ")
	// memcached keeps a line if the reply with it, END and a NUL fit.
	if wantShown := (protocol.CachedumpLimit - 6) / lineLen; shown != wantShown || !strings.HasSuffix(got, "END\r\n") {
		t.Fatalf("dump of %d bytes shows %d items, want %d and END", len(got), shown, wantShown)
	}
}

// TestDumpNotLogged checks that the command log (-vv) shows a dump's
// command line but not its lines, as memcached, and shows its errors.
func TestDumpNotLogged(t *testing.T) {
	var log bytes.Buffer
	h, _ := newTestHandler(t, func(c *Config) {
		c.Verbosity = 2
		c.Logger = zerolog.New(&log)
	})
	s := h.NewSession("10.0.0.1:5000")
	run(s, "set a 0 0 1\r\nx\r\nlru_crawler metadump all\r\nlru_crawler metadump 0\r\nstats cachedump 1 0\r\nstats cachedump 99 0\r\n")
	want := []string{
		"< set a 0 0 1", "> STORED",
		"< lru_crawler metadump all",
		"< lru_crawler metadump 0", "> BADCLASS invalid class id",
		"< stats cachedump 1 0",
		"< stats cachedump 99 0", "> CLIENT_ERROR Illegal slab id",
	}
	if got := logLines(t, &log); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("log:\n got %q\nwant %q", got, want)
	}
}

// TestDumpStats checks the LRU crawler fields of "stats", which count
// metadumps as memcached counts its crawls: lru_crawler_starts per dump,
// crawler_items_checked per item listed, lru_crawler_running while one is
// unfinished; "stats reset" zeroes the counters.
func TestDumpStats(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	fill(t, h, 5000)
	stat := func(name string) string {
		t.Helper()
		got, _ := run(h.NewSession(""), "stats\r\n")
		_, values := statNames(t, got)
		return values[name]
	}
	run(h.NewSession(""), "lru_crawler metadump all\r\nlru_crawler metadump 0\r\n")
	if s, c, r := stat("lru_crawler_starts"), stat("crawler_items_checked"), stat("lru_crawler_running"); s != "1" || c != "5000" || r != "0" {
		t.Fatalf("after one dump: starts %s, items checked %s, running %s; want 1, 5000, 0", s, c, r)
	}

	streaming := h.NewSession("")
	streaming.Stream()
	run(streaming, "lru_crawler metadump all\r\n")
	if r := stat("lru_crawler_running"); r != "1" {
		t.Fatalf("lru_crawler_running %s while a dump streams, want 1", r)
	}
	streaming.Close() // the connection went away in the middle
	if r, s := stat("lru_crawler_running"), stat("lru_crawler_starts"); r != "0" || s != "2" {
		t.Fatalf("after a dropped dump: running %s, starts %s; want 0, 2", r, s)
	}

	run(h.NewSession(""), "stats reset\r\n")
	if s, c := stat("lru_crawler_starts"), stat("crawler_items_checked"); s != "0" || c != "0" {
		t.Fatalf("after stats reset: starts %s, items checked %s", s, c)
	}
}
