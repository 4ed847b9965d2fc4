package cache

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

// nextFlush returns the state after a flush_all whose flush time is at (unix seconds), issued at
// now; cas is the fresh cas id to use when the flush takes effect at once. It reports whether
// it took effect at once.
func nextFlush(old *flushState, at, now int64, cas func() uint64) (*flushState, bool) {
	next := &flushState{live: at - 1} // memcached: oldest_live = realtime(delay) - 1
	if old != nil {
		next.pastLive, next.pastCAS = old.pastLive, old.pastCAS
		if old.live <= now {
			next.pastLive = max(next.pastLive, old.live)
			next.pastCAS = max(next.pastCAS, old.cas)
		}
	}
	immediate := next.live <= now
	if immediate {
		next.cas = cas()
	}
	return next, immediate
}
