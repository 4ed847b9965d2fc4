package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// "stats" fields that key dumps and the listeners fill, against memcached.

// statDelta is after[name] - before[name] for two stats snapshots.
func statDelta(t *testing.T, before, after map[string]string, name string) int64 {
	t.Helper()
	b, err1 := strconv.ParseInt(before[name], 10, 64)
	a, err2 := strconv.ParseInt(after[name], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("stats %s: %q then %q", name, before[name], after[name])
	}
	return a - b
}

// awaitCrawlerIdle polls memcached's stats, starting from stats, until
// lru_crawler_running is 0 (memcached ends a crawl in the background) or
// hangGuard passes, and returns the last stats read.
func awaitCrawlerIdle(t *testing.T, addr string, stats map[string]string) map[string]string {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); stats["lru_crawler_running"] != "0" && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		stats = statsAfter(t, addr, "")
	}
	return stats
}

// TestDumpStatsLikeMemcached checks that a metadump counts in
// lru_crawler_starts and crawler_items_checked as memcached counts it, and
// that lru_crawler_running is 0 once it ended.
func TestDumpStatsLikeMemcached(t *testing.T) {
	const n = 50
	// memcached links new items into what its crawler walks, and ends a
	// crawl, in the background: its reference run waits for both.
	check := func(t *testing.T, addr string, memcached bool) {
		loadKeys(t, addr, "k", n)
		if memcached {
			awaitMemcachedDump(t, n, func() []string { return memcachedMetadump(t, addr) })
		}
		before := statsAfter(t, addr, "")
		if memcached {
			before = awaitCrawlerIdle(t, addr, before)
		}
		if got := normalMetadump(t, metadump(t, addr, "all")); len(got) != n {
			t.Fatalf("metadump lists %d items, want %d", len(got), n)
		}
		after := statsAfter(t, addr, "")
		if d := statDelta(t, before, after, "lru_crawler_starts"); d != 1 {
			t.Errorf("lru_crawler_starts went up by %d for one metadump", d)
		}
		if d := statDelta(t, before, after, "crawler_items_checked"); d != n {
			t.Errorf("crawler_items_checked went up by %d for a dump of %d items", d, n)
		}
		if memcached {
			after = awaitCrawlerIdle(t, addr, after)
		}
		if r := after["lru_crawler_running"]; r != "0" {
			t.Errorf("lru_crawler_running %s after the dump", r)
		}
	}
	t.Run("memcached", func(t *testing.T) {
		t.Parallel()
		check(t, testenv.StartMemcached(t).Addr, true)
	})
	forModes(t, func(t *testing.T, mode string) { check(t, startServer(t, mode).Addr, false) })
}

// TestConnectionStructuresLikeMemcached checks connection_structures with
// two listeners and one client: one structure each, as memcached counts
// them. memcached keeps a structure for every descriptor it ever served
// (its count only grows, with the connections of earlier probes too);
// tandem frees a connection's state when it closes, so its count is exact.
// reserved_fds: memcached keeps 5 descriptors per thread out of -c, tandem
// none (it serves -c clients).
func TestConnectionStructuresLikeMemcached(t *testing.T) {
	two := []string{"-l", "127.0.0.2"}
	mc := statsAfter(t, testenv.StartMemcached(t, two...).Addr, "")["connection_structures"]
	if n, err := strconv.Atoi(mc); err != nil || n < 3 {
		t.Fatalf("memcached with two listeners and one client: connection_structures %s, want 3 or more", mc)
	}
	forModes(t, func(t *testing.T, mode string) {
		st := statsAfter(t, startServer(t, mode, two...).Addr, "")
		if got := st["connection_structures"]; got != "3" {
			t.Errorf("connection_structures %s, want 3 (memcached: %s)", got, mc)
		}
		if got := st["reserved_fds"]; got != "0" {
			t.Errorf("reserved_fds %s, want 0", got)
		}
	})
}
