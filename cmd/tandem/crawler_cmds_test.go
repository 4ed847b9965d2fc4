package main

import (
	"testing"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestCrawlerAndLRUCommandsLikeMemcached sends the crawler, LRU tuning and
// size-tracking commands cron jobs and scripts send, in order (the crawler's
// switch carries from one to the next), to memcached 1.6.18 and to tandem,
// and wants memcached's replies. "stats sizes_enable" is the exception:
// tandem cannot track sizes and answers with memcached's error form. An
// lru_crawler line with a last noreply is silent in memcached 1.6.45 and
// tandem (transcript.Differences: admin noreply; transcripts/classic.txt).
func TestCrawlerAndLRUCommandsLikeMemcached(t *testing.T) {
	cmds := []string{
		"lru_crawler crawl all", "lru_crawler crawl 1,2", "lru_crawler crawl 63", "lru_crawler crawl 64",
		"lru_crawler crawl 0", "lru_crawler crawl x", "lru_crawler crawl 1,99", "lru_crawler crawl hash",
		"lru_crawler crawl", "lru_crawler crawl all extra",
		"lru_crawler enable", "lru_crawler sleep 100", "lru_crawler sleep 1000000", "lru_crawler sleep 1000001",
		"lru_crawler sleep -1", "lru_crawler sleep x", "lru_crawler tocrawl 5", "lru_crawler tocrawl x",
		"lru_crawler tocrawl -1", "lru_crawler tocrawl", "lru_crawler bogus", "lru_crawler",
		"lru_crawler disable", "lru_crawler disable", "lru_crawler crawl all", "lru_crawler metadump all",
		"lru_crawler enable", "lru_crawler crawl all",
		"lru mode flat", "lru mode segmented", "lru mode bogus", "lru mode", "lru mode flat extra",
		"lru mode segmented noreply", "lru temp_ttl 5", "lru temp_ttl -1", "lru temp_ttl x", "lru temp_ttl",
		"lru tune 10 20 0.1 2.0", "lru tune 50 40 0.1 2.0", "lru tune 10 20 0 2.0", "lru tune x 20 0.1 2.0",
		"lru bogus", "lru",
		"stats sizes_disable", "stats extstore", "stats extstore x",
	}
	mc := testenv.StartMemcached(t)
	s := startServer(t, "pool")
	for _, cmd := range cmds {
		want, _, err := exchange(mc.Addr, cmd+"\r\n")
		if err != nil {
			t.Fatalf("memcached %q: %v", cmd, err)
		}
		got, _, err := exchange(s.Addr, cmd+"\r\n")
		if err != nil {
			t.Fatalf("tandem %q: %v", cmd, err)
		}
		if got != want {
			t.Errorf("%q: tandem %q, memcached %q", cmd, got, want)
		}
	}
	st, err := serverStats(s.Addr, "settings")
	if err != nil {
		t.Fatal(err)
	}
	if st["lru_crawler"] != "yes" || st["lru_crawler_sleep"] != "1000000" || st["lru_crawler_tocrawl"] != "5" {
		t.Errorf("stats settings after the crawler commands: lru_crawler %q sleep %q tocrawl %q, want yes 1000000 5",
			st["lru_crawler"], st["lru_crawler_sleep"], st["lru_crawler_tocrawl"])
	}
	if got, _, _ := exchange(s.Addr, "stats sizes_enable\r\n"); got != "STAT sizes_status error\r\nSTAT sizes_error not_supported\r\n" {
		t.Errorf("stats sizes_enable: %q", got)
	}
}
