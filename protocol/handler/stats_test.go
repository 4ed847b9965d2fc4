package handler

import (
	"slices"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/protocol"
)

// memcachedGeneralStats are the fields of "stats" in memcached 1.6.18 (the
// Debian bookworm build, without extstore or a proxy configured), in order.
var memcachedGeneralStats = strings.Fields(`pid uptime time version libevent pointer_size
	rusage_user rusage_system max_connections curr_connections total_connections
	rejected_connections connection_structures response_obj_oom response_obj_count
	response_obj_bytes read_buf_count read_buf_bytes read_buf_bytes_free read_buf_oom
	reserved_fds cmd_get cmd_set cmd_flush cmd_touch cmd_meta get_hits get_misses
	get_expired get_flushed delete_misses delete_hits incr_misses incr_hits decr_misses
	decr_hits cas_misses cas_hits cas_badval touch_hits touch_misses store_too_large
	store_no_memory auth_cmds auth_errors bytes_read bytes_written limit_maxbytes
	accepting_conns listen_disabled_num time_in_listen_disabled_us threads conn_yields
	hash_power_level hash_bytes hash_is_expanding slab_reassign_rescues
	slab_reassign_chunk_rescues slab_reassign_evictions_nomem slab_reassign_inline_reclaim
	slab_reassign_busy_items slab_reassign_busy_deletes slab_reassign_running slabs_moved
	lru_crawler_running lru_crawler_starts lru_maintainer_juggles malloc_fails
	log_worker_dropped log_worker_written log_watcher_skipped log_watcher_sent log_watchers
	unexpected_napi_ids round_robin_fallback bytes curr_items total_items
	slab_global_page_pool expired_unfetched evicted_unfetched evicted_active evictions
	reclaimed crawler_reclaimed crawler_items_checked lrutail_reflocked moves_to_cold
	moves_to_warm moves_within_lru direct_reclaims lru_bumps_dropped`)

// statNames returns the names of a stats reply's lines, in order, and the
// values by name.
func statNames(t *testing.T, reply string) ([]string, map[string]string) {
	t.Helper()
	lines := checkStatsShape(t, reply)
	names := make([]string, 0, len(lines))
	values := map[string]string{}
	for _, l := range lines {
		name, value, _ := strings.Cut(strings.TrimPrefix(l, "STAT "), " ")
		names = append(names, name)
		values[name] = value
	}
	return names, values
}

func TestGeneralStatsAreMemcachedsInOrder(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	got, _ := run(h.NewSession(""), "stats\r\n")
	names, _ := statNames(t, got)
	if len(names) < len(memcachedGeneralStats) || !slices.Equal(names[:len(memcachedGeneralStats)], memcachedGeneralStats) {
		t.Fatalf("stats fields:\n got %v\nwant %v first", names, memcachedGeneralStats)
	}
	for _, n := range names[len(memcachedGeneralStats):] {
		if !strings.HasPrefix(n, "tandem_") {
			t.Errorf("field %q after memcached's is not a tandem_ field", n)
		}
	}
}

func TestStatsReset(t *testing.T) {
	server := ServerInfo{MaxConns: 10, CurrConns: 3}
	server.Counters[TotalConns] = 40
	server.Counters[RejectedConns] = 2
	h, _ := newTestHandler(t, func(c *Config) {
		c.Server = func() ServerInfo { return server }
	})
	s := h.NewSession("")
	run(s, "set p:a 0 0 1\r\n1\r\nget p:a\r\nflush_all\r\nstats detail on\r\nget p:b\r\n")
	// A session adds its byte counts to the shared ones in batches; Close
	// flushes them, so that the reset below sees them.
	s.Close()
	st := h.Stats()
	if st.Server.Counters[TotalConns] != 40 || st.Cache.CmdFlush != 1 || st.Cache.GetHits != 1 {
		t.Fatalf("before reset: total_connections %d cmd_flush %d get_hits %d",
			st.Server.Counters[TotalConns], st.Cache.CmdFlush, st.Cache.GetHits)
	}
	if got, _ := run(s, "stats reset\r\n"); got != "RESET\r\n" {
		t.Fatalf("stats reset = %q", got)
	}
	server.Counters[TotalConns] += 5 // five connections since the reset
	got, _ := run(s, "stats\r\n")
	_, v := statNames(t, got)
	for name, want := range map[string]string{
		"total_connections": "5", "rejected_connections": "0", "curr_connections": "3",
		"cmd_flush": "0", "get_hits": "0", "get_misses": "0", "cmd_set": "0",
		"curr_items": "0", "max_connections": "10",
	} {
		if v[name] != want {
			t.Errorf("after stats reset %s = %q, want %q", name, v[name], want)
		}
	}
	if got, _ := run(s, "stats detail dump\r\n"); got != "END\r\n" {
		t.Errorf("stats detail dump after reset is not empty: %q", got)
	}
	// bytes_read and bytes_written count again from the reset.
	s.Close()
	if st := h.Stats(); st.Counters[BytesRead] == 0 || st.Counters[BytesRead] > 40 {
		t.Errorf("bytes_read after reset = %d, want the few bytes since", st.Counters[BytesRead])
	}
}

func TestCmdFlushCountsRefusedFlushes(t *testing.T) {
	tests := []struct {
		name, input string
		disable     bool
		want        uint64
	}{
		{"plain", "flush_all\r\nflush_all 0\r\nflush_all noreply\r\n", false, 3},
		{"bad delay", "flush_all abc\r\n", false, 1},
		{"extra tokens", "flush_all 0 0 0\r\n", false, 1}, // memcached 1.6.45 ignores them (newer.go: extra tokens)
		{"unknown", "flush_allx\r\n", false, 0},
		{"refused by -F", "flush_all\r\nflush_all noreply\r\nflush_all abc\r\n", true, 3},
		{"binary", bin(protocol.OpFlush, "", "", "", 1, 0), false, 1},
		{"binary refused by -F", bin(protocol.OpFlush, "", "", "", 1, 0), true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, func(c *Config) { c.DisableFlushAll = tc.disable })
			run(h.NewSession(""), tc.input)
			if got := h.Stats().Cache.CmdFlush; got != tc.want {
				t.Fatalf("%q (-F %v): cmd_flush = %d, want %d", tc.input, tc.disable, got, tc.want)
			}
		})
	}
}

func TestCmdSetCountsBadChunks(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	run(h.NewSession(""), "set a 0 0 1\r\nxx\r\nset a 0 0 1 noreply\r\nxx\r\nms a 1\r\nxx\r\nset a 0 0 1\r\nx\r\n"+
		"set a 0 0 2000000\r\n")
	if got := h.Stats().Cache.CmdSet; got != 4 {
		t.Fatalf("cmd_set = %d, want 4 (three bad chunks, one set, not the too large one)", got)
	}
	run(h.NewSession(""), "stats reset\r\n")
	if got := h.Stats().Cache.CmdSet; got != 0 {
		t.Fatalf("cmd_set after stats reset = %d", got)
	}
}

// TestServerInfoRendered checks that the network side's counters and
// gauges reach their "stats" fields.
func TestServerInfoRendered(t *testing.T) {
	server := ServerInfo{MaxConns: 10, CurrConns: 3, ConnStructures: 4, ReadBufBytes: 5000}
	server.Counters[ConnYields] = 7
	server.Counters[ReadBufOOM] = 8
	server.Counters[ReadPauses] = 9
	server.Counters[ClosedIdle] = 11
	h, _ := newTestHandler(t, func(c *Config) { c.Server = func() ServerInfo { return server } })
	got, _ := run(h.NewSession(""), "stats\r\n")
	_, values := statNames(t, got)
	for name, want := range map[string]string{"curr_connections": "3", "connection_structures": "4",
		"read_buf_bytes": "5000", "conn_yields": "7", "read_buf_oom": "8", "tandem_read_pauses": "9",
		"tandem_closed_idle": "11", "reserved_fds": "0"} {
		if values[name] != want {
			t.Errorf("%s = %q, want %q", name, values[name], want)
		}
	}
}

// The first stats of a connection counts its own line in bytes_read, as
// memcached does (the session's local count is flushed before it runs).
func TestStatsCountsItsOwnLine(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	s := h.NewSession("")
	got, _ := run(s, "stats\r\n")
	_, v := statNames(t, got)
	if v["bytes_read"] != "7" {
		t.Errorf("bytes_read of a first stats = %q, want 7 (the stats line)", v["bytes_read"])
	}
	got, _ = run(s, "get a\r\nstats\r\n")
	if _, v = statNames(t, got[len("END\r\n"):]); v["bytes_read"] != "21" {
		t.Errorf("bytes_read after get and stats = %q, want 21", v["bytes_read"])
	}
}
