package cache

import "github.com/dgryski/go-tinylfu"

// Sizing of each shard's tinylfu, whose capacity is an item count: it follows the budget divided
// by the mean cost of an item, and tinylfu has no resize, so a change rebuilds the index from the
// slot table. Between two rebuilds there are at least a fifth of the capacity in new entries or
// stores (except with evictions disabled and a budget full of minimal items), so the rebuild
// cost is amortized O(1) per store. An index costs what its capacity rounded up to 7 x 2^k costs
// (see fitCapacity), so while the budget has room the index grows 2x at a time to such sizes.
const (
	minCapacity     = 16  // smallest index; tinylfu needs a few slots for its segments
	initialCapacity = 224 // 7 x 2^5: start small, grow
	// samplesPerEntry is tinylfu's sample size (Gets between counter halvings) per capacity
	// slot. The TinyLFU paper uses 8-16; 7 x 2^k slots at 7 samples each fill the doorkeeper's
	// power-of-two bit vector to 92% at its 1% false-positive rate, where 10 would double it.
	samplesPerEntry = 7
	fillNum         = 31 // the capacity targets fillNum/fillDen of the budget, leaving slack
	fillDen         = 32 // for size variance so that tinylfu, not byte pressure, mostly evicts

	// What each part of the index costs, charged against the budget (measured with
	// runtime.MemStats on go-tinylfu v0.1.0, T[uint64, uint32] at 7 samples per slot: 38.9 bytes
	// per slot of fitCapacity for the presized map, the sketch and the doorkeeper; 74.5 bytes
	// per entry for its list element and entry struct).
	indexSlotBytes = 40
	entryBytes     = 75
	slotBytes      = 8 // a slot table pointer per record
)

// fitCapacity returns the smallest capacity of the form 7 x 2^k that is at least n (and at
// least 14). A Go map presized for 7 x 2^k entries allocates exactly 8 x 2^k slots (its tables
// hold 8 slots per 7 entries and come in powers of two), tinylfu's count-min sketch has 4 x 8 x
// 2^k counters per row, and its doorkeeper at 7 samples per slot needs 92% of a power of two bits.
func fitCapacity(n int) int {
	c := 14
	for c < n {
		c *= 2
	}
	return c
}

func identity(k uint64) uint64 { return k }

// newIndexLocked replaces the index with an empty one of the given capacity. Stale entries of
// the old index are dropped with it; live items must be re-added by the caller.
func (s *shard) newIndexLocked(capacity int) {
	capacity = max(capacity, minCapacity)
	s.index = tinylfu.New[uint64, uint32](capacity, samplesPerEntry*capacity, identity,
		tinylfu.OnEvict[uint64, uint32](s.onEvict))
	s.capacity, s.indexBytes = capacity, int64(fitCapacity(capacity))*indexSlotBytes
	s.entries, s.writes, s.pressure = 0, 0, 0
}

// minItemCharge is the smallest charge of one item: an empty record, its slot, its index entry
// and an index slot.
var minItemCharge = int64(sizeClass(hdrSize+1)) + slotBytes + entryBytes + indexSlotBytes

// targetCapacity is the item count that fills fillNum/fillDen of the budget at the mean cost of
// the live items plus, if extra > 0, one more record charging extra. The index slots are
// charged at fitCapacity, which is what the index allocates for any capacity up to it.
func (s *shard) targetCapacity(extra int64) int {
	n, b := int64(s.n), s.recBytes
	if extra > 0 {
		n, b = n+1, b+extra
	}
	if n == 0 {
		return s.capacity
	}
	room, per := s.cfg.budget/fillDen*fillNum, b/n+entryBytes
	t := room / (per + indexSlotBytes)
	t = (room - int64(fitCapacity(int(t)))*indexSlotBytes) / per
	return int(min(max(t, minCapacity), int64(s.cfg.maxCap)))
}

// beforeInsertLocked runs before a new entry is added to the index. When the index is full,
// tinylfu would evict; it rebuilds first if live items fill at least half of it and the byte
// budget has room for clearly more (grow), if stale entries fill a quarter of it (purge), or,
// with evictions disabled, whenever it can, since then only a full byte budget may refuse a
// store. It reports false only with evictions disabled, when the index can neither drop a stale
// entry nor grow within the budget: the store must fail.
func (s *shard) beforeInsertLocked(charge int64) bool {
	if s.entries < s.capacity {
		return true
	}
	target := s.targetCapacity(charge)
	c := s.capacity
	stale := s.entries - s.n
	switch {
	case s.cfg.disableEvictions:
		grow, room := min(2*c, s.cfg.maxCap), s.cfg.budget-s.used()-charge-entryBytes
		switch {
		case stale < c/4 && grow > c && int64(fitCapacity(grow)-fitCapacity(c))*indexSlotBytes <= room:
			s.rebuildLocked(grow)
		case stale > 0:
			s.rebuildLocked(c)
		default:
			return false
		}
	case target >= c+c/4 && s.n >= c/2:
		grow := fitCapacity(c + c/2)
		if target < grow+grow/4 {
			grow = target // the budget's capacity is near: take it now, it would not grow again
		}
		s.rebuildLocked(min(grow, s.cfg.maxCap))
	case stale >= c/4:
		if target <= c*4/5 {
			c = target
		}
		s.rebuildLocked(c)
	}
	return true
}

// maintainLocked runs after every store: when byte-pressure evictions keep happening (an eighth
// of the capacity since the last rebuild) while the index holds over 3% more items than the
// budget fits at the current mean cost, it shrinks the index so that tinylfu, not byte pressure,
// does the evicting again.
func (s *shard) maintainLocked() {
	s.writes++
	c := s.capacity
	if s.pressure < c/8 || s.writes < c/4 {
		return
	}
	if target := s.targetCapacity(0); target < c-c/32 {
		s.rebuildLocked(target)
	}
}

// rebuildLocked replaces the index with one of the given capacity holding exactly the live
// items, re-added in slot order. Live items beyond the capacity are evicted first (the least
// recently accessed under the hand), so the fresh index admits every one of them. Frequency and
// recency history is lost; stale entries are dropped.
func (s *shard) rebuildLocked(capacity int) {
	capacity = max(capacity, minCapacity)
	for s.n > capacity {
		victim, _ := s.sampleLocked(nil)
		s.dropLocked(victim)
	}
	s.newIndexLocked(capacity)
	s.st.Rebuilds++
	for i, p := range s.slots {
		if p != nil {
			s.index.Add(s.hash(recordAt(p).key()), uint32(i))
			s.entries++
		}
	}
}
