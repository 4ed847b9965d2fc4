package cache

import "math"

// flushState is an immutable snapshot of the flush_all settings; the Cache swaps it atomically
// and every operation loads it once. It follows memcached 1.6.18 (settings.oldest_live and
// oldest_cas): an item is flushed once the flush time is reached if it was last accessed at or
// before that time, or, for a flush that took effect at once, if its cas id predates the flush.
type flushState struct {
	live int64  // oldest_live: in effect once now >= live
	cas  uint64 // oldest_cas: items with a smaller cas are flushed while live is in effect; 0 = none

	// Flushes already in effect when a newer flush_all replaced them (0 while there are none: no
	// item's access time is 0). memcached forgets them (a later delayed flush briefly resurrects
	// flushed items); tandem keeps them in force.
	pastLive int64
	pastCAS  uint64
}

// flushed reports whether r is invalidated by flush_all at time now.
func (f *flushState) flushed(r record, now int64) bool {
	if f == nil {
		return false
	}
	at, cas := int64(r.atime()), r.cas()
	return at <= f.pastLive || cas < f.pastCAS || (f.live <= now && (at <= f.live || cas < f.cas))
}

// FlushAll invalidates items like memcached's flush_all [delay]: with delay <= 0 every item
// stored so far is invalid at once (later stores are visible); with a delay (relative seconds up
// to 30 days, else an absolute unix time) the flush time is now+delay-1 as in memcached 1.6.18,
// and from that second on every item last accessed at or before it is invalid. A newer FlushAll
// replaces a pending one; one already in effect stays in effect. Counts cmd_flush.
func (c *Cache) FlushAll(delay int64) {
	c.cmdFlush.Add(1)
	c.flushMu.Lock()
	now := c.clock.Now()
	next := &flushState{live: now - 1} // memcached: oldest_live = realtime(delay) - 1
	if delay > 0 {
		next.live = int64(exptime32(delay, now)) - 1
	}
	if old := c.flush.Load(); old != nil {
		next.pastLive, next.pastCAS = old.pastLive, old.pastCAS
		if old.live <= now {
			next.pastLive = max(next.pastLive, old.live)
			next.pastCAS = max(next.pastCAS, old.cas)
		}
	}
	immediate := next.live <= now
	if immediate {
		next.cas = c.nextCAS()
	}
	c.flush.Store(next)
	c.flushMu.Unlock()
	if immediate {
		// Free the memory now, uncounted, rather than lazily (memcached's LRU crawler does this
		// in the background).
		c.walk(Cursor{}, math.MaxInt, func(s *shard, _ int, h uint32, r record) {
			if s.invalidLocked(r) {
				s.killLocked(h)
			}
		})
	}
}

// RecordFlushCmd counts a flush_all that the caller refused (memcached -F still counts
// cmd_flush).
func (c *Cache) RecordFlushCmd() { c.cmdFlush.Add(1) }
