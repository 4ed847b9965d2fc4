package cache

// storeLocked implements MetaStore's storage command under s.mu. It returns the outcome, the new
// cas id (visible form) and, when Stored and visible, the record written (valid under s.mu until
// the next change).
func (s *shard) storeLocked(c *Cache, h uint64, mode StoreMode, key, value []byte, flags uint64, exptime int64, cas uint64) (Outcome, uint64, record) {
	size := int64(len(key)+len(value)) + ItemOverhead
	if size > s.cfg.maxItem || len(key) > MaxKeyLen {
		// memcached fails the allocation before reading the data: cmd_set is not counted.
		s.rejectTooLargeLocked(mode, h, key)
		return TooLarge, 0, nil
	}
	i, old := s.findLocked(h, key)
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
		flags, exp = s.flags(old), old.exptime()
	}
	var r record
	if exp == 0 || int64(exp) > s.now {
		var ok bool
		if r, ok = s.placeLocked(h, i, old, mode, key, value); !ok {
			s.st.StoreNoMemory++
			return NoMemory, 0, nil
		}
		s.setFlags(r, flags)
		r.setExptime(exp)
		r.setAtime(uint32(s.now))
		r.setState(0)
		s.storedLocked(r)
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
// fits it, else into a new chunk, which becomes key's (i and old are as findLocked returned
// them). A Set frees old's chunk first; the other modes keep old's header fields (its client
// flags' tail included) and its place in the window or the main space, and leave old in place
// when there is no room. It returns the record, or false when there is no room.
func (s *shard) placeLocked(h uint64, i uint32, old record, mode StoreMode, key, value []byte) (record, bool) {
	n := hdrSize + len(key) + len(value) + s.cfg.tail
	if mode == Append || mode == Prepend {
		n += len(old.value())
	}
	var flags uint64
	if old != nil {
		flags = s.flags(old) // before build moves the value over old's tail
	}
	if _, size := s.classFor(n); old != nil && size <= cap(old) && cap(old) <= size+size/4 {
		r := build(old[:n:n], old, key, mode, value) // in place
		s.setFlags(r, flags)
		s.bytes += r.size() - old.size()
		return r, true
	}
	keep := noHandle
	switch {
	case old != nil && mode == Set:
		s.killLocked(i) // its room goes first; memcached unlinks it too if the set fails
		old = nil
	case old != nil:
		keep = i
	}
	s.keep = keep
	ok := s.fitLocked(keep, s.growthLocked()) // room for the index and the queue to grow
	j := noHandle
	if ok {
		j, ok = s.allocLocked(n, keep)
	}
	s.keep = noHandle
	if !ok {
		return nil, false
	}
	r := build(s.chunk(j), old, key, mode, value)
	r[offState] = 0
	if old != nil {
		copy(r[:offVlen], old) // cas, exptime, atime and flags
		s.setFlags(r, flags)
		r[offState] = old[offState]
		s.killLocked(i)
	}
	s.linkLocked(h, j, r)
	return r, true
}

// linkLocked makes r, a record just written (or restored) in chunk j, live: counted, indexed
// under key hash h, and queued in the window unless it is a main item.
func (s *shard) linkLocked(h uint64, j uint32, r record) {
	s.addLive(int(j>>16), 1)
	s.n++
	s.linked++
	s.bytes += r.size()
	s.recBytes += int64(cap(r))
	s.idx.insert(h, j)
	if r.state()&stMain == 0 {
		s.enterWindowLocked(j, r)
	}
}

// growthLocked is what the next new item may add to the index and the window queue.
func (s *shard) growthLocked() int64 {
	g := int64(s.idx.grownSlots()-len(s.idx.slots)) * 8
	if s.win.n == len(s.win.buf) && s.win.n <= 2*s.wn+64 { // else it compacts instead
		g += int64(max(len(s.win.buf), 16)) * 4
	}
	return g
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
		if i, old := s.findLocked(h, key); old != nil {
			s.killLocked(i)
		}
	}
}
