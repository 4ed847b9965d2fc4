package cache

import "github.com/dgryski/go-tinylfu"

// Sizing of each shard's tinylfu. Its capacity is an item count while the budget is in bytes, so
// the capacity follows the byte budget divided by the mean cost of live items: then tinylfu's
// admission and eviction decide what stays, and byte-pressure evictions from the list tail only
// absorb the variance. tinylfu has no resize, so a change of capacity rebuilds the index from the
// list. Between two rebuilds there are at least a fifth of the capacity in new entries or stores
// (except with evictions disabled and a budget full of minimal items), so the O(capacity)
// rebuild cost is amortized O(1) per store.
//
// What an index costs depends on its capacity, not on what it holds: tinylfu.New presizes a Go
// map for it and sizes its sketch and doorkeeper from it, each rounded up to a power of two.
// While the budget has room (the index grows rather than evicts), capacities are therefore
// 7 x 2^k (see fitCapacity), the sizes at which none of the three wastes the rounding, and grow
// 2x at a time (1.5x-3x from a capacity the budget set), so an early skew cannot over-allocate:
// the index then costs 35 bytes per capacity slot, 35-70 bytes per item.
const (
	minCapacity     = 16  // smallest index; tinylfu needs a few slots for its segments
	initialCapacity = 896 // 7 x 2^7: start small, grow
	// samplesPerEntry is tinylfu's sample size (Gets between counter halvings) per capacity
	// slot. The TinyLFU paper uses 8-16; 7 x 2^k slots at 7 samples each fill the doorkeeper's
	// power-of-two bit vector to 92% at its 1% false-positive rate, where 10 would double it.
	samplesPerEntry = 7
	fillNum         = 31 // the capacity targets fillNum/fillDen of the budget, leaving slack
	fillDen         = 32 // for size variance so that tinylfu, not the list, mostly evicts
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

// newIndexLocked replaces the index with an empty one of the given capacity. Tombstones of the
// old index are dropped with it; live items must be re-added by the caller.
func (s *shard) newIndexLocked(capacity int) {
	capacity = max(capacity, minCapacity)
	s.index = tinylfu.New[uint64, *item](capacity, samplesPerEntry*capacity, identity,
		tinylfu.OnEvict[uint64, *item](s.onEvict),
		tinylfu.OnReplace[uint64, *item](s.onReplace))
	s.capacity = capacity
	s.entries, s.tombs, s.writes, s.pressure = 0, 0, 0, 0
}

// targetCapacity is the item count that fills fillNum/fillDen of the budget at the mean cost of
// the live items plus, if extra > 0, one more item costing extra.
func (s *shard) targetCapacity(extra int64) int {
	n, b := int64(s.lru.n), s.bytes
	if extra > 0 {
		n, b = n+1, b+extra
	}
	if n == 0 {
		return s.capacity
	}
	mean := max(b/n, ItemOverhead+1)
	t := s.cfg.budget / fillDen * fillNum / mean
	return int(min(max(t, minCapacity), int64(s.cfg.maxCap)))
}

// beforeInsertLocked runs before a new entry is added to the index. When the index is full,
// tinylfu would evict; it rebuilds first if live items fill at least half of it and the byte
// budget has room for clearly more (grow), if tombstones fill a quarter of it (purge), or, with
// evictions disabled, whenever it can, since then only a full byte budget may refuse a store.
func (s *shard) beforeInsertLocked(cost int64) {
	if s.entries < s.capacity {
		return
	}
	target := s.targetCapacity(cost)
	c := s.capacity
	switch {
	case s.cfg.disableEvictions:
		switch {
		case s.tombs >= c/4:
			s.rebuildLocked(c)
		case c < s.cfg.maxCap:
			s.rebuildLocked(min(2*c, s.cfg.maxCap))
		case s.tombs > 0:
			// Only reachable when the budget is full of minimal items; not amortized, but a
			// live item must not be evicted.
			s.rebuildLocked(c)
		}
	case target >= c+c/4 && s.lru.n >= c/2:
		grow := fitCapacity(c + c/2)
		if target < grow+grow/4 {
			grow = target // the budget's capacity is near: take it now, it would not grow again
		}
		s.rebuildLocked(min(grow, s.cfg.maxCap))
	case s.tombs >= c/4:
		if target <= c*4/5 {
			c = target
		}
		s.rebuildLocked(c)
	}
}

// maintainLocked runs after every store: it advances the expiry sweep and, when byte-pressure
// evictions keep happening (an eighth of the capacity since the last rebuild) while the index
// holds over 3% more items than the budget fits at the current mean cost, shrinks the index so
// that tinylfu, not the list, does the evicting again.
func (s *shard) maintainLocked() {
	s.writes++
	s.sweepLocked()
	c := s.capacity
	if s.pressure < c/8 || s.writes < c/4 {
		return
	}
	if target := s.targetCapacity(0); target < c-c/32 {
		s.rebuildLocked(target)
	}
}

// rebuildLocked replaces the index with one of the given capacity holding exactly the live
// items, re-added from the cold end so recency order carries over. Live items beyond the
// capacity are evicted from the cold end first, so the fresh index admits every one of them.
// Frequency history is lost; tombstones are dropped.
func (s *shard) rebuildLocked(capacity int) {
	capacity = max(capacity, minCapacity)
	for s.lru.n > capacity {
		s.evictLocked(s.lru.tail)
	}
	s.newIndexLocked(capacity)
	s.st.Rebuilds++
	for it := s.lru.tail; it != nil; {
		prev := it.prev
		s.index.Add(s.hash(it.key()), it)
		s.entries++
		it = prev
	}
}
