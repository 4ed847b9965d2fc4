package cache

// WalkDump is Walk for key dumps: fn also learns whether the item's key was stored
// base64-encoded (meta "b" flag), whose bytes need not be text. memcached's "stats cachedump"
// leaves such items out, so that a raw key never breaks the line format. The rest is as in
// Walk: fn runs under a shard lock, m and its Key are valid during the call only.
func (c *Cache) WalkDump(cur Cursor, maxSlots int, fn func(m *ItemMeta, keyBinary bool)) Cursor {
	var m ItemMeta // one per call, not per item: fn may keep no pointer to it
	next, _ := c.walk(cur, maxSlots, func(s *shard, class int, _ uint32, r record) {
		if s.invalidLocked(r) {
			return
		}
		st := r.state()
		m = ItemMeta{
			Key:        r.key(),
			Exptime:    int64(r.exptime()),
			LastAccess: int64(r.atime()),
			CAS:        c.visibleCAS(r.cas()),
			Fetched:    st&stFetched != 0,
			Class:      class,
			Size:       int(r.size()),
			Now:        s.now,
		}
		fn(&m, st&stKeyBinary != 0)
	})
	return next
}
