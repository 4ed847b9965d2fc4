package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// opsStats fetches "stats" or "stats <group>" on a fresh connection and
// returns its STAT lines in order (name and value), failing the test on any
// line a memcached stats parser would reject.
func opsStats(t testing.TB, addr, group string) [][2]string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // a hang guard
	cmd := "stats\r\n"
	if group != "" {
		cmd = "stats " + group + "\r\n"
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: reading: %v (so far %v)", cmd, err, out)
		}
		if line == "END\r\n" {
			return out
		}
		f := strings.Split(strings.TrimSuffix(line, "\r\n"), " ")
		if len(f) != 3 || f[0] != "STAT" || !strings.HasSuffix(line, "\r\n") {
			t.Fatalf("%q: malformed line %q", cmd, line)
		}
		out = append(out, [2]string{f[1], f[2]})
	}
}

// TestStatsGroupsLikeMemcached checks "stats items/slabs/conns/sizes" over
// TCP in every mode, with the key shapes memcached tools split on
// (memcached_exporter: "<int>:<field>" in slabs, "items:<int>:<field>" in
// items, numeric values).
func TestStatsGroupsLikeMemcached(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2")
		c := dial(t, s.Addr)
		var req strings.Builder
		var want strings.Builder
		for i := range 100 {
			fmt.Fprintf(&req, "set k%d 0 0 3\r\nabc\r\n", i)
			want.WriteString("STORED\r\n")
		}
		req.WriteString("get k1 k2 nope\r\n")
		want.WriteString("VALUE k1 0 3\r\nabc\r\nVALUE k2 0 3\r\nabc\r\nEND\r\n")
		if got := roundTrip(t, c, req.String(), want.Len()); got != want.String() {
			t.Fatalf("setup: got %s", quote(got))
		}

		items := opsStats(t, s.Addr, "items")
		itemKey := regexp.MustCompile(`^items:([0-9]+):[a-z_]+$`)
		total := 0
		for _, kv := range items {
			if !itemKey.MatchString(kv[0]) {
				t.Errorf("stats items key %q is not items:<class>:<field>", kv[0])
			}
			n, err := strconv.ParseUint(kv[1], 10, 64)
			if err != nil {
				t.Errorf("stats items %s = %q: not a number", kv[0], kv[1])
			}
			if strings.HasSuffix(kv[0], ":number") {
				total += int(n)
			}
		}
		if total != 100 {
			t.Errorf("stats items numbers sum to %d, want 100", total)
		}

		slabKey := regexp.MustCompile(`^([0-9]+:[a-z_]+|[a-z_]+)$`)
		var active, malloced, shards string
		for _, kv := range opsStats(t, s.Addr, "slabs") {
			if !slabKey.MatchString(kv[0]) {
				t.Errorf("stats slabs key %q is not <class>:<field> or <field>", kv[0])
			}
			switch kv[0] {
			case "active_slabs":
				active = kv[1]
			case "total_malloced":
				malloced = kv[1]
			case "tandem_shards":
				shards = kv[1]
			}
		}
		general := map[string]string{}
		for _, kv := range opsStats(t, s.Addr, "") {
			general[kv[0]] = kv[1]
		}
		// 100 keys over 4 shards (-m 64) leave none empty but once in 10^12.
		if n, _ := strconv.Atoi(shards); active != shards || n < 2 {
			t.Errorf("active_slabs = %q with 100 keys, want every one of tandem_shards = %q in use", active, shards)
		}
		// total_malloced is the memory charged against -m (pages and index):
		// at least the items' bytes, at most the limit.
		m, _ := strconv.ParseUint(malloced, 10, 64)
		if b, _ := strconv.ParseUint(general["bytes"], 10, 64); m < b || m > 64<<20 {
			t.Errorf("total_malloced %q: want between bytes %q and -m 64", malloced, general["bytes"])
		}

		if got := opsStats(t, s.Addr, "sizes"); len(got) != 1 || got[0] != [2]string{"sizes_status", "disabled"} {
			t.Errorf("stats sizes = %v", got)
		}

		// c is still open: stats conns must list it with our address.
		conns := opsStats(t, s.Addr, "conns")
		var fd string
		for _, kv := range conns {
			if strings.HasSuffix(kv[0], ":addr") && kv[1] == "tcp:"+c.LocalAddr().String() {
				fd = strings.TrimSuffix(kv[0], ":addr")
			}
		}
		if fd == "" {
			t.Fatalf("stats conns does not list %v: %v", c.LocalAddr(), conns)
		}
		wantLines := map[string]string{
			fd + ":listen_addr": "tcp:" + s.Addr,
			fd + ":state":       "conn_waiting",
		}
		for _, kv := range conns {
			if w, ok := wantLines[kv[0]]; ok {
				if kv[1] != w {
					t.Errorf("stats conns %s = %q, want %q", kv[0], kv[1], w)
				}
				delete(wantLines, kv[0])
			}
		}
		if len(wantLines) > 0 {
			t.Errorf("stats conns lacks %v: %v", wantLines, conns)
		}
	})
}

// TestMemcstatParsesStats runs libmemcached's memcstat against tandem: the
// general stats and the items, slabs and conns groups must parse.
func TestMemcstatParsesStats(t *testing.T) {
	tool := testenv.NeedTool(t, "memcstat", "libmemcached-tools")
	s := startServer(t, "pool")
	c := dial(t, s.Addr)
	if got := roundTrip(t, c, "set a 0 0 5\r\nhello\r\nget a\r\n", len("STORED\r\nVALUE a 0 5\r\nhello\r\nEND\r\n")); !strings.HasPrefix(got, "STORED") {
		t.Fatalf("setup: %s", quote(got))
	}
	servers := "--servers=" + s.Addr
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tool, append([]string{servers}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("memcstat %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	general := run()
	for _, want := range []string{"Server: 127.0.0.1", "\tversion: 1.6.18\n", "\tcurr_items: 1\n", "\tget_hits: 1\n", "\ttandem_mode: pool\n"} {
		if !strings.Contains(general, want) {
			t.Errorf("memcstat output lacks %q:\n%s", want, general)
		}
	}
	if out := run("items"); !regexp.MustCompile(`\titems:[0-9]+:number: 1\n`).MatchString(out) {
		t.Errorf("memcstat items lacks items:<n>:number: 1:\n%s", out)
	}
	if out := run("slabs"); !strings.Contains(out, "\tactive_slabs: 1\n") {
		t.Errorf("memcstat slabs lacks active_slabs: 1:\n%s", out)
	}
	if out := run("conns"); !strings.Contains(out, ":listen_addr: tcp:"+s.Addr) {
		t.Errorf("memcstat conns lacks our connection:\n%s", out)
	}
	if out := run("--analyze"); !strings.Contains(out, "Number of Servers Analyzed") {
		t.Errorf("memcstat --analyze:\n%s", out)
	}
}

// TestShardsFlag checks that --shards sets the cache's shard count and that the default follows
// -m (one shard per 16 MiB, at most 64).
func TestShardsFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-m", "64"}, "4"},
		{[]string{"-m", "64", "--shards", "16"}, "16"},
		{[]string{"-m", "2048"}, "64"},
	} {
		s := startServer(t, "inline", tc.args...)
		got := ""
		for _, kv := range opsStats(t, s.Addr, "slabs") {
			if kv[0] == "tandem_shards" {
				got = kv[1]
			}
		}
		if got != tc.want {
			t.Errorf("tandem %v: tandem_shards = %q, want %s", tc.args, got, tc.want)
		}
	}
}
