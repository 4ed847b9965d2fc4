package cache

import (
	"bytes"
	"hash/maphash"
	"sync"
	"unsafe"

	"github.com/dgryski/go-tinylfu"
)

// shard is one lock domain of the cache (see the package comment). A stale index entry points
// at a free slot or at a slot another key reused: lookups compare the stored key, and onEvict
// only drops a record whose key hashes to the evicted entry. Invariants, with mu held between
// operations: every record in slots has an index entry pointing at its slot; entries == live
// items + stale entries; used() <= budget.
type shard struct {
	mu sync.Mutex

	// All fields below are guarded by mu.
	index      *tinylfu.T[uint64, uint32]
	slots      []*byte  // first byte of each slot's record; nil for a free slot
	free       []uint32 // free slots, reused last in first out
	n          int      // live items
	bytes      int64    // key+value+ItemOverhead of live items (the bytes statistic)
	recBytes   int64    // charge of the live records (size classes and slots)
	entries    int      // index entries: live items plus stale entries
	capacity   int      // index capacity (an item count)
	indexBytes int64    // what the index's capacity costs: fitCapacity(capacity) slots
	writes     int      // stores since the last rebuild
	pressure   int      // byte-pressure evictions since the last rebuild
	hand       int      // next slot the byte-pressure eviction scan looks at
	st         Stats    // counters (only the counter fields are used)

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
	maxItem          int64 // largest item size (key+value+ItemOverhead)
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

// used is what the shard charges against its budget: the records and their slots, tinylfu's
// entries and its capacity (map, sketch and doorkeeper are sized by capacity).
func (s *shard) used() int64 {
	return s.recBytes + int64(s.entries)*entryBytes + s.indexBytes
}

func (s *shard) record(i uint32) record { return recordAt(s.slots[i]) }

// findLocked looks key up. entry reports whether the index has an entry for the key's hash and
// i is its slot; r is the live record for key, or nil. An expired or flushed record found for
// key is dropped and counted, as memcached's do_item_get does for every command.
func (s *shard) findLocked(h uint64, key []byte) (i uint32, entry bool, r record) {
	i, entry = s.index.Get(h)
	if !entry {
		return 0, false, nil
	}
	if r = s.record(i); r == nil || !bytes.Equal(r.key(), key) {
		return i, true, nil
	}
	switch {
	case r.expired(s.now):
		s.st.GetExpired++
		s.killLocked(i)
		return i, true, nil
	case s.flush.flushed(r, s.now):
		s.st.GetFlushed++
		s.killLocked(i)
		return i, true, nil
	}
	return i, true, r
}

// touchLocked records a read access. As in memcached, the first one only
// marks the item fetched; later ones also make now its last access (memcached
// bumps an item's time once it is fetched again, not on its first fetch, so
// `me` and `mg l` after one get still show the time since the store).
func (s *shard) touchLocked(r record) {
	if st := r.state(); st&stFetched == 0 {
		r.setState(st | stFetched)
		return
	}
	r.setAtime(atime32(s.now))
}

// invalidLocked reports whether a live record is expired or flushed.
func (s *shard) invalidLocked(r record) bool {
	return r.expired(s.now) || s.flush.flushed(r, s.now)
}

// putLocked places a new record in a free slot and accounts it; the caller indexes the slot.
func (s *shard) putLocked(r record) uint32 {
	var i uint32
	if n := len(s.free); n > 0 {
		i, s.free = s.free[n-1], s.free[:n-1]
	} else {
		s.slots = append(s.slots, nil)
		i = uint32(len(s.slots) - 1)
	}
	s.slots[i] = unsafe.SliceData(r)
	s.n++
	s.bytes += r.size()
	s.recBytes += r.charge()
	return i
}

// replaceLocked makes slot i, which holds old, hold r instead (r may be old rewritten in place).
func (s *shard) replaceLocked(i uint32, old, r record) {
	s.slots[i] = unsafe.SliceData(r)
	s.bytes += r.size() - old.size()
	s.recBytes += r.charge() - old.charge()
}

// killLocked drops the live record in slot i and frees the slot. Its index entry stays, stale.
func (s *shard) killLocked(i uint32) {
	r := s.record(i)
	s.n--
	s.bytes -= r.size()
	s.recBytes -= r.charge()
	s.slots[i] = nil
	s.free = append(s.free, i)
}

// dropLocked drops the record in slot i without being asked to and counts it: a reclaim when it
// was expired or flushed anyway, an eviction otherwise (memcached's lru_pull_tail does the same).
func (s *shard) dropLocked(i uint32) {
	r := s.record(i)
	unfetched := uint64(^r.state() & stFetched) // stFetched is bit 0
	if s.invalidLocked(r) {
		s.st.Reclaimed++
		s.st.ExpiredUnfetched += unfetched
	} else {
		s.st.Evictions++
		s.st.EvictedUnfetched += unfetched
	}
	s.killLocked(i)
}

// onEvict is tinylfu's eviction callback; it runs inside index.Add, under mu. The entry has
// left the index; if its slot still holds the record it was added for (and not a record of
// another key that reused a stale entry's slot), that item is dropped and counted.
func (s *shard) onEvict(h uint64, i uint32) {
	s.entries--
	if r := s.record(i); r != nil && s.hash(r.key()) == h {
		s.dropLocked(i)
	}
}

// scanWidth is how many slots the byte-pressure eviction looks at for each victim: expired or
// flushed items among them go first, else the least recently accessed live one (memcached's
// lru_pull_tail looks at 5 items of its tail).
const scanWidth = 8

// makeRoomLocked frees records until need more bytes fit in the budget: expired or flushed
// items first, then (unless evictions are disabled) the least recently accessed of scanWidth
// live items under the hand. keep is never removed. It reports whether the room was made.
//
// This is the only eviction besides tinylfu's own: tinylfu counts items, so when the items are
// larger than the index capacity assumed, bytes run out before the count does. The policy keeps
// the capacity at what the budget holds (see policy.go), so this mostly absorbs the variance.
func (s *shard) makeRoomLocked(need int64, keep record) bool {
	for s.used()+need > s.cfg.budget {
		victim, ok := s.sampleLocked(keep)
		switch {
		case !ok:
			return false
		case s.cfg.disableEvictions && !s.invalidLocked(s.record(victim)):
			// Only expired items may go: drop them all, then give up if that is not enough.
			s.purgeLocked(keep, true)
			return s.used()+need <= s.cfg.budget
		case !s.invalidLocked(s.record(victim)):
			s.pressure++
			s.st.ByteEvictions++
		}
		s.dropLocked(victim)
	}
	return true
}

// sampleLocked moves the hand over the slots until it has seen scanWidth live records other
// than keep, and returns the slot of the first expired or flushed one, or else of the one
// accessed longest ago; false if there is no record but keep.
func (s *shard) sampleLocked(keep record) (uint32, bool) {
	var best, bestAt uint32
	seen := 0
	for tries := 0; tries < len(s.slots) && seen < scanWidth; tries++ {
		i := uint32(s.advanceHand())
		r := s.record(i)
		if r == nil || sameRecord(r, keep) {
			continue
		}
		if s.invalidLocked(r) {
			return i, true
		}
		if seen == 0 || r.atime() < bestAt {
			best, bestAt = i, r.atime()
		}
		seen++
	}
	return best, seen > 0
}

// sameRecord reports whether a and b are the same record.
func sameRecord(a, b record) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// advanceHand returns the hand's slot and moves it on, wrapping at the end of the table.
func (s *shard) advanceHand() int {
	if s.hand >= len(s.slots) {
		s.hand = 0
	}
	s.hand++
	return s.hand - 1
}

// purgeLocked drops every expired or flushed record but keep, counted as reclaims when count
// is set (an immediate flush_all frees its items uncounted).
func (s *shard) purgeLocked(keep record, count bool) {
	for i, p := range s.slots {
		if r := recordAt(p); r != nil && !sameRecord(r, keep) && s.invalidLocked(r) {
			if count {
				s.dropLocked(uint32(i))
			} else {
				s.killLocked(uint32(i))
			}
		}
	}
}
