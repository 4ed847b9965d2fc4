package handler

import (
	"github.com/tandemcache/tandem/cache"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/protocol"
)

// statLine is what every line of a stats reply must look like; it is the
// shape the memcached exporter's client and libmemcached split on.
var statLine = regexp.MustCompile(`^STAT [^ \r\n]+ [^ \r\n]+$`)

// checkStatsShape fails unless got is STAT lines followed by END.
func checkStatsShape(t *testing.T, got string) []string {
	t.Helper()
	if !strings.HasSuffix(got, "END\r\n") {
		t.Fatalf("reply does not end with END: %q", got)
	}
	body := strings.TrimSuffix(got, "END\r\n")
	if body == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(body, "\r\n"), "\r\n")
	for _, l := range lines {
		if !statLine.MatchString(l) {
			t.Errorf("malformed stats line %q", l)
		}
	}
	return lines
}

// sumClassField adds the values of "STAT <class>:<field> <n>" lines.
func sumClassField(reply, field string) int {
	sum := 0
	for _, line := range strings.Split(reply, "\r\n") {
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "STAT "), " ")
		if _, f, hasClass := strings.Cut(name, ":"); ok && hasClass && f == field {
			n, _ := strconv.Atoi(value)
			sum += n
		}
	}
	return sum
}

func TestStatsSubcommands(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	now := start.Add(100 * time.Second)
	conns := []protocol.ConnInfo{
		{FD: 9, Remote: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 40000},
			Local:      &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 11211},
			LastActive: now.Add(-3 * time.Second)},
		{FD: 7, Remote: &net.TCPAddr{IP: net.ParseIP("::1"), Port: 40001},
			Local:     &net.TCPAddr{IP: net.ParseIP("::1"), Port: 11211},
			Executing: true, LastActive: now},
		{FD: 3, Remote: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 11211}, Listening: true},
	}
	setup := "set a 0 0 5\r\nhello\r\nset b 0 0 3\r\nabc\r\nget a\r\nget zz\r\ndelete b\r\n"
	tests := []struct {
		name  string
		input string
		// want lists lines that must be present; exact, when set, is the
		// whole reply.
		want  []string
		exact string
		// count is the number of STAT lines, or -1 for any.
		count int
		// sums are per-class fields whose total over all classes is fixed.
		sums map[string]int
	}{
		{name: "sizes", input: "stats sizes\r\n", exact: "STAT sizes_status disabled\r\nEND\r\n"},
		{name: "conns", input: "stats conns\r\n", exact: "" +
			"STAT 3:addr tcp:127.0.0.1:11211\r\n" +
			"STAT 3:state conn_listening\r\n" +
			"STAT 3:secs_since_last_cmd 100\r\n" +
			"STAT 7:addr tcp6:[::1]:40001\r\n" +
			"STAT 7:listen_addr tcp6:[::1]:11211\r\n" +
			"STAT 7:state conn_parse_cmd\r\n" +
			"STAT 7:secs_since_last_cmd 0\r\n" +
			"STAT 9:addr tcp:127.0.0.1:40000\r\n" +
			"STAT 9:listen_addr tcp:127.0.0.1:11211\r\n" +
			"STAT 9:state conn_waiting\r\n" +
			"STAT 9:secs_since_last_cmd 3\r\n" +
			"END\r\n"},
		{name: "items", input: "stats items\r\n", count: 29, want: []string{
			":number 1", ":number_cold 1", ":age 4", ":mem_requested 54", ":evicted 0", ":evicted_time 0", ":outofmemory 0",
			":reclaimed 0", ":expired_unfetched 0", ":evicted_unfetched 0", ":hits_to_cold 1", ":tandem_byte_evictions 0"}},
		{name: "slabs", input: "stats slabs\r\n", count: -1, want: []string{
			// Keys hash to shards with a per-process seed, so "a" and "b" may
			// share a shard: only per-item facts of "a" and totals are fixed
			// (sums across classes are checked below).
			":get_hits 1", ":used_chunks 1", ":tandem_mem_requested 54", ":chunk_size 56", ":chunks_per_page 18724",
			":total_pages 2", ":free_chunks_end 0", ":tandem_budget_bytes ", ":tandem_index_capacity ",
			"STAT total_malloced ", "STAT tandem_shards 32"},
			sums: map[string]int{"cmd_set": 2, "delete_hits": 1, "tandem_tombstones": 0, "tandem_window_items": 1}}, // a deleted window item leaves no tinylfu entry; "a" is in the window
		{name: "unknown", input: "stats bogus\r\n", exact: "ERROR\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, clk := newTestHandler(t, func(c *Config) {
				c.Now = func() time.Time { return now }
				c.Conns = func() []protocol.ConnInfo { return append([]protocol.ConnInfo(nil), conns...) }
			})
			h.started = start
			s := h.NewSession("")
			run(s, setup)
			clk.Advance(4)
			got, _ := run(s, tc.input)
			if tc.exact != "" {
				if got != tc.exact {
					t.Fatalf("%q:\n got %q\nwant %q", tc.input, got, tc.exact)
				}
				return
			}
			lines := checkStatsShape(t, got)
			if tc.count >= 0 && len(lines) != tc.count {
				t.Errorf("%q: %d lines, want %d:\n%s", tc.input, len(lines), tc.count, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q: reply lacks %q:\n%s", tc.input, w, got)
				}
			}
			for field, want := range tc.sums {
				if sum := sumClassField(got, field); sum != want {
					t.Errorf("%q: %s summed over classes = %d, want %d:\n%s", tc.input, field, sum, want, got)
				}
			}
		})
	}
}

// TestStatsItemsPerShard checks that the per-shard blocks add up to the
// general stats and use memcached's key layout (items:<class>:<field>).
func TestStatsItemsPerShard(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	s := h.NewSession("")
	var in strings.Builder
	for i := range 300 {
		in.WriteString("set key" + strconv.Itoa(i) + " 0 0 2\r\nxy\r\n")
	}
	run(s, in.String())
	got, _ := run(s, "stats items\r\n")
	lines := checkStatsShape(t, got)
	var items, classes int
	key := regexp.MustCompile(`^STAT items:([0-9]+):([a-z_]+) ([0-9]+)$`)
	for _, l := range lines {
		m := key.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q is not items:<class>:<field> <number>", l)
		}
		if id, _ := strconv.Atoi(m[1]); id < 1 || id > 32 {
			t.Errorf("class %d out of 1..32", id)
		}
		if m[2] == "number" {
			n, _ := strconv.Atoi(m[3])
			items += n
			classes++
		}
	}
	if items != 300 {
		t.Errorf("items:*:number sum to %d, want 300", items)
	}
	if classes < 24 {
		t.Errorf("300 keys landed in only %d of 32 shards", classes)
	}
}

func TestStatsConnsWithoutSource(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	if got, _ := run(h.NewSession(""), "stats conns\r\n"); got != "END\r\n" {
		t.Fatalf("stats conns without Conns = %q, want END", got)
	}
}

func TestConnAddr(t *testing.T) {
	tests := []struct {
		name string
		addr net.Addr
		want string
	}{
		{"ipv4", &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5}, "tcp:10.1.2.3:5"},
		{"ipv6", &net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 11211}, "tcp6:[fe80::1]:11211"},
		{"nil", nil, "unknown"},
		{"unix", &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, "unix:/tmp/s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := connAddr(tc.addr); got != tc.want {
				t.Fatalf("connAddr(%v) = %q, want %q", tc.addr, got, tc.want)
			}
		})
	}
}

// TestDumpCommands checks "stats cachedump" and "lru_crawler" with and
// without -X, with the replies memcached 1.6.18 gives.
func TestDumpCommands(t *testing.T) {
	in := "stats cachedump 0 0\r\nstats cachedump 63 0\r\nstats cachedump 64 0\r\nstats cachedump -1 0\r\n" +
		"stats cachedump 4294967296 1\r\nstats cachedump 1\r\nlru_crawler metadump all\r\nlru_crawler metadump\r\nlru_crawler crawl 1\r\n"
	tests := []struct {
		name    string
		disable bool
		want    string
	}{
		{"dumps allowed", false, "END\r\nEND\r\nCLIENT_ERROR Illegal slab id\r\nCLIENT_ERROR bad command line format\r\n" +
			"END\r\nCLIENT_ERROR bad command line\r\nEND\r\nERROR\r\nOK\r\n"},
		{"-X", true, strings.Repeat("CLIENT_ERROR stats cachedump not allowed\r\n", 6) +
			"ERROR metadump not allowed\r\nERROR\r\nOK\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, func(c *Config) { c.DisableDumps = tc.disable })
			if got, _ := run(h.NewSession(""), in); got != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestShardSlabPagesCoverChunks checks that total_pages x chunks_per_page
// covers total_chunks within one page, as in memcached.
func TestShardSlabPagesCoverChunks(t *testing.T) {
	shard := func(items, bytes, used, budget uint64) cache.ShardStats {
		return cache.ShardStats{Budget: budget, Stats: cache.Stats{CurrItems: items, Bytes: bytes, Used: used}}
	}
	for _, s := range []cache.ShardStats{
		shard(1, 54, 1<<16, 2<<20),
		shard(16230, 16230*2000, 40<<20, 40<<20),
		shard(100, 100*300000, 31<<20, 32<<20),
	} {
		v := ShardSlab(&s)
		if cover := v.TotalPages * v.ChunksPerPage; cover < v.TotalChunks || cover >= v.TotalChunks+v.ChunksPerPage {
			t.Errorf("%+v: %d pages x %d chunks for %d chunks", s, v.TotalPages, v.ChunksPerPage, v.TotalChunks)
		}
	}
}
