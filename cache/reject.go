package cache

// RejectTooLarge records a store refused before its value was read (the
// protocol layer saw a declared length over the item size limit): it counts
// store_too_large and, for a set, removes the old item so that a failed set
// never leaves a stale value visible, as memcached does.
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
