package cache

// ShardStats is a snapshot of one shard, for per-shard reports such as "stats items" and
// "stats slabs" (tandem has shards where memcached has slab classes). Counters holds the shard's
// own counters (only the counter fields of Stats are set; CmdFlush, the gauges and the
// tandem-specific gauges are zero there and reported in the fields below instead).
type ShardStats struct {
	Shard int // index, 0-based

	Items         uint64 // live items
	Bytes         uint64 // key+value+ItemOverhead of live items
	Used          uint64 // bytes charged against the budget: records, slots and the index
	Budget        uint64 // the shard's byte budget (MaxBytes / shards)
	IndexCapacity uint64 // tinylfu capacity (items)
	IndexEntries  uint64 // tinylfu entries: live items plus stale entries
	Tombstones    uint64 // stale entries: deleted, expired or evicted items still in tinylfu

	// Age is how many seconds ago the least recently used live item was last accessed, by the
	// cache clock (memcached's items:N:age); 0 for an empty shard. Finding it reads every
	// record of the shard.
	Age int64

	Counters Stats
}

// ShardStats appends a snapshot of every shard to dst, in shard order, and returns it. Each
// shard's lock is taken briefly, one at a time, so the snapshot is consistent per shard only.
// It does not allocate when dst has room for every shard (see Shards).
func (c *Cache) ShardStats(dst []ShardStats) []ShardStats {
	now := c.clock.Now()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		ss := ShardStats{
			Shard:         i,
			Items:         uint64(s.n),
			Bytes:         uint64(s.bytes),
			Used:          uint64(s.used()),
			Budget:        uint64(s.cfg.budget),
			IndexCapacity: uint64(s.capacity),
			IndexEntries:  uint64(s.entries),
			Tombstones:    uint64(s.entries - s.n),
			Counters:      s.st,
		}
		if oldest, ok := s.oldestLocked(); ok {
			ss.Age = max(now-oldest, 0)
		}
		s.mu.Unlock()
		dst = append(dst, ss)
	}
	return dst
}

// Shards returns the number of shards (fixed at New).
func (c *Cache) Shards() int { return len(c.shards) }

// oldestLocked returns the earliest last-access time of the shard's live records; false if it
// has none.
func (s *shard) oldestLocked() (int64, bool) {
	oldest, ok := uint32(0), false
	for _, r := range s.records {
		if !ok || r.atime() < oldest {
			oldest, ok = r.atime(), true
		}
	}
	return int64(oldest), ok
}
