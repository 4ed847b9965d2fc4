package cache

// storeLocked implements Cache.Store under s.mu.
func (s *shard) storeLocked(c *Cache, h uint64, mode StoreMode, key, value []byte, flags uint32, exptime int64, cas uint64) (Outcome, uint64) {
	cost := int64(len(key)+len(value)) + ItemOverhead
	if cost > s.cfg.maxItem || len(key) > MaxKeyLen {
		// memcached fails the allocation before reading the data: cmd_set is not counted,
		// and a set must not leave the old value visible.
		s.st.StoreTooLarge++
		if mode == Set {
			if _, old := s.findLocked(h, key); old != nil {
				s.killLocked(old)
			}
		}
		return TooLarge, 0
	}
	slot, it := s.findLocked(h, key)
	if out, ok := s.checkModeLocked(c, mode, it, cas); !ok {
		s.st.CmdSet++
		return out, 0
	}
	exp := time32(AbsExptime(exptime, s.now))
	if mode == Append || mode == Prepend {
		flags, exp = it.flags, it.exptime
		cost += int64(len(it.value()))
		if cost > s.cfg.maxItem {
			s.st.CmdSet++ // memcached: the combined item cannot be allocated -> NOT_STORED
			return NotStored, 0
		}
	}
	if exp != 0 && int64(exp) <= s.now {
		// Stored but already expired: the old item goes and nothing new becomes visible.
		if it != nil {
			s.killLocked(it)
		}
		return s.storedLocked(c, mode, c.nextCAS())
	}
	if slot != nil && slot.live() && slot != it {
		s.killLocked(slot) // a 64-bit hash collision: the new key replaces the other one
	}
	var old int64
	if it != nil {
		old = it.cost()
	}
	if !s.makeRoomLocked(cost-old, it) {
		s.st.StoreNoMemory++
		if mode == Set && it != nil {
			s.killLocked(it)
		}
		return NoMemory, 0
	}
	switch {
	case it != nil: // overwrite in place; the index entry stays
		it.fill(key, mode, value)
		s.bytes += cost - old
		s.lru.moveToFront(it)
	case slot != nil: // revive the tombstone; its index entry (and history) stays
		it = slot
		it.fill(key, mode, value)
		s.tombs--
		s.bytes += cost
		s.lru.pushFront(it)
	default:
		s.beforeInsertLocked(cost)
		it = &item{}
		it.fill(key, mode, value)
		s.bytes += cost
		s.lru.pushFront(it)
	}
	id := c.nextCAS()
	it.flags, it.exptime, it.cas = flags, exp, id
	it.atime = atime32(s.now)
	it.state = stLive
	if it != slot {
		// New entry: tinylfu may evict another entry (or reject an older candidate leaving its
		// window) through onEvict; it never evicts the entry being added.
		s.index.Add(h, it)
		s.entries++
	}
	return s.storedLocked(c, mode, id)
}

// checkModeLocked applies the mode's precondition to the live item it (nil if missing) and
// returns the failing outcome and false, or true to go on.
func (s *shard) checkModeLocked(c *Cache, mode StoreMode, it *item, cas uint64) (Outcome, bool) {
	switch mode {
	case Add:
		if it != nil {
			return NotStored, false
		}
	case Replace, Append, Prepend:
		if it == nil {
			return NotStored, false
		}
	case CAS:
		if it == nil {
			s.st.CasMisses++
			return NotFound, false
		}
		// With DisableCAS, memcached -C answers EXISTS to every cas on a live item.
		if c.disableCAS || it.cas != cas {
			s.st.CasBadval++
			return Exists, false
		}
	}
	return 0, true
}

func (s *shard) storedLocked(c *Cache, mode StoreMode, id uint64) (Outcome, uint64) {
	s.st.CmdSet++
	s.st.TotalItems++
	if mode == CAS {
		s.st.CasHits++
	}
	return Stored, c.visibleCAS(id)
}
