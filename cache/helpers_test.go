package cache

import (
	"bytes"
	"slices"
	"sync/atomic"
	"testing"
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
		var n, free int
		var size, charge int64
		for j, p := range s.slots {
			r := recordAt(p)
			if r == nil {
				free++
				continue
			}
			if got, ok := s.index.Get(s.hash(r.key())); !ok || got != uint32(j) {
				t.Errorf("shard %d: live item %q in slot %d not indexed (entry %d, %v)", i, r.key(), j, got, ok)
			}
			if cap(r) < len(r) || sizeClass(len(r)) < len(r) {
				t.Errorf("shard %d: record %q of %d bytes in a %d-byte class", i, r.key(), len(r), sizeClass(len(r)))
			}
			n++
			size += r.size()
			charge += r.charge()
		}
		if n != s.n || free != len(s.free) {
			t.Errorf("shard %d: count %d free %d, walked %d live and %d free", i, s.n, len(s.free), n, free)
		}
		if size != s.bytes || charge != s.recBytes {
			t.Errorf("shard %d: bytes %d recBytes %d, sum of items %d and %d", i, s.bytes, s.recBytes, size, charge)
		}
		if s.used() > s.cfg.budget {
			t.Errorf("shard %d: used %d over budget %d", i, s.used(), s.cfg.budget)
		}
		if s.entries < s.n || s.entries > s.capacity {
			t.Errorf("shard %d: entries %d, live %d, capacity %d", i, s.entries, s.n, s.capacity)
		}
		total += s.used()
		s.mu.Unlock()
	}
	if total > c.limit {
		t.Errorf("used %d over limit %d", total, c.limit)
	}
}

// itemCharge is what one item of the given key and value lengths charges against the budget,
// its index entry and index slot included.
func itemCharge(klen, vlen int) int64 {
	return int64(sizeClass(hdrSize+klen+vlen)) + slotBytes + entryBytes + indexSlotBytes
}

// exactBudget is the budget of one shard whose smallest index holds exactly n items of the
// given key and value lengths.
func exactBudget(n, klen, vlen int) int64 {
	return int64(fitCapacity(minCapacity))*indexSlotBytes + int64(n)*(itemCharge(klen, vlen)-indexSlotBytes)
}

func TestSizeClassMatchesAllocator(t *testing.T) {
	for n := 1; n <= 3*maxSmall; n += 1 + n/50 {
		if got, want := sizeClass(n), cap(slices.Grow([]byte(nil), n)); got != want {
			t.Fatalf("sizeClass(%d) = %d, the allocator gives %d", n, got, want)
		}
	}
}
