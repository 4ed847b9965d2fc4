package cache

import "cmp"

// Walking the items: key dumps (memcached's lru_crawler metadump, stats cachedump) and the
// background expiry sweep visit the shards' chunks a bounded number per shard lock hold,
// so a walk over a large cache needs no memory of its own and never stalls other clients for
// long. A walk sees the items as they are when it passes them: one stored behind the cursor
// after the walk passed is not seen, one deleted ahead of it is not seen either.

// Cursor is a position in a walk over the cache's items. The zero Cursor starts a walk over
// every class; ClassCursor starts one over a single class.
type Cursor struct {
	shard, slot int
	end         int // one past the last shard to visit; 0 = every shard
	done        bool
}

// Done reports whether the walk has visited every slot.
func (c Cursor) Done() bool { return c.done }

// ClassCursor returns a Cursor for a walk over the items of one class (1-based, as reported in
// ShardStats.Shard+1); a class out of range gives a walk that is already done.
func (c *Cache) ClassCursor(class int) Cursor {
	if class < 1 || class > len(c.shards) {
		return Cursor{done: true}
	}
	return Cursor{shard: class - 1, end: class}
}

// walkLockHold is the most slots a walk looks at per shard lock hold.
const walkLockHold = 1024

// Walk calls fn for the live items at and after cur, looking at no more than maxSlots slots,
// and returns the cursor to continue from. class is the class stats items and stats slabs
// report the item under (its shard + 1). fn runs under a shard lock: it must be quick and must
// not call into the Cache, and it must not retain it or its slices (one Item serves every
// call). Expired and flushed items are skipped, not reclaimed; nothing about an item changes.
func (c *Cache) Walk(cur Cursor, maxSlots int, fn func(class int, it *Item)) Cursor {
	var it Item
	return c.walk(cur, maxSlots, func(s *shard, class int, _ uint32, r record) {
		if !s.invalidLocked(r) {
			it = s.viewLocked(c, r)
			fn(class, &it)
		}
	})
}

// walk runs visit for every live record from cur on, looking at no more than maxSlots chunks and
// at most walkLockHold per lock hold (a shard's end counts as one, so an empty cache still
// finishes), and returns where it stopped. A cursor's slot is a chunk handle: pages in order,
// chunks in order within a page.
func (c *Cache) walk(cur Cursor, maxSlots int, visit func(s *shard, class int, h uint32, r record)) Cursor {
	end := cmp.Or(cur.end, len(c.shards))
	looked := 0
	for looked < maxSlots && !cur.done {
		if cur.shard >= end {
			cur.done = true
			break
		}
		s := &c.shards[cur.shard]
		now, fl := c.clock.Now(), c.flush.Load()
		s.mu.Lock()
		s.now, s.flush = now, fl
		p, i, n := cur.slot>>16, cur.slot&0xffff, 0
		for ; n < min(maxSlots-looked, walkLockHold) && p < len(s.pages); n++ {
			if i >= s.pages[p].carved {
				p, i = p+1, 0
				continue
			}
			if r := s.liveAt(handle(p, i)); r != nil {
				visit(s, cur.shard+1, handle(p, i), r)
			}
			i++
		}
		if p >= len(s.pages) {
			cur.shard, p, i = cur.shard+1, 0, 0
		}
		s.mu.Unlock()
		looked += max(n, 1)
		cur.slot = p<<16 | i
	}
	return cur
}

// Maintain advances the background expiry sweep: it looks at up to maxSlots slots from where
// the previous call stopped (the call after the last shard starts over) and reclaims every
// expired or flushed item it finds, as memcached's LRU crawler does, and returns how many. Its
// owner calls it periodically (cmd/tandem from a ticker); concurrent calls share one cursor.
func (c *Cache) Maintain(maxSlots int) int {
	c.sweepMu.Lock()
	defer c.sweepMu.Unlock()
	reclaimed := 0
	c.sweep = c.walk(c.sweep, maxSlots, func(s *shard, _ int, i uint32, r record) {
		if s.invalidLocked(r) {
			s.dropLocked(i)
			reclaimed++
		}
	})
	if c.sweep.done {
		c.sweep = Cursor{}
	}
	return reclaimed
}
