package cache

import (
	"fmt"
	"sort"
	"testing"
)

// walkAll walks the cache from cur in steps of step slots and returns the keys seen, sorted,
// and the number of Walk calls.
func walkAll(c *Cache, cur Cursor, step int) ([]string, int) {
	var keys []string
	calls := 0
	for !cur.Done() {
		n := 0
		cur = c.Walk(cur, step, func(_ int, it *Item) { keys = append(keys, string(it.Key)); n++ })
		if n > step {
			panic(fmt.Sprintf("a walk of %d slots visited %d items", step, n))
		}
		calls++
	}
	sort.Strings(keys)
	return keys, calls
}

// TestWalkVisitsEveryLiveItemOnce: a walk in small steps sees each live item exactly once,
// skips expired and deleted ones, changes nothing and reports the item's metadata.
func TestWalkVisitsEveryLiveItemOnce(t *testing.T) {
	c, clk := newTestCache(t, Config{Shards: 4})
	var want []string
	for i := range 500 {
		k := fmt.Sprintf("k%03d", i)
		switch i % 5 {
		case 0:
			c.Store(Set, []byte(k), []byte("v"), 0, 10, 0) // expires below
		case 1:
			set(t, c, k, "v")
			c.Delete([]byte(k))
		default:
			set(t, c, k, "value")
			want = append(want, k)
		}
	}
	get(c, "k002")
	clk.Advance(10)
	before := c.Stats()
	got, calls := walkAll(c, Cursor{}, 7)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("walk saw %d keys, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	if calls < len(want)/7 {
		t.Errorf("%d calls for %d items in steps of 7: the step is not a bound", calls, len(want))
	}
	if after := c.Stats(); after != before {
		t.Errorf("Walk changed the stats:\n got %+v\nwant %+v", after, before)
	}
	c.Walk(Cursor{}, 1<<20, func(class int, it *Item) {
		if string(it.Key) != "k002" {
			return
		}
		if !it.Fetched || it.LastAccess != t0 || it.Exptime != 0 || string(it.Value) != "value" || it.CAS == 0 || it.Now != t0+10 {
			t.Errorf("k002: %+v", it)
		}
		if class < 1 || class > c.Shards() {
			t.Errorf("class %d out of 1..%d", class, c.Shards())
		}
	})
}

// TestWalkKeyBinary: a walk tells which items were stored with a base64 key (stats cachedump
// leaves them out).
func TestWalkKeyBinary(t *testing.T) {
	c, _ := newTestCache(t, Config{Shards: 4})
	set(t, c, "text", "v")
	if o, _ := c.MetaStore(Set, []byte("\x00bin"), []byte("v"), 0, 0, 0, MetaStoreOptions{KeyBinary: true}); o != Stored {
		t.Fatalf("MetaStore: %v", o)
	}
	seen := 0
	c.Walk(Cursor{}, 1<<20, func(_ int, it *Item) {
		seen++
		if it.KeyBinary != (string(it.Key) == "\x00bin") {
			t.Errorf("%q: KeyBinary %v", it.Key, it.KeyBinary)
		}
	})
	if seen != 2 {
		t.Fatalf("walk saw %d items, want 2", seen)
	}
}

// TestClassCursor: walks over each class partition the items; classes out of range are empty.
func TestClassCursor(t *testing.T) {
	c, _ := newTestCache(t, Config{Shards: 4})
	for i := range 100 {
		set(t, c, fmt.Sprint("k", i), "v")
	}
	total := 0
	for class := 1; class <= c.Shards(); class++ {
		keys, _ := walkAll(c, c.ClassCursor(class), 3)
		c.Walk(c.ClassCursor(class), 1<<20, func(got int, _ *Item) {
			if got != class {
				t.Errorf("class cursor %d visited an item of class %d", class, got)
			}
		})
		total += len(keys)
	}
	if total != 100 {
		t.Fatalf("classes hold %d items, want 100", total)
	}
	for _, class := range []int{0, -1, c.Shards() + 1} {
		if keys, _ := walkAll(c, c.ClassCursor(class), 10); len(keys) != 0 {
			t.Errorf("class %d: %d items", class, len(keys))
		}
	}
}

// TestMaintainReclaimsWithoutTraffic: expired items go with no request at all, in bounded
// steps, as memcached's LRU crawler reclaims them.
func TestMaintainReclaimsWithoutTraffic(t *testing.T) {
	c, clk := newTestCache(t, Config{Shards: 8})
	var keep uint64
	for i := range 5000 {
		key, exp := fmt.Appendf(nil, "k%d", i), int64(1+i%2)
		if i%10 == 0 {
			exp, keep = 0, keep+uint64(len(key)+100+ItemOverhead)
		}
		c.Store(Set, key, make([]byte, 100), 0, exp, 0)
	}
	clk.Advance(2)
	if n := c.Maintain(100); n > 100 {
		t.Fatalf("Maintain(100) reclaimed %d items", n)
	}
	for range 100 {
		c.Maintain(100)
	}
	st := c.Stats()
	if st.CurrItems != 500 || st.Bytes != keep || st.Reclaimed != 4500 || st.ExpiredUnfetched != 4500 {
		t.Fatalf("after the sweep: items %d bytes %d reclaimed %d expired_unfetched %d", st.CurrItems, st.Bytes, st.Reclaimed, st.ExpiredUnfetched)
	}
	if n := c.Maintain(1 << 20); n != 0 {
		t.Fatalf("a second pass reclaimed %d", n)
	}
	checkInvariants(t, c)
}
