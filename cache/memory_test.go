package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMemoryBound writes 20x the budget in random sizes and keys and checks after every store
// that the accounted bytes never exceed MaxBytes and that every store is accepted.
func TestMemoryBound(t *testing.T) {
	for _, shards := range []int{0, 1} {
		t.Run(fmt.Sprint("shards=", shards), func(t *testing.T) {
			const maxBytes = 256 << 10
			c, clk := newTestCache(t, Config{MaxBytes: maxBytes, MaxItemSize: 8 << 10, Shards: shards})
			rng := rand.New(rand.NewPCG(1, 2))
			buf := make([]byte, 8<<10)
			var written int64
			for i := 0; written < 20*maxBytes; i++ {
				key := fmt.Appendf(nil, "key-%d", rng.IntN(5000))
				n := rng.IntN(8<<10 - ItemOverhead - len(key) + 1)
				if rng.IntN(10) == 0 {
					n = rng.IntN(64) // plenty of small items too
				}
				var exp int64
				if rng.IntN(4) == 0 {
					exp = int64(1 + rng.IntN(5))
				}
				mode := Set
				switch rng.IntN(10) {
				case 0:
					mode = Append
				case 1:
					mode = Prepend
				}
				out, _ := c.Store(mode, key, buf[:n], 0, exp, 0)
				if mode == Set && out != Stored {
					t.Fatalf("store %d (%d bytes): %v, want Stored", i, n, out)
				}
				if b := c.Stats().Bytes; b > maxBytes {
					t.Fatalf("store %d: bytes %d over MaxBytes %d", i, b, maxBytes)
				}
				checkMemory(t, c)
				written += int64(n + len(key) + ItemOverhead)
				if i%500 == 0 {
					clk.Advance(1)
					c.Delete(key)
					checkInvariants(t, c)
				}
			}
			checkInvariants(t, c)
			st := c.Stats()
			t.Logf("bytes %d of %d, items %d, evictions %d, reclaimed %d, rebuilds %d, capacity %d",
				st.Bytes, maxBytes, st.CurrItems, st.Evictions, st.Reclaimed, st.Rebuilds, st.IndexCapacity)
			if st.Bytes < maxBytes/2 {
				t.Errorf("bytes %d: the cache should be well used", st.Bytes)
			}
		})
	}
}

func TestDisableEvictions(t *testing.T) {
	const maxBytes = 64 << 10
	c, _ := newTestCache(t, Config{MaxBytes: maxBytes, MaxItemSize: 16 << 10, Shards: 1, DisableEvictions: true})
	val := make([]byte, 100)
	var stored int
	for i := 0; ; i++ {
		out, _ := c.Store(Set, fmt.Appendf(nil, "k%d", i), val, 0, 0, 0)
		if out == NoMemory {
			break
		}
		if out != Stored {
			t.Fatalf("store %d: %v", i, out)
		}
		stored++
		if i > maxBytes {
			t.Fatal("never ran out of memory")
		}
	}
	st := c.Stats()
	if st.Evictions != 0 || st.CurrItems != uint64(stored) || st.StoreNoMemory != 1 || st.Bytes > maxBytes {
		t.Fatalf("evictions %d items %d/%d no_memory %d bytes %d", st.Evictions, st.CurrItems, stored, st.StoreNoMemory, st.Bytes)
	}
	// Neither room for another page nor an index entry left.
	s := &c.shards[0]
	if st.Used+uint64(s.nextPage(int(classOf[sizeClass(hdrSize+5+100)/8]))) <= maxBytes && st.IndexEntries < st.IndexCapacity {
		t.Fatalf("NoMemory with room left: used %d, entries %d of %d", st.Used, st.IndexEntries, st.IndexCapacity)
	}
	// every stored item is still there: tinylfu must not evict with -M
	for i := range stored {
		if _, ok := get(c, fmt.Sprintf("k%d", i)); !ok {
			t.Fatalf("k%d lost with evictions disabled", i)
		}
	}
	// overwriting with a same-size value needs no room
	if out, _ := c.Store(Set, []byte("k0"), val, 0, 0, 0); out != Stored {
		t.Fatalf("same-size overwrite: %v", out)
	}
	// a larger set fails and removes the old value (memcached); a delete makes room
	if out, _ := c.Store(Set, []byte("k1"), make([]byte, maxBytes-c.Stats().Used+100), 0, 0, 0); out != NoMemory {
		t.Fatalf("growing set: %v", out)
	}
	wantMiss(t, c, "k1")
	if out, _ := c.Store(Add, []byte("k1"), val, 0, 0, 0); out != Stored {
		t.Fatalf("add after the failed set freed its room: %v", out)
	}
	checkInvariants(t, c)
}

func TestDisableEvictionsReclaimsExpired(t *testing.T) {
	c, clk := newTestCache(t, Config{MaxBytes: 4096, MaxItemSize: 1024, Shards: 1, DisableEvictions: true})
	val := make([]byte, 900)
	for i := 0; ; i++ {
		if out, _ := c.Store(Set, fmt.Appendf(nil, "k%d", i), val, 0, 10, 0); out != Stored {
			break
		}
	}
	clk.Advance(10)
	if out, _ := c.Store(Set, []byte("new"), val, 0, 0, 0); out != Stored {
		t.Fatalf("store with only expired items in the way: %v", out)
	}
}

func TestEvictionPrefersExpired(t *testing.T) {
	c, clk := newTestCache(t, Config{MaxBytes: exactBudget(10, 2, 100), MaxItemSize: 1024, Shards: 1})
	val := make([]byte, 100)
	for i := range 10 {
		var exp int64
		if i < 3 {
			exp = 5
		}
		c.Store(Set, fmt.Appendf(nil, "k%d", i), val, 0, exp, 0)
	}
	clk.Advance(5)
	c.Store(Set, []byte("new"), val, 0, 0, 0)
	st := c.Stats()
	if st.Evictions != 0 || st.Reclaimed < 1 {
		t.Fatalf("evictions %d reclaimed %d: expired items should make the room", st.Evictions, st.Reclaimed)
	}
	for i := 3; i < 10; i++ {
		if _, ok := get(c, fmt.Sprintf("k%d", i)); !ok {
			t.Fatalf("k%d evicted although expired items were available", i)
		}
	}
}

func TestInPlaceOverwrite(t *testing.T) {
	c, _ := newTestCache(t, Config{Shards: 1})
	s := &c.shards[0]
	first := func() *byte {
		s.mu.Lock()
		defer s.mu.Unlock()
		for p := range s.pages {
			for i := range s.pages[p].carved {
				if r := s.liveAt(handle(p, i)); r != nil {
					return &r[0]
				}
			}
		}
		return nil
	}
	set(t, c, "k", "hello world")
	before := first()
	set(t, c, "k", "jello")
	c.Store(Append, []byte("k"), []byte("!"), 0, 0, 0)
	c.Store(Prepend, []byte("k"), []byte(">"), 0, 0, 0)
	wantValue(t, c, "k", ">jello!")
	if first() != before {
		t.Fatal("overwrite within the size class reallocated the record")
	}
	set(t, c, "k", string(make([]byte, 4096)))
	set(t, c, "k", "small") // must not keep a 4 KiB record for 6 bytes
	s.mu.Lock()
	charge := s.recBytes
	s.mu.Unlock()
	if charge > 64 {
		t.Fatalf("small value charges %d bytes", charge)
	}
	checkInvariants(t, c)
}

// TestSetMemoryLimit: cache_memlimit's cache side. Shrinking evicts down to the new budget at
// once and keeps the bound afterwards; growing lets the cache hold more; a limit below one item
// of the maximum size per shard is refused.
func TestSetMemoryLimit(t *testing.T) {
	c, _ := newTestCache(t, Config{MaxBytes: 8 << 20, MaxItemSize: 1024, Shards: 4})
	val := make([]byte, 200)
	fill := func(n int) {
		for i := range n {
			c.Store(Set, fmt.Appendf(nil, "k%d", i), val, 0, 0, 0)
		}
	}
	fill(60_000)
	full := c.Stats().CurrItems
	if err := c.SetMemoryLimit(2 << 20); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Used > 2<<20 || st.LimitMaxbytes != 2<<20 || st.CurrItems >= full {
		t.Fatalf("after shrinking to 2 MiB: used %d, limit %d, items %d (were %d)", st.Used, st.LimitMaxbytes, st.CurrItems, full)
	}
	fill(60_000)
	checkInvariants(t, c)
	if err := c.SetMemoryLimit(16 << 20); err != nil {
		t.Fatal(err)
	}
	fill(60_000)
	if st := c.Stats(); st.CurrItems <= full || st.Used > 16<<20 {
		t.Fatalf("after growing to 16 MiB: items %d (were %d at 8 MiB), used %d", st.CurrItems, full, st.Used)
	}
	checkInvariants(t, c)
	if err := c.SetMemoryLimit(3 * 1024); !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("a limit below an item per shard: %v", err)
	}
}

// TestVariableSizesFillMemory stores far more items of random sizes than fit, as memcslap's
// load does (100-byte keys, values of 0 to 4.5 KB), and checks that live records fill most of
// the budget. Every shard has ~90 size classes in use here; with a first page of 16 chunks
// per class (32 KiB at these sizes) half the budget was pages carved by no record, and
// tandem held 12k items where memcached held 28k (docs/benchmarks-appendix.md, 12b).
func TestVariableSizesFillMemory(t *testing.T) {
	for _, tc := range []struct {
		maxBytes   int64
		maxV, keys int
	}{
		{64 << 20, 4500, 100_000},
		{16 << 20, 4500, 40_000},
		{16 << 20, 500, 200_000},
	} {
		t.Run(fmt.Sprintf("m=%dMiB/v<=%d", tc.maxBytes>>20, tc.maxV), func(t *testing.T) {
			c, _ := newTestCache(t, Config{MaxBytes: tc.maxBytes})
			rng := rand.New(rand.NewPCG(1, 2))
			key, val := make([]byte, 100), make([]byte, tc.maxV)
			for i := range tc.keys {
				copy(key, fmt.Sprintf("%0100d", i))
				if out, _ := c.Store(Set, key, val[:rng.IntN(tc.maxV+1)], 0, 0, 0); out != Stored {
					t.Fatalf("set %d: %v", i, out)
				}
			}
			var rec int64
			for i := range c.shards {
				rec += c.shards[i].recBytes
			}
			share := float64(rec) / float64(tc.maxBytes)
			t.Logf("live records fill %.1f%% of -m (%d items)", 100*share, c.Stats().CurrItems)
			if share < 0.8 {
				t.Errorf("live records fill %.0f%% of -m (%d items), want at least 80%%", 100*share, c.Stats().CurrItems)
			}
			checkInvariants(t, c)
		})
	}
}

// TestNeighbouringClassesFreeChunks: with keys of varying length, one value size falls into
// neighbouring size classes, and the policy evicts from either while new records need one: free
// chunks of the other pile up until a page of that class is released by moving its records into
// them (sparePageLocked). The look must start once they add up to a page as pages are now (up to
// growPage), not to maxPage: with 256-KiB maxPage and 64-KiB pages that held ~200 KB of free
// chunks per 16-MiB shard (1.2% of the items of the OLTP trace at 1,000 B).
func TestNeighbouringClassesFreeChunks(t *testing.T) {
	c, _ := newTestCache(t, Config{MaxBytes: 16 << 20, Shards: 1})
	s := &c.shards[0]
	if s.cfg.maxPage <= growPage {
		t.Fatalf("maxPage %d: the case needs pages smaller than maxPage", s.cfg.maxPage)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	key, val := make([]byte, 40), make([]byte, 1000)
	peak := int64(0)
	for i := range 200_000 {
		k := fmt.Appendf(key[:0], "%d-%s", rng.IntN(1_000_000), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"[:rng.IntN(37)])
		if out, _ := c.Store(Set, k, val, 0, 0, 0); out != Stored {
			t.Fatalf("set %d: %v", i, out)
		}
		if i > 100_000 {
			peak = max(peak, s.freeBytes)
		}
	}
	t.Logf("free chunks: %d bytes at the end, %d at most after the fill (%d items)", s.freeBytes, peak, c.Stats().CurrItems)
	if peak > 2*growPage {
		t.Errorf("free chunks reached %d bytes, want at most %d (two pages)", peak, 2*growPage)
	}
	checkInvariants(t, c)
}

// TestNextPageTail: a mapped page of growPage or more is a whole number of OS pages between half
// and twice the doubling's size (at most maxPage), and leaves no larger a share of itself too
// short for a chunk than that size would: at 1,032 and 1,064 B, OLTP's two classes at 1,000-B
// values, 64 KiB left 520 and 632 B (0.9% of the items).
func TestNextPageTail(t *testing.T) {
	c, _ := newTestCache(t, Config{MaxBytes: 16 << 20, Shards: 1})
	s := &c.shards[0]
	worst := 0.0
	for cl, size := range slabSizes {
		s.slab[cl].pages = 20
		n := s.roundMem(min(size<<21, max(growPage, 4*size), s.cfg.maxPage))
		got := s.nextPage(cl)
		s.slab[cl].pages = 0
		if n < growPage {
			if got != n {
				t.Errorf("class %d (%d B): page %d, want %d", cl, size, got, n)
			}
			continue
		}
		if got%osPage != 0 || got < n/2 || got > min(2*n, s.cfg.maxPage) {
			t.Errorf("class %d (%d B): page %d, want OS pages in [%d, %d]", cl, size, got, n/2, min(2*n, s.cfg.maxPage))
		}
		share := float64(got%size) / float64(got)
		if before := float64(n%size) / float64(n); share > before {
			t.Errorf("class %d (%d B): page %d leaves %.2f%%, %d left %.2f%%", cl, size, got, 100*share, n, 100*before)
		}
		worst = max(worst, share)
	}
	t.Logf("largest tail: %.2f%% of a page", 100*worst)
	for _, size := range []int{1032, 1064} {
		if cl := int(classOf[size/8]); slabSizes[cl] == size {
			s.slab[cl].pages = 20
			if p := s.nextPage(cl); p%size > size/8 {
				t.Errorf("%d-B chunks: page %d leaves %d B", size, p, p%size)
			}
			s.slab[cl].pages = 0
		}
	}
}

// TestMemoryAccounting runs a random program of stores (small, slab-sized and large records),
// appends, deletes, expiries and flushes that fills memory many times over, and checks after
// every operation that Used equals what the shards really hold and stays within the budget
// (checkMemory), and at every eviction that no shard is over its budget. A charge that leaves
// out a part (the window queue, say) or a page allocated past the budget fails here by
// assertion.
func TestMemoryAccounting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxBytes int64
		shards   int
		file     bool
	}{
		{"one shard", 512 << 10, 1, false},
		{"four shards", 1 << 20, 4, false},
		{"memory file", 512 << 10, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{MaxBytes: tc.maxBytes, MaxItemSize: 64 << 10, Shards: tc.shards}
			if tc.file {
				cfg.MemoryFile = memFilePath(t)
			}
			// An eviction happens inside a store, under the shard's lock, on this goroutine: a
			// page taken past the budget shows here, before the store makes room again.
			var c *Cache
			cfg.OnEvict = func(*Item) {
				for i := range c.shards {
					if s := &c.shards[i]; s.used() > s.budget {
						t.Fatalf("evicting with shard %d over its budget: used %d of %d (pages %d, index %d, window queue %d, main space %d)", i, s.used(), s.budget, s.pageBytes, s.idx.bytes(), s.win.bytes(), s.mainBytes)
					}
				}
			}
			c, clk := newTestCache(t, cfg)
			rng := rand.New(rand.NewPCG(5, 6))
			buf := make([]byte, 64<<10)
			ops := 20_000
			if raceEnabled || testing.Short() {
				ops = 5_000
			}
			for range ops {
				key := fmt.Appendf(nil, "k%d", rng.IntN(3000))
				n := rng.IntN(300) // mostly small values
				switch rng.IntN(20) {
				case 0:
					n = rng.IntN(64<<10 - 100) // up to large records
				case 1, 2:
					n = rng.IntN(4 << 10)
				}
				var exp int64
				if rng.IntN(10) == 0 {
					exp = int64(1 + rng.IntN(3))
				}
				switch op := rng.IntN(1000); {
				case op < 750:
					c.Store(Set, key, buf[:n], 0, exp, 0)
				case op < 800:
					c.Store(Append, key, buf[:rng.IntN(200)], 0, 0, 0)
				case op < 850:
					c.Delete(key)
				case op < 990:
					get(c, string(key))
				case op < 999:
					clk.Advance(1)
				default:
					c.FlushAll(0)
				}
				checkMemory(t, c)
			}
			checkInvariants(t, c)
			st := c.Stats()
			t.Logf("used %d of %d, items %d, evictions %d (by pages %d), rebuilds %d", st.Used, tc.maxBytes,
				st.CurrItems, st.Evictions, st.ByteEvictions, st.Rebuilds)
			if st.Evictions == 0 {
				t.Errorf("no eviction: the program should fill the memory")
			}
		})
	}
}

// TestMemoryHeapUsed checks HeapUsed: the charge less the mapped pages, so that small records
// in mapped slab pages add nothing to it and a large record (a heap page of its own) adds its
// size.
func TestMemoryHeapUsed(t *testing.T) {
	c, _ := newTestCache(t, Config{MaxBytes: 8 << 20, MaxItemSize: 256 << 10, Shards: 1})
	s := &c.shards[0]
	if got, want := c.HeapUsed(), int64(c.Stats().Used); got != want {
		t.Fatalf("empty cache: HeapUsed %d, want Used %d (no page yet)", got, want)
	}
	val := make([]byte, 100)
	for i := range 5000 {
		c.Store(Set, fmt.Appendf(nil, "k%d", i), val, 0, 0, 0)
	}
	st := c.Stats()
	if got, want := c.HeapUsed(), int64(st.Used)-s.pageBytes+s.heapPages; got != want || got >= int64(st.Used)/2 {
		t.Fatalf("5000 small items: HeapUsed %d, want %d (Used %d, pages %d, on the heap %d)",
			got, want, st.Used, s.pageBytes, s.heapPages)
	}
	before := c.HeapUsed()
	c.Store(Set, []byte("large"), make([]byte, 200<<10), 0, 0, 0)
	if got := c.HeapUsed(); got < before+200<<10 {
		t.Fatalf("a 200 KiB record: HeapUsed %d, was %d", got, before)
	}
	checkInvariants(t, c)
}
