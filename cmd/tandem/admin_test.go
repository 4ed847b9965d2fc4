package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// Issue #26 item 4: memcached 1.6.18's admin commands slabs, cache_memlimit
// and watch, against the real memcached.

// adminCases are answered byte for byte as memcached answers them. Valid
// "slabs reassign" requests are not among them: memcached answers NOSPARE
// or OK depending on its pages, tandem always OK (it moves memory between
// classes by itself); TestAdminCommandsAccepted covers them.
// A last noreply on slabs (but automove) and watch is answered otherwise by
// memcached 1.6.45, as tandem does (transcript.Differences: admin noreply,
// watch noreply): those cases are in protocol/testdata/transcripts/classic.txt.
var adminCases = []string{
	"slabs automove 1\r\n", "slabs automove 2\r\n", "slabs automove 3\r\n", "slabs automove 0\r\n",
	"slabs automove\r\n", "slabs automove x\r\n", "slabs automove -1\r\n", "slabs automove 1x\r\n",
	"slabs automove 1 noreply\r\n", "slabs automove x noreply\r\n", "slabs automove 1 2\r\n", "slabs automove 01\r\n",
	"slabs automove ratio 0.5\r\n", "slabs automove ratio\r\n", "slabs automove ratio x\r\n",
	"slabs reassign 1 1\r\n", "slabs reassign -1 -1\r\n", "slabs reassign 99 1\r\n", "slabs reassign 1 99\r\n",
	"slabs reassign -2 3\r\n", "slabs reassign a b\r\n", "slabs reassign 1 b\r\n", "slabs reassign\r\n",
	"slabs reassign 1\r\n", "slabs reassign 1 2 3\r\n",
	"slabs\r\n", "slabs foo\r\n", "slabs foo bar\r\n", "slabs Automove 1\r\n",
	"cache_memlimit 0\r\n", "cache_memlimit 7\r\n", "cache_memlimit\r\n", "cache_memlimit x\r\n",
	"cache_memlimit -5\r\n", "cache_memlimit 99999999999\r\n", "cache_memlimit 1000000001\r\n",
	"cache_memlimit 1 noreply\r\n", "cache_memlimit 1 2 3\r\n",
	"watch x\r\n", "watch fetchers x\r\n", "WATCH\r\n",
	"version\r\nwatch fetchers\r\n",
}

// TestAdminCommandsLikeMemcached runs adminCases on tandem in every mode and
// on memcached and compares the replies.
func TestAdminCommandsLikeMemcached(t *testing.T) {
	mc := testenv.StartMemcached(t)
	want := make([]string, len(adminCases))
	for i, req := range adminCases {
		reply, _, err := exchange(mc.Addr, req)
		if err != nil {
			t.Fatalf("memcached %q: %v", req, err)
		}
		want[i] = reply
	}
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		for i, req := range adminCases {
			got, closed, err := exchange(s.Addr, req)
			if err != nil || closed || got != want[i] {
				t.Errorf("%q: tandem %q (closed %v, %v), memcached %q", req, got, closed, err, want[i])
			}
		}
	})
}

// TestAdminCommandsAccepted checks the requests tandem accepts: automove
// changes what "stats settings" reports, a valid reassign is OK, and
// cache_memlimit changes -m at run time (limit_maxbytes and maxbytes), as
// memcached's does.
func TestAdminCommandsAccepted(t *testing.T) {
	s := startServer(t, "inline", "-m", "64")
	for _, tc := range []struct{ req, want string }{
		{"slabs automove 2\r\n", "OK\r\n"},
		{"slabs automove ratio 0.5\r\n", "OK\r\n"},
		{"slabs reassign 1 2\r\n", "OK\r\n"},
		{"slabs reassign -1 2\r\n", "OK\r\n"},
		{"slabs reassign 0 2\r\n", "OK\r\n"},
		{"cache_memlimit 128\r\n", "OK\r\n"},
	} {
		if got, _, err := exchange(s.Addr, tc.req); err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.req, got, err, tc.want)
		}
	}
	st, err := serverStats(s.Addr, "settings")
	if err != nil {
		t.Fatal(err)
	}
	if st["slab_automove"] != "2" || st["slab_automove_ratio"] != "0.50" || st["slab_reassign"] != "yes" ||
		st["maxbytes"] != "134217728" {
		t.Errorf("stats settings: slab_automove %q ratio %q reassign %q maxbytes %q", st["slab_automove"],
			st["slab_automove_ratio"], st["slab_reassign"], st["maxbytes"])
	}
	if st, err := serverStats(s.Addr, ""); err != nil || st["limit_maxbytes"] != "134217728" {
		t.Errorf("stats after cache_memlimit 128: limit_maxbytes %q, %v", st["limit_maxbytes"], err)
	}
	if st, err := serverStats(s.Addr, ""); err != nil || st["limit_maxbytes"] != "134217728" {
		t.Errorf("stats after cache_memlimit 128: limit_maxbytes %q, %v", st["limit_maxbytes"], err)
	}
	mc := testenv.StartMemcached(t)
	if got, _, err := exchange(mc.Addr, "cache_memlimit 128\r\n"); err != nil || got != "OK\r\n" {
		t.Errorf("memcached cache_memlimit 128: %q, %v", got, err)
	}
}

// watchMask hides what differs from run to run in a watch line: time, gid,
// descriptor and client port.
var watchMask = regexp.MustCompile(`^ts=\d+\.\d+ gid=\d+ |cfd=\d+|rport=\d+`)

// watchSession starts "watch <flags>" on addr, runs reqs on another
// connection, closes it, and returns the masked lines the watcher got, up
// to and including the conn_close of that connection (connevents must be
// among flags); other connections' events are left out.
func watchSession(t *testing.T, addr, flags string, reqs []string) []string {
	t.Helper()
	w, err := net.DialTimeout("tcp", addr, hangGuard)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_ = w.SetDeadline(time.Now().Add(hangGuard))
	if _, err := io.WriteString(w, "watch "+flags+"\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(w)
	// memcached's logger thread writes the OK when it next runs (up to a
	// second later).
	if ok, err := r.ReadString('\n'); err != nil || ok != "OK\r\n" {
		t.Fatalf("watch %s: %q, %v", flags, ok, err)
	}
	c, err := net.DialTimeout("tcp", addr, hangGuard)
	if err != nil {
		t.Fatal(err)
	}
	cr := bufio.NewReader(c)
	_ = c.SetDeadline(time.Now().Add(hangGuard))
	for _, req := range reqs {
		if _, err := io.WriteString(c, req+"\r\n"+sentinel); err != nil {
			t.Fatal(err)
		}
		readUntilReader(t, cr, sentinelReply)
	}
	ours := " rport=" + strconv.Itoa(c.LocalAddr().(*net.TCPAddr).Port) + " "
	c.Close()
	var lines []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("watch %s: %v after %q", flags, err, lines)
		}
		if !strings.HasSuffix(line, "\n") || strings.HasSuffix(line, "\r\n") {
			t.Fatalf("watch line %q does not end in a bare \\n", line)
		}
		if strings.Contains(line, " type=conn_") && !strings.Contains(line, ours) {
			// Another connection: memcached may log the start-up probe's
			// events late.
			continue
		}
		line = watchMask.ReplaceAllString(strings.TrimSuffix(line, "\n"), "")
		lines = append(lines, line)
		if strings.HasPrefix(line, "type=conn_close") {
			return lines
		}
	}
}

// TestWatchLikeMemcached compares the lines of "watch fetchers mutations
// connevents" for the same commands on tandem and memcached. memcached also
// logs the fetch a store makes of the old item, and prints the class and
// size of the item a delete, touch or incr found; tandem does neither
// (docs/operations.md), so those lines are left out of the comparison.
func TestWatchLikeMemcached(t *testing.T) {
	reqs := []string{
		"set foo 5 0 3\r\nbar", "get foo", "get nope", "gets foo", "gat 100 foo",
		"add a 0 100 1\r\nx", "add a 0 0 1\r\ny", "replace zz 0 0 1\r\nz", "set big 0 0 2000\r\n" + strings.Repeat("b", 2000),
		"get big a", "cas a 0 0 1 999\r\nz", "get k%20é", "set k%20é 1 0 1\r\nv", "get k%20é",
		"mg zz v", "ms m1 2\r\nhi", "mg m1 v", "ms m1 1 ME\r\nx", "ms m2 1 MS T100\r\ny",
	}
	// withoutStoreFetches drops memcached's fetch of the item a store
	// replaces: the item_get just before an item_store of the same key.
	withoutStoreFetches := func(lines []string) []string {
		var out []string
		for i, l := range lines {
			if key, ok := strings.CutPrefix(l, "type=item_get key="); ok && i+1 < len(lines) {
				key, _, _ = strings.Cut(key, " ")
				if strings.HasPrefix(lines[i+1], "type=item_store key="+key+" ") {
					continue
				}
			}
			out = append(out, l)
		}
		return out
	}
	want := withoutStoreFetches(watchSession(t, testenv.StartMemcached(t).Addr, "fetchers mutations connevents", reqs))
	forModes(t, func(t *testing.T, mode string) {
		got := watchSession(t, startServer(t, mode).Addr, "fetchers mutations connevents", reqs)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("watch lines differ\ntandem:\n%s\nmemcached:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestWatchStats checks that a watcher shows in stats and that -W refuses
// watch with memcached's reply.
func TestWatchStats(t *testing.T) {
	s := startServer(t, "pool")
	watchSession(t, s.Addr, "connevents", []string{"version"})
	st, err := serverStats(s.Addr, "")
	if err != nil {
		t.Fatal(err)
	}
	if st["log_watcher_sent"] == "0" || st["log_worker_written"] == "0" {
		t.Errorf("stats after a watch: log_watcher_sent %q log_worker_written %q", st["log_watcher_sent"], st["log_worker_written"])
	}
	for _, addr := range []string{startServer(t, "goroutine", "-W").Addr, testenv.StartMemcached(t, "-W").Addr} {
		if got, _, err := exchange(addr, "watch\r\n"); err != nil || got != "CLIENT_ERROR watch commands not allowed\r\n" {
			t.Errorf("-W: watch answered %q, %v", got, err)
		}
	}
}

// evictionLine is a "watch evictions" line of memcached 1.6.18 for an item set with flags 5, no
// exptime and a 2,000-byte value that was never read: ts and gid vary, the key is one of ours.
var evictionLine = regexp.MustCompile(`^ts=\d+\.\d+ gid=\d+ type=eviction key=ev\d+ fetch=no ttl=-1 la=\d+ clsid=\d+ size=2000$`)

// TestWatchEvictionsLikeMemcached fills a small cache past its limit while a client watches
// evictions, on memcached and on tandem in every mode: each reports evicted items in the same
// line format.
func TestWatchEvictionsLikeMemcached(t *testing.T) {
	check := func(t *testing.T, addr string) {
		w, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.Write([]byte("watch evictions\r\n")); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(w)
		w.SetReadDeadline(time.Now().Add(10 * time.Second))
		if line, err := r.ReadString('\n'); err != nil || line != "OK\r\n" {
			t.Fatalf("watch evictions: %q, %v", line, err)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		val := strings.Repeat("x", 2000)
		var req bytes.Buffer
		for i := range 3000 {
			fmt.Fprintf(&req, "set ev%d 5 0 %d noreply\r\n%s\r\n", i, len(val), val)
		}
		req.WriteString("version\r\n")
		if _, err := c.Write(req.Bytes()); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || !evictionLine.MatchString(strings.TrimSuffix(line, "\n")) {
			t.Fatalf("first eviction line %q, %v; want memcached's format", line, err)
		}
	}
	t.Run("memcached", func(t *testing.T) { check(t, testenv.StartMemcached(t, "-m", "2", "-I", "512k").Addr) })
	forModes(t, func(t *testing.T, mode string) { check(t, startServer(t, mode, "-m", "2", "-I", "512k").Addr) })
}
