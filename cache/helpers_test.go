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
		free := map[uint32]bool{}
		for cl := range s.slab {
			for f := s.slab[cl].free; f != 0; f = le.Uint32(s.chunk(f - 1)) {
				h := f - 1
				if free[h] || s.pages[h>>16].class != cl || s.liveAt(h) != nil {
					t.Fatalf("shard %d class %d: free list holds chunk %x (page class %d) twice or live", i, cl, h, s.pages[h>>16].class)
				}
				free[h] = true
			}
		}
		var n, window, mainItems, empty int
		var size, recBytes, pageBytes, heapPages, wbytes int64
		for p, pg := range s.pages {
			if pg.mem == nil {
				continue
			}
			pageBytes += int64(len(pg.mem))
			if pg.kind == onHeap {
				heapPages += int64(len(pg.mem))
			}
			live := 0
			for j := range pg.carved {
				h := handle(p, j)
				r := s.liveAt(h)
				if r == nil {
					if pg.class != large && !free[h] {
						t.Errorf("shard %d: chunk %x neither live nor free", i, h)
					}
					continue
				}
				if got, _ := s.lookupLocked(s.hash(r.key()), r.key()); got != h {
					t.Errorf("shard %d: live item %q in chunk %x not indexed (index says %x)", i, r.key(), h, got)
				}
				if r.state()&stMain == 0 {
					window++
					wbytes += int64(cap(r))
				} else {
					mainItems++
				}
				if _, size := s.classFor(len(r)); cap(r) < size || cap(r) > size+size/4 {
					t.Errorf("shard %d: record %q of %d bytes in a %d-byte chunk", i, r.key(), len(r), cap(r))
				}
				live++
				size += r.size()
				recBytes += int64(cap(r))
			}
			if live != pg.live {
				t.Errorf("shard %d page %d: %d live records, counted %d", i, p, live, pg.live)
			}
			if pg.emptySlab() {
				empty++
			}
			n += live
		}
		if empty != s.empty {
			t.Errorf("shard %d: %d empty slab pages, counted %d", i, empty, s.empty)
		}
		if live := s.linked - s.killed; live != uint64(n) {
			// An item left (or came) some other way than killLocked (linkLocked).
			t.Errorf("shard %d: %d records linked, %d killed, but %d live", i, s.linked, s.killed, n)
		}
		if heapPages != s.heapPages {
			t.Errorf("shard %d: heapPages %d, walked %d", i, s.heapPages, heapPages)
		}
		if n != s.n || size != s.bytes || recBytes != s.recBytes || pageBytes != s.pageBytes {
			t.Errorf("shard %d: count %d bytes %d recBytes %d pageBytes %d, walked %d, %d, %d and %d",
				i, s.n, s.bytes, s.recBytes, s.pageBytes, n, size, recBytes, pageBytes)
		}
		if s.used() > s.budget {
			t.Errorf("shard %d: used %d over budget %d", i, s.used(), s.budget)
		}
		if s.entries < mainItems || s.entries > s.capacity {
			t.Errorf("shard %d: entries %d, main items %d, capacity %d", i, s.entries, mainItems, s.capacity)
		}
		if window != s.wn || wbytes != s.wbytes || s.idx.n != s.n || s.win.n < s.wn {
			t.Errorf("shard %d: window %d items %d bytes (counted %d, %d), index %d of %d, queue %d",
				i, window, wbytes, s.wn, s.wbytes, s.idx.n, s.n, s.win.n)
		}
		total += s.used()
		s.mu.Unlock()
	}
	if total > c.limit.Load() {
		t.Errorf("used %d over limit %d", total, c.limit.Load())
	}
}

// itemCharge is about what one item of the given key and value lengths charges against the
// budget: its chunk, its tinylfu entry and its share of the index and the sketch.
func itemCharge(klen, vlen int) int64 {
	return int64(sizeClass(hdrSize+klen+vlen)) + mainEntryBytes() + 32
}

// exactBudget is the budget of one shard of records too large for its pages (heap buffers) whose
// smallest main space and n items of the given key and value lengths fit exactly.
func exactBudget(n, klen, vlen int) int64 {
	var x index
	var q ring
	for i := range n {
		x.insert(uint64(i), 0)
		q.push(0)
	}
	return mainBytes(minCapacity) + x.bytes() + q.bytes() + int64(n)*int64(heapSize(hdrSize+klen+vlen))
}

func TestSizeClasses(t *testing.T) {
	for n := 1; n <= 3*maxSmall; n += 1 + n/50 {
		if got, want := heapSize(n), cap(slices.Grow([]byte(nil), n)); got != want {
			t.Fatalf("heapSize(%d) = %d, the allocator gives %d", n, got, want)
		}
		if n <= maxSmall {
			if c := sizeClass(n); c < n || (n > 256 && c-n > c/32) || c%8 != 0 {
				t.Fatalf("sizeClass(%d) = %d: too small, too wasteful or unaligned", n, c)
			}
		}
	}
	if len(slabSizes) > 255 {
		t.Fatalf("%d slab classes do not fit classOf", len(slabSizes))
	}
}

// checkMemory verifies every shard's memory charge against what it really holds, counted here
// from the memory itself: each page or large record as its source gives it (a mapping or a
// piece of the memory file in whole OS pages, a heap buffer in the allocator's size class), the
// index's and the window queue's slices by capacity, and the main space at its capacity as
// measured (mainBytes). Used must equal that sum and stay within the budget; tests call it after
// every store.
func checkMemory(t testing.TB, c *Cache) {
	t.Helper()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		var pages int64
		for p, pg := range s.pages {
			switch n := len(pg.mem); {
			case pg.mem == nil:
			case pg.kind == onHeap:
				pages += int64(heapSize(n))
			case n%osPage != 0:
				t.Errorf("shard %d page %d: %d bytes of %v memory, not whole OS pages", i, p, n, pg.kind)
			default:
				pages += int64(n)
			}
		}
		idx, win, main := int64(cap(s.idx.slots))*8, int64(cap(s.win.buf))*4, mainBytes(s.capacity)
		used, budget, capacity := s.used(), s.budget, s.capacity
		s.mu.Unlock()
		if held := pages + idx + win + main; used != held {
			t.Fatalf("shard %d: used %d, but it holds %d (pages %d, index %d, window queue %d, main space %d at capacity %d)",
				i, used, held, pages, idx, win, main, capacity)
		}
		if used > budget {
			t.Fatalf("shard %d: used %d over its budget %d", i, used, budget)
		}
	}
	if st := c.Stats(); int64(st.Used) > c.limit.Load() {
		t.Fatalf("used %d over the limit %d", st.Used, c.limit.Load())
	}
}
