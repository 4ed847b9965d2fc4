package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// kills returns the records killLocked removed and the records linkLocked linked, over all shards.
func kills(c *Cache) (killed, linked uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		killed, linked = killed+s.killed, linked+s.linked
		s.mu.Unlock()
	}
	return killed, linked
}

// TestEveryExitKills drives each way an item leaves the cache (doc.go's Exits) and checks that it
// left through killLocked: the exit kills at least one record, and every record that stopped being
// live was killed (linked - killed equals the live records checkInvariants walks, so an exit that
// takes a record out of the index, the window or its chunk any other way fails here).
func TestEveryExitKills(t *testing.T) {
	fill := func(c *Cache, n, size int) {
		v := make([]byte, size)
		for i := range n {
			c.Store(Set, fmt.Appendf(nil, "k%d", i), v, 0, 0, 0)
		}
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		setup func(*Cache, *fakeClock)
		exit  func(*testing.T, *Cache, *fakeClock)
	}{
		{"delete", Config{}, func(c *Cache, _ *fakeClock) { fill(c, 1, 10) },
			func(t *testing.T, c *Cache, _ *fakeClock) { c.Delete([]byte("k0")) }},
		{"meta delete with cas", Config{}, func(c *Cache, _ *fakeClock) { fill(c, 1, 10) },
			func(t *testing.T, c *Cache, _ *fakeClock) {
				it, _ := get(c, "k0")
				if out := c.MetaDelete([]byte("k0"), MetaDeleteOptions{CAS: it.CAS}); out != Deleted {
					t.Fatalf("meta delete: %v", out)
				}
			}},
		{"set that outgrows its chunk", Config{}, func(c *Cache, _ *fakeClock) { fill(c, 1, 10) },
			func(t *testing.T, c *Cache, _ *fakeClock) { fill(c, 1, 1000) }},
		{"append that outgrows its chunk", Config{}, func(c *Cache, _ *fakeClock) { fill(c, 1, 10) },
			func(t *testing.T, c *Cache, _ *fakeClock) {
				if out, _ := c.Store(Append, []byte("k0"), make([]byte, 1000), 0, 0, 0); out != Stored {
					t.Fatalf("append: %v", out)
				}
			}},
		{"set already expired", Config{}, func(c *Cache, _ *fakeClock) { fill(c, 1, 10) },
			func(t *testing.T, c *Cache, _ *fakeClock) { c.Store(Set, []byte("k0"), []byte("v"), 0, -1, 0) }},
		{"too large set", Config{MaxItemSize: 1 << 10}, func(c *Cache, _ *fakeClock) { fill(c, 1, 10) },
			func(t *testing.T, c *Cache, _ *fakeClock) { c.Store(Set, []byte("k0"), make([]byte, 2<<10), 0, 0, 0) }},
		{"rejected too large", Config{}, func(c *Cache, _ *fakeClock) { fill(c, 1, 10) },
			func(t *testing.T, c *Cache, _ *fakeClock) { c.RejectTooLarge(Set, []byte("k0")) }},
		{"access finds it expired", Config{}, func(c *Cache, _ *fakeClock) { c.Store(Set, []byte("k0"), []byte("v"), 0, 1, 0) },
			func(t *testing.T, c *Cache, clk *fakeClock) { clk.Advance(2); get(c, "k0") }},
		{"flush_all", Config{}, func(c *Cache, _ *fakeClock) { fill(c, 100, 10) },
			func(t *testing.T, c *Cache, _ *fakeClock) { c.FlushAll(0) }},
		{"sweep", Config{}, func(c *Cache, _ *fakeClock) { c.Store(Set, []byte("k0"), []byte("v"), 0, 1, 0) },
			func(t *testing.T, c *Cache, clk *fakeClock) { clk.Advance(2); c.Maintain(1 << 20) }},
		{"purge with evictions disabled", Config{MaxBytes: 1 << 20, Shards: 1, DisableEvictions: true},
			func(c *Cache, _ *fakeClock) {
				v := make([]byte, 1000)
				for i := 0; ; i++ {
					if out, _ := c.Store(Set, fmt.Appendf(nil, "k%d", i), v, 0, 1, 0); out != Stored {
						return
					}
				}
			},
			func(t *testing.T, c *Cache, clk *fakeClock) { clk.Advance(2); fill(c, 1, 1000) }},
		{"policy eviction", Config{MaxBytes: 1 << 20, Shards: 1}, func(c *Cache, _ *fakeClock) { fill(c, 1000, 100) },
			func(t *testing.T, c *Cache, _ *fakeClock) { fill(c, 20_000, 100) }},
		{"page hand", Config{MaxBytes: 1 << 20, Shards: 1}, func(c *Cache, _ *fakeClock) { fill(c, 20_000, 100) },
			func(t *testing.T, c *Cache, _ *fakeClock) {
				// Records of many sizes into a cache full of one size: pages change class.
				rng := rand.New(rand.NewPCG(1, 2))
				v := make([]byte, 16<<10)
				for i := range 20_000 {
					c.Store(Set, fmt.Appendf(nil, "x%d", i), v[:rng.IntN(len(v))], 0, 0, 0)
				}
				if c.Stats().ByteEvictions == 0 {
					t.Fatal("the page hand evicted nothing")
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk := newTestCache(t, tc.cfg)
			tc.setup(c, clk)
			checkInvariants(t, c)
			killed, linked := kills(c)
			tc.exit(t, c, clk)
			checkInvariants(t, c)
			killed2, linked2 := kills(c)
			if killed2 == killed {
				t.Fatalf("no record left through killLocked (linked %d more)", linked2-linked)
			}
		})
	}

	t.Run("restore", func(t *testing.T) {
		path := memFilePath(t)
		clk := newFakeClock()
		cfg := Config{MaxBytes: 4 << 20, Shards: 2, Clock: clk, MemoryFile: path}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			c.Store(Set, fmt.Appendf(nil, "k%d", i), []byte("v"), 0, int64(1+i%2*100), 0)
		}
		if _, err := c.SaveRestart(); err != nil {
			t.Fatal(err)
		}
		closeMemFile(c.file)
		clk.Advance(2) // half the items expire while the server is down
		c2, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer closeMemFile(c2.file)
		checkInvariants(t, c2)
		if killed, _ := kills(c2); killed != 50 || c2.Restart().Items != 50 {
			t.Fatalf("restore killed %d records and kept %d, want 50 and 50", killed, c2.Restart().Items)
		}
	})
}
