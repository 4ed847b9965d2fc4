package cache

// Stats is a snapshot of the cache's counters and gauges. Field names follow memcached's stats
// names (CmdGet is cmd_get). Counters cover every shard; ResetStats zeroes the counters but not
// the gauges.
type Stats struct {
	CmdGet        uint64 // keys looked up by get/gets (per key, like memcached)
	CmdSet        uint64 // storage commands processed (not counting TooLarge/NoMemory, like memcached)
	CmdFlush      uint64 // flush_all commands
	CmdTouch      uint64 // touch, gat and gats lookups (per key)
	GetHits       uint64
	GetMisses     uint64
	GetExpired    uint64 // accesses that found an expired item (any command)
	GetFlushed    uint64 // accesses that found an item invalidated by flush_all
	DeleteMisses  uint64
	DeleteHits    uint64
	IncrMisses    uint64
	IncrHits      uint64
	DecrMisses    uint64
	DecrHits      uint64
	CasMisses     uint64
	CasHits       uint64
	CasBadval     uint64
	TouchHits     uint64
	TouchMisses   uint64
	StoreTooLarge uint64
	StoreNoMemory uint64
	LimitMaxbytes uint64 // gauge: Config.MaxBytes

	Bytes            uint64 // gauge: key+value+ItemOverhead of live items
	CurrItems        uint64 // gauge: live items (expired ones count until reclaimed, as in memcached)
	TotalItems       uint64 // items stored
	ExpiredUnfetched uint64 // reclaimed expired/flushed items that were never read
	EvictedUnfetched uint64 // evicted items that were never read
	Evictions        uint64 // live items dropped for room (tinylfu or byte pressure)
	Reclaimed        uint64 // expired/flushed items dropped by an eviction scan or the sweep

	// tandem-specific, not in memcached's stats.
	Shards        uint64 // gauge: shard count
	Used          uint64 // gauge: bytes charged against MaxBytes (the pages and the index)
	IndexCapacity uint64 // gauge: sum of the shards' main space (tinylfu) capacities (items)
	IndexEntries  uint64 // gauge: tinylfu entries (main items plus stale entries)
	Tombstones    uint64 // gauge: stale entries: deleted, expired or evicted main items still in tinylfu
	Rebuilds      uint64 // main space rebuilds (resize, stale entry purge)
	ByteEvictions uint64 // evictions by a page moving to another class or released for room, not by the policy
	WindowItems   uint64 // gauge: live items in the window (the rest are in the main space)
}

// add adds o's fields to s (CmdFlush, LimitMaxbytes and Shards are zero in the shards' Stats).
// TestStatsAddEveryField checks that no field is left out.
func (s *Stats) add(o *Stats) {
	s.CmdGet += o.CmdGet
	s.CmdSet += o.CmdSet
	s.CmdFlush += o.CmdFlush
	s.CmdTouch += o.CmdTouch
	s.GetHits += o.GetHits
	s.GetMisses += o.GetMisses
	s.GetExpired += o.GetExpired
	s.GetFlushed += o.GetFlushed
	s.DeleteMisses += o.DeleteMisses
	s.DeleteHits += o.DeleteHits
	s.IncrMisses += o.IncrMisses
	s.IncrHits += o.IncrHits
	s.DecrMisses += o.DecrMisses
	s.DecrHits += o.DecrHits
	s.CasMisses += o.CasMisses
	s.CasHits += o.CasHits
	s.CasBadval += o.CasBadval
	s.TouchHits += o.TouchHits
	s.TouchMisses += o.TouchMisses
	s.StoreTooLarge += o.StoreTooLarge
	s.StoreNoMemory += o.StoreNoMemory
	s.LimitMaxbytes += o.LimitMaxbytes
	s.Bytes += o.Bytes
	s.CurrItems += o.CurrItems
	s.TotalItems += o.TotalItems
	s.ExpiredUnfetched += o.ExpiredUnfetched
	s.EvictedUnfetched += o.EvictedUnfetched
	s.Evictions += o.Evictions
	s.Reclaimed += o.Reclaimed
	s.Shards += o.Shards
	s.Used += o.Used
	s.IndexCapacity += o.IndexCapacity
	s.IndexEntries += o.IndexEntries
	s.Tombstones += o.Tombstones
	s.Rebuilds += o.Rebuilds
	s.ByteEvictions += o.ByteEvictions
	s.WindowItems += o.WindowItems
}

// statsLocked returns the shard's counters and gauges.
func (s *shard) statsLocked() Stats {
	st := s.st
	st.Bytes = uint64(s.bytes)
	st.CurrItems = uint64(s.n)
	st.Used = uint64(s.used())
	st.IndexCapacity = uint64(s.capacity)
	st.IndexEntries = uint64(s.entries)
	st.Tombstones = uint64(s.entries - (s.n - s.wn))
	st.WindowItems = uint64(s.wn)
	return st
}

// Stats returns a snapshot of the counters and gauges. It takes each shard's lock briefly, one
// at a time, so the snapshot is consistent per shard, not across shards.
func (c *Cache) Stats() Stats {
	st := Stats{
		CmdFlush:      c.cmdFlush.Load(),
		LimitMaxbytes: uint64(c.limit.Load()),
		Shards:        uint64(len(c.shards)),
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		shard := s.statsLocked()
		s.mu.Unlock()
		st.add(&shard)
	}
	return st
}

// HeapUsed returns the part of the bytes charged against MaxBytes (Stats.Used) that the cache
// holds on the Go heap: its index, its window queue, its main space's policy, and the slab pages
// and large records the heap gave (pagemem.go); the rest, mapped pages, is outside the heap. The
// runtime's memory limit is derived from it (cmd/tandem). Each shard's lock is taken briefly,
// one at a time. Safe for concurrent use.
func (c *Cache) HeapUsed() int64 {
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.heapUsed()
		s.mu.Unlock()
	}
	return n
}

// ShardStats is a snapshot of one shard, for per-shard reports such as "stats items" and
// "stats slabs" (tandem has shards where memcached has slab classes). Its Stats holds the
// shard's counters and gauges; CmdFlush, LimitMaxbytes and Shards are zero there.
type ShardStats struct {
	Shard  int    // index, 0-based
	Budget uint64 // the shard's byte budget (MaxBytes / shards)
	// Age is how many seconds ago the least recently used live item was last accessed, by the
	// cache clock (memcached's items:N:age); 0 for an empty shard. Finding it reads every
	// record of the shard.
	Age int64
	Stats
}

// ShardStats appends a snapshot of every shard to dst, in shard order, and returns it. Each
// shard's lock is taken briefly, one at a time, so the snapshot is consistent per shard only.
// It does not allocate when dst has room for every shard (see Shards).
func (c *Cache) ShardStats(dst []ShardStats) []ShardStats {
	now := c.clock.Now()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		oldest := now
		for _, r := range s.records {
			oldest = min(oldest, int64(r.atime()))
		}
		dst = append(dst, ShardStats{Shard: i, Budget: uint64(s.budget), Age: now - oldest,
			Stats: s.statsLocked()})
		s.mu.Unlock()
	}
	return dst
}

// Shards returns the number of shards (fixed at New).
func (c *Cache) Shards() int { return len(c.shards) }

// ResetStats zeroes the counters, like memcached's "stats reset" (items and bytes stay).
func (c *Cache) ResetStats() {
	c.cmdFlush.Store(0)
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.st = Stats{}
		s.mu.Unlock()
	}
}
