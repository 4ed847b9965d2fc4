package cache

import (
	"bytes"
	"hash/maphash"
	"sync"

	"github.com/dgryski/go-tinylfu"
)

// shard is one lock domain of the cache: a tinylfu index (admission and count-based eviction,
// keyed by the key's 64-bit hash), an intrusive list of live items (byte-pressure eviction,
// expiry sweep, rebuilds) and exact byte accounting. Invariants, with mu held between operations:
// every live item is both linked in lru and in index; tombstones are only in index;
// entries == live + tombs; bytes == sum of live costs <= budget.
type shard struct {
	mu sync.Mutex

	// All fields below are guarded by mu.
	index    *tinylfu.T[uint64, *item]
	lru      list
	bytes    int64 // key+value+ItemOverhead of live items
	entries  int   // index entries: live items plus tombstones
	tombs    int   // tombstones in index
	capacity int   // index capacity (an item count)
	writes   int   // stores since the last rebuild
	pressure int   // byte-pressure evictions of live items since the last rebuild
	st       Stats // counters (only the counter fields are used)

	// State of the operation in progress, set by begin.
	now   int64
	flush *flushState

	cfg *shardConfig // read-only, shared by all shards

	_ [64]byte // keep the next shard's mutex off this shard's cache lines
}

// shardConfig holds the read-only settings every shard uses.
type shardConfig struct {
	seed             maphash.Seed
	budget           int64 // bytes per shard
	maxItem          int64 // largest item cost
	maxCap           int   // largest index capacity: the budget filled with minimal items
	disableEvictions bool
}

func (s *shard) init(cfg *shardConfig) {
	s.cfg = cfg
	s.newIndexLocked(min(initialCapacity, cfg.maxCap))
}

// begin records the time and flush settings of the operation about to run under mu.
func (s *shard) begin(now int64, fl *flushState) {
	s.now, s.flush = now, fl
}

func (s *shard) hash(key []byte) uint64 { return maphash.Bytes(s.cfg.seed, key) }

// findLocked looks key up. slot is the index entry for the key's hash (the live item, a
// tombstone, or a colliding key's item) or nil; it is the valid live item for key or nil. An
// expired or flushed item found for key is turned into a tombstone and counted, as memcached's
// do_item_get does for every command.
func (s *shard) findLocked(h uint64, key []byte) (slot, it *item) {
	slot, ok := s.index.Get(h)
	if !ok {
		return nil, nil
	}
	if !slot.live() || !bytes.Equal(slot.key(), key) {
		return slot, nil
	}
	switch {
	case slot.expired(s.now):
		s.st.GetExpired++
		s.killLocked(slot)
		return slot, nil
	case s.flush.flushed(slot, s.now):
		s.st.GetFlushed++
		s.killLocked(slot)
		return slot, nil
	}
	return slot, slot
}

// touchLocked records a read access: the item is fetched, accessed now and most recently used.
func (s *shard) touchLocked(it *item) {
	it.state |= stFetched
	it.atime = atime32(s.now)
	s.lru.moveToFront(it)
}

// invalidLocked reports whether a live item is expired or flushed.
func (s *shard) invalidLocked(it *item) bool {
	return it.expired(s.now) || s.flush.flushed(it, s.now)
}

// killLocked turns a live item into a tombstone: unlinked, uncounted, buffer dropped, but still
// in the index so tinylfu keeps its history and can evict the entry later.
func (s *shard) killLocked(it *item) {
	s.lru.remove(it)
	s.bytes -= it.cost()
	it.buf = nil
	it.state = 0
	s.tombs++
}

// countGoneLocked counts an item the cache drops without being asked to: a reclaim when it was
// expired or flushed anyway, an eviction otherwise (memcached's lru_pull_tail does the same).
func (s *shard) countGoneLocked(it *item) {
	fetched := it.state&stFetched != 0
	if s.invalidLocked(it) {
		s.st.Reclaimed++
		if !fetched {
			s.st.ExpiredUnfetched++
		}
		return
	}
	s.st.Evictions++
	if !fetched {
		s.st.EvictedUnfetched++
	}
}

// evictLocked drops a live item to make room and counts it.
func (s *shard) evictLocked(it *item) {
	s.countGoneLocked(it)
	s.killLocked(it)
}

// onEvict is tinylfu's eviction callback; it runs inside index.Add, under mu. The entry has left
// the index: a tombstone just disappears, a live item is dropped and counted.
func (s *shard) onEvict(_ uint64, it *item) {
	s.entries--
	if !it.live() {
		s.tombs--
		return
	}
	s.countGoneLocked(it)
	s.lru.remove(it)
	s.bytes -= it.cost()
	it.buf = nil
	it.state = 0
}

// onReplace is tinylfu's replacement callback. The shard never adds a key that is already in the
// index (it revives the existing entry instead), so this only keeps the accounting right should
// that ever change.
func (s *shard) onReplace(_ uint64, old *item) {
	if !old.live() {
		s.tombs--
		return
	}
	s.lru.remove(old)
	s.bytes -= old.cost()
	old.buf = nil
	old.state = 0
}

// tailScan is how many items at the cold end makeRoomLocked checks for expired ones before it
// evicts (memcached's lru_pull_tail looks at 5).
const tailScan = 5

// makeRoomLocked frees bytes until need more fit in the budget: first expired or flushed items
// near the cold end, then (unless evictions are disabled) live items from the cold end. keep is
// never removed. It reports whether the room was made.
func (s *shard) makeRoomLocked(need int64, keep *item) bool {
	if s.bytes+need <= s.cfg.budget {
		return true
	}
	it := s.lru.tail
	for n := 0; n < tailScan && it != nil && s.bytes+need > s.cfg.budget; n++ {
		prev := it.prev
		if it != keep && s.invalidLocked(it) {
			s.reclaimLocked(it)
		}
		it = prev
	}
	if s.bytes+need <= s.cfg.budget {
		return true
	}
	if s.cfg.disableEvictions {
		return false
	}
	for s.bytes+need > s.cfg.budget {
		victim := s.lru.tail
		if victim == keep {
			victim = victim.prev
		}
		if victim == nil {
			return false
		}
		s.evictLocked(victim)
		s.pressure++
		s.st.ByteEvictions++
	}
	return true
}

// reclaimLocked drops an expired or flushed item found by a scan and counts it.
func (s *shard) reclaimLocked(it *item) {
	s.st.Reclaimed++
	if it.state&stFetched == 0 {
		s.st.ExpiredUnfetched++
	}
	s.killLocked(it)
}

// sweepPerStore is how many items each store examines for expiry, so expired memory comes back
// within about live/sweepPerStore stores even for keys nobody asks for again.
const sweepPerStore = 2

// sweepLocked advances the expiry sweep by a bounded number of items.
func (s *shard) sweepLocked() {
	for range sweepPerStore {
		it := s.lru.sweepNext()
		if it == nil {
			return
		}
		if s.invalidLocked(it) {
			s.reclaimLocked(it)
		}
	}
}

// purgeFlushedLocked drops every flushed item (after a flush_all that takes effect at once).
func (s *shard) purgeFlushedLocked() {
	for it := s.lru.tail; it != nil; {
		prev := it.prev
		if s.flush.flushed(it, s.now) {
			s.killLocked(it)
		}
		it = prev
	}
}
