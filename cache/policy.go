package cache

import (
	"math"
	"math/bits"

	"github.com/dgryski/go-tinylfu"
)

// Sizing of each shard's tinylfu (beforeInsertLocked grows it, maintainLocked shrinks it). It
// has no resize, so a change rebuilds the index from the pages; between two rebuilds there are at
// least a quarter of the capacity in new entries or stores, so the cost is amortized O(1) per
// store. The index is charged at full capacity (see Memory bound), so an Add never needs room.
const (
	minCapacity     = 16  // smallest index; tinylfu needs a few slots for its segments
	initialCapacity = 256 // powers of two use every counter of the count-min sketch
	fillNum         = 31  // the capacity targets fillNum/fillDen of the budget, leaving slack
	fillDen         = 32  // for size variance so that tinylfu, not byte pressure, mostly evicts
	entryBytes      = 64  // go-tinylfu's list element and entry, 32 bytes each, per entry
)

// samples is tinylfu's sample size (Gets between counter halvings) for a capacity: 6.5 per slot
// (the TinyLFU paper uses 8-16) fills the doorkeeper's power-of-two bit vector (9.59 bits per
// sample at 1% false positives) to 97% at a power-of-two capacity, where 7 would double it.
func samples(capacity int) int { return capacity * 13 / 2 }

// indexCharge is what an index of the given capacity costs in the heap when full, as go-tinylfu
// v0.1.0 allocates it on Go's swiss-table maps: the map presized for capacity entries (groups of
// 8 slots of 16 bytes and 8 control bytes, in tables of up to 1024 slots; both the table count
// and the slots per table are powers of two, each table one allocation), the count-min sketch
// (4 rows of the next power of two of 4 x capacity 4-bit counters), the doorkeeper and the
// entries. TestIndexCharge checks it against runtime.MemStats.
func indexCharge(capacity int) int64 {
	hint := capacity * 8 / 7
	tables := pow2((hint + 1023) / 1024)
	groups := max(pow2(hint/tables), 8) / 8
	sketch := 2 * pow2(4*capacity)
	door := max(pow2(int(float64(samples(capacity))*-math.Log(0.01)/(math.Ln2*math.Ln2))), 1024) / 8
	return int64(tables*(sizeClass(groups*136)+56) + sketch + door + capacity*entryBytes + 560)
}

// pow2 returns the smallest power of two >= n (1 for n <= 1).
func pow2(n int) int { return 1 << bits.Len(uint(max(n, 1)-1)) }

// newIndexLocked replaces the index with an empty one of the given capacity. Stale entries of
// the old index are dropped with it; live items must be re-added by the caller.
func (s *shard) newIndexLocked(capacity int) {
	capacity = max(capacity, minCapacity)
	s.index = tinylfu.New[uint64, uint32](capacity, samples(capacity),
		func(h uint64) uint64 { return h }, tinylfu.OnEvict[uint64, uint32](s.onEvict))
	s.capacity, s.indexBytes = capacity, indexCharge(capacity)
	s.entries, s.writes, s.pressure = 0, 0, 0
}

// fitCapacity returns about the largest capacity (at least minCapacity) whose index, with as
// many records of per bytes, fits in room.
func fitCapacity(room, per int64) int {
	t := int(room / (per + entryBytes + 40))
	for t > minCapacity && indexCharge(t)+int64(t)*per > room {
		t -= t/16 + 1
	}
	return max(t, minCapacity)
}

// targetCapacity is the largest item count whose index and records, at the live items' mean
// chunk size, fill fillNum/fillDen of the budget.
func (s *shard) targetCapacity() int {
	if s.n == 0 {
		return s.capacity
	}
	return min(fitCapacity(s.cfg.budget/fillDen*fillNum, s.recBytes/int64(s.n)), s.cfg.maxCap)
}

// beforeInsertLocked runs before a new entry is added to a full index, where tinylfu would
// evict: it grows the index when live items fill half of it and the budget has room, and purges
// stale entries once they fill a quarter of it, or with evictions disabled any (only a full byte
// budget may refuse a store then). It reports false, the store must fail, when evictions are
// disabled and the index can neither drop a stale entry nor grow within the budget.
func (s *shard) beforeInsertLocked() bool {
	c := s.capacity
	if s.entries < c {
		return true
	}
	stale := s.entries - s.n
	grow := min(2*c, s.targetCapacity())
	switch {
	case grow > c+c/16 && s.n >= c/2 && s.used()+indexCharge(grow)-s.indexBytes <= s.cfg.budget:
		s.rebuildLocked(grow)
	case stale >= c/4 || (s.cfg.disableEvictions && stale > 0):
		s.rebuildLocked(c)
	case s.cfg.disableEvictions:
		return false
	}
	return true
}

// maintainLocked runs after every store: when byte-pressure evictions keep happening (an eighth
// of the capacity since the last rebuild) while the index holds over 3% more items than the
// budget fits at the current mean chunk size, it shrinks the index so that tinylfu, not byte
// pressure, does the evicting again.
func (s *shard) maintainLocked() {
	s.writes++
	c := s.capacity
	if s.pressure < c/8 || s.writes < c/4 {
		return
	}
	if target := s.targetCapacity(); target < c-c/32 {
		s.rebuildLocked(target)
	}
	s.writes, s.pressure = 0, 0
}

// rebuildLocked replaces the index with one of the given capacity holding exactly the live
// items, re-added in page order. Live items beyond the capacity are evicted first (the least
// recently accessed under the hand), so the fresh index admits every one of them. Frequency and
// recency history is lost; stale entries are dropped.
func (s *shard) rebuildLocked(capacity int) {
	for s.n > capacity {
		victim, _ := s.sampleLocked(anyClass, noHandle)
		s.dropLocked(victim, false)
	}
	s.newIndexLocked(capacity)
	s.st.Rebuilds++
	for h, r := range s.records {
		s.index.Add(s.hash(r.key()), h)
		s.entries++
	}
}
