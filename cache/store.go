package cache

// storeLocked implements MetaStore's storage command under s.mu. It returns the outcome, the new
// cas id (visible form) and, when Stored and visible, the record written (valid under s.mu until
// the next change).
func (s *shard) storeLocked(c *Cache, h uint64, mode StoreMode, key, value []byte, flags uint32, exptime int64, cas uint64) (Outcome, uint64, record) {
	size := int64(len(key)+len(value)) + ItemOverhead
	if size > s.cfg.maxItem || len(key) > MaxKeyLen {
		// memcached fails the allocation before reading the data: cmd_set is not counted.
		s.rejectTooLargeLocked(mode, h, key)
		return TooLarge, 0, nil
	}
	i, entry, old := s.findLocked(h, key)
	var fail Outcome
	switch {
	case mode == Add && old != nil, (mode == Replace || mode == Append || mode == Prepend) && old == nil:
		fail = NotStored
	case (mode == Append || mode == Prepend) && size+int64(len(old.value())) > s.cfg.maxItem:
		fail = NotStored // memcached: the combined item cannot be allocated
	case mode == CAS && old == nil:
		s.st.CasMisses++
		fail = NotFound
	case mode == CAS && (c.disableCAS || old.cas() != cas): // memcached -C: EXISTS on a live item
		s.st.CasBadval++
		fail = Exists
	}
	if fail != 0 {
		s.st.CmdSet++
		return fail, 0, nil
	}
	exp := exptime32(exptime, s.now)
	if mode == Append || mode == Prepend {
		flags, exp = old.flags(), old.exptime()
	}
	var r record
	if exp == 0 || int64(exp) > s.now {
		var ok bool
		if r, ok = s.placeLocked(h, i, entry, old, mode, key, value); !ok {
			s.st.StoreNoMemory++
			return NoMemory, 0, nil
		}
		r.setFlags(flags)
		r.setExptime(exp)
		r.setAtime(uint32(s.now))
		r.setState(0)
	} else if old != nil {
		s.killLocked(i) // stored but already expired: the old item goes, nothing new is visible
	}
	s.st.CmdSet++
	s.st.TotalItems++
	if mode == CAS {
		s.st.CasHits++
	}
	id := c.nextCAS()
	if r != nil {
		r.setCAS(id)
	}
	return Stored, c.visibleCAS(id), r
}

// placeLocked writes key and the new value (see build) into old's chunk if the record still
// fits it, else into a new chunk, which becomes key's, replacing another key's record of the
// same hash (i, entry and old are as findLocked returned them). A Set frees old's chunk first;
// the other modes keep old's header fields and leave old in place when there is no room. It
// returns the record, or false when there is no room.
func (s *shard) placeLocked(h uint64, i uint32, entry bool, old record, mode StoreMode, key, value []byte) (record, bool) {
	if entry && old == nil {
		if other := s.liveAt(i); other != nil && s.hash(other.key()) == h {
			s.killLocked(i) // a 64-bit hash collision: the new key replaces the other one
		}
	}
	n := hdrSize + len(key) + len(value)
	if mode == Append || mode == Prepend {
		n += len(old.value())
	}
	if old != nil && sizeClass(n) == cap(old) {
		r := build(old[:n:n], old, key, mode, value) // in place
		s.bytes += r.size() - old.size()
		return r, true
	}
	if !entry && !s.beforeInsertLocked() {
		return nil, false
	}
	keep := noHandle
	switch {
	case old != nil && mode == Set:
		s.killLocked(i) // its room goes first; memcached unlinks it too if the set fails
		old = nil
	case old != nil:
		keep = i
	}
	j, ok := s.allocLocked(n, keep)
	if !ok {
		return nil, false
	}
	r := build(s.chunk(j), old, key, mode, value)
	if old != nil {
		copy(r[:offVlen], old) // cas, exptime, atime and flags
		r[offState] = old[offState]
		s.killLocked(i)
	}
	s.pages[j>>16].live++
	s.n++
	s.bytes += r.size()
	s.recBytes += int64(cap(r))
	if !entry {
		s.entries++ // tinylfu may evict another entry, or reject an older candidate leaving
		// its window, through onEvict; never the entry being added
	}
	s.index.Add(h, j) // a new entry, or an entry (live or stale) that moves to chunk j
	return r, true
}

// RejectTooLarge records a store refused before its value was read (the protocol layer saw a
// declared length over the item size limit): it counts store_too_large and, for a set, removes
// the old item so that a failed set never leaves a stale value visible, as memcached does.
func (c *Cache) RejectTooLarge(mode StoreMode, key []byte) {
	s, h := c.lock(key)
	defer s.mu.Unlock()
	s.rejectTooLargeLocked(mode, h, key)
}

// rejectTooLargeLocked implements RejectTooLarge under s.mu.
func (s *shard) rejectTooLargeLocked(mode StoreMode, h uint64, key []byte) {
	s.st.StoreTooLarge++
	if mode == Set {
		if i, _, old := s.findLocked(h, key); old != nil {
			s.killLocked(i)
		}
	}
}
