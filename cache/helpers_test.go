package cache

import (
	"bytes"
	"sync/atomic"
	"testing"
	"unsafe"
)

const t0 = 1_700_000_000 // fake clock start (unix seconds)

// fakeClock is a Clock tests move by hand; safe for concurrent use.
type fakeClock struct{ t atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.t.Store(t0)
	return c
}

func (c *fakeClock) Now() int64        { return c.t.Load() }
func (c *fakeClock) Advance(sec int64) { c.t.Add(sec) }

// capture is an Appender that appends the value and remembers a copy of the item.
type capture struct{ it Item }

func (a *capture) AppendItem(dst []byte, it Item) []byte {
	a.it = it
	a.it.Key = bytes.Clone(it.Key)
	a.it.Value = bytes.Clone(it.Value)
	return append(dst, it.Value...)
}

// valueAppender appends the value only (the cheapest realistic Appender).
type valueAppender struct{}

func (valueAppender) AppendItem(dst []byte, it Item) []byte { return append(dst, it.Value...) }

func newTestCache(t testing.TB, cfg Config) (*Cache, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	if cfg.Clock == nil {
		cfg.Clock = clk
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 64 << 20
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return c, clk
}

// get returns a copy of key's item, or false on a miss.
func get(c *Cache, key string) (Item, bool) {
	var a capture
	_, ok := c.Get(nil, []byte(key), GetOptions{}, &a)
	return a.it, ok
}

func set(t testing.TB, c *Cache, key, value string) uint64 {
	t.Helper()
	out, cas := c.Store(Set, []byte(key), []byte(value), 0, 0, 0)
	if out != Stored {
		t.Fatalf("set %q: got %v, want Stored", key, out)
	}
	return cas
}

func wantValue(t testing.TB, c *Cache, key, want string) Item {
	t.Helper()
	it, ok := get(c, key)
	if !ok {
		t.Fatalf("get %q: miss, want %q", key, want)
	}
	if string(it.Value) != want {
		t.Fatalf("get %q: got %q, want %q", key, it.Value, want)
	}
	return it
}

func wantMiss(t testing.TB, c *Cache, key string) {
	t.Helper()
	if it, ok := get(c, key); ok {
		t.Fatalf("get %q: hit %q, want miss", key, it.Value)
	}
}

// checkInvariants verifies every shard's internal accounting.
func checkInvariants(t testing.TB, c *Cache) {
	t.Helper()
	var total int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		var n int
		var sum int64
		var prev *item
		for it := s.lru.head; it != nil; it = it.next {
			if it.prev != prev {
				t.Errorf("shard %d: broken prev link", i)
			}
			if !it.live() {
				t.Errorf("shard %d: tombstone %q in list", i, it.key())
			}
			if got, ok := s.index.Get(s.hash(it.key())); !ok || got != it {
				t.Errorf("shard %d: live item %q not in index", i, it.key())
			}
			n++
			sum += it.cost()
			prev = it
		}
		if prev != s.lru.tail {
			t.Errorf("shard %d: tail mismatch", i)
		}
		if n != s.lru.n {
			t.Errorf("shard %d: list count %d, walked %d", i, s.lru.n, n)
		}
		if sum != s.bytes {
			t.Errorf("shard %d: bytes %d, sum of items %d", i, s.bytes, sum)
		}
		if s.bytes > s.cfg.budget {
			t.Errorf("shard %d: bytes %d over budget %d", i, s.bytes, s.cfg.budget)
		}
		if s.entries != s.lru.n+s.tombs || s.tombs < 0 {
			t.Errorf("shard %d: entries %d != live %d + tombs %d", i, s.entries, s.lru.n, s.tombs)
		}
		if s.entries > s.capacity {
			t.Errorf("shard %d: entries %d over capacity %d", i, s.entries, s.capacity)
		}
		total += s.bytes
		s.mu.Unlock()
	}
	if total > c.limit {
		t.Errorf("bytes %d over limit %d", total, c.limit)
	}
}

func TestItemSize(t *testing.T) {
	if got := unsafe.Sizeof(item{}); got != 64 {
		t.Errorf("sizeof(item) = %d, want 64 (one allocator size class)", got)
	}
}
