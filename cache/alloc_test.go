package cache

import "testing"

// TestZeroAllocs: a Get hit into a buffer with capacity, and a Store of an existing key whose
// value fits the existing buffer, do not allocate; with a memory file (whose shard hash is
// another function) neither.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	t.Run("memory", func(t *testing.T) { testZeroAllocs(t, Config{MaxBytes: 1 << 20}) })
	t.Run("memory file", func(t *testing.T) { testZeroAllocs(t, Config{MaxBytes: 1 << 20, MemoryFile: memFilePath(t)}) })
}

func testZeroAllocs(t *testing.T, cfg Config) {
	c, _ := newTestCache(t, cfg)
	key, val := []byte("some:key"), make([]byte, 100)
	c.Store(Set, key, val, 0, 0, 0)
	dst := make([]byte, 0, 256)
	var a valueAppender
	if n := testing.AllocsPerRun(1000, func() {
		var ok bool
		if dst, ok = c.Get(dst[:0], key, GetOptions{}, a); !ok {
			t.Fatal("miss")
		}
	}); n != 0 {
		t.Errorf("Get hit: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if out, _ := c.Store(Set, key, val[:90+len(dst)%10], 1, 100, 0); out != Stored {
			t.Fatal(out)
		}
	}); n != 0 {
		t.Errorf("Store existing: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		c.Arith([]byte("num"), true, 1)
		c.Touch(key, 10)
		c.Delete([]byte("missing"))
	}); n != 0 {
		t.Errorf("Arith/Touch/Delete: %v allocs, want 0", n)
	}
}

// TestEvictionHookAllocs checks that the OnEvict hook ("watch evictions") costs
// no allocation per eviction: a store of a new key and the eviction of it,
// repeated, allocate nothing with the hook as without it.
func TestEvictionHookAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var seen int
	var last string
	c, _ := newTestCache(t, Config{MaxBytes: 1 << 20, Shards: 1, OnEvict: func(it *Item) {
		seen++
		if len(it.Key) > 0 && seen == 1 {
			last = string(it.Key) // a copy: the Item is reused
		}
	}})
	s := &c.shards[0]
	key, val := []byte("evicted:key"), make([]byte, 100)
	drop := func() {
		if out, _ := c.Store(Set, key, val, 0, 0, 0); out != Stored {
			t.Fatal(out)
		}
		s.mu.Lock()
		i, r := s.lookupLocked(s.hash(key), key)
		if r == nil {
			s.mu.Unlock()
			t.Fatal("stored key not found")
		}
		s.dropLocked(i)
		s.mu.Unlock()
	}
	drop()
	if n := testing.AllocsPerRun(1000, drop); n != 0 {
		t.Errorf("store and evict with OnEvict: %v allocs, want 0", n)
	}
	if seen < 1000 || last != string(key) {
		t.Errorf("OnEvict saw %d evictions, the first of key %q; want >= 1000 of %q", seen, last, key)
	}
	if s.evicted.Key != nil || s.evicted.Value != nil {
		t.Error("the reused Item still points into a chunk after the hook")
	}
}
