package cache

// Operations of memcached's meta protocol (mg, ms, md, me; ma is in arith.go) and the binary
// protocol's CAS-checked variants, with memcached 1.6.18's semantics. Each runs under one shard
// lock, so what it reports and what it changes are one atomic step.

// MetaGetOptions modifies a MetaGet (the flags of mg). Exptimes are in client form (see
// StoredExptime).
type MetaGetOptions struct {
	Touch            bool   // T: set a new exptime; counts as a touch instead of a get
	TouchExptime     int64  //
	Vivify           bool   // N: on a miss, create an empty item and win its token
	VivifyExpt       int64  // the created item's exptime
	Recache          bool   // R: win the token if the item's TTL is below RecacheExpt
	RecacheExpt      int64  //
	TouchThenRecache bool   // T came before R: R compares the touched exptime
	VivifyLast       bool   // N came after T: a created item gets N's exptime, not T's
	NoBump           bool   // u: do not mark the item fetched, accessed or recently used
	KeyBinary        bool   // b: a created item remembers its key came base64-encoded
	NewCAS           uint64 // E: the CAS id of a created item (0: a fresh one)
}

// MetaGet looks key up like mg. On a hit (or a vivified miss) it applies the options, calls
// a.AppendItem with the item as it was before them (Exptime, LastAccess and Fetched are the old
// values; Stale, WinSentBefore, Win, Created, KeyBinary and Now are set) under the shard lock,
// and returns its result and true. On a miss it returns dst and false. Win hands the item's
// token to this caller: a vivified item, an R match, or a stale item whose token was not handed
// out yet. Counts like Get (a vivified item counts as a hit, as in memcached).
func (c *Cache) MetaGet(dst, key []byte, opt MetaGetOptions, a Appender) ([]byte, bool) {
	s, h := c.lock(key)
	defer s.mu.Unlock()
	_, it := s.findLocked(h, key)
	created := false
	if it == nil && opt.Vivify {
		if it = s.vivifyLocked(c, h, key, nil, opt.NewCAS); it != nil {
			created = true
			defer s.maintainLocked() // after the item's last use: it may rebuild the index
			if opt.KeyBinary {
				it.setState(it.state() | stKeyBinary)
			}
		}
	}
	s.countLookupLocked(opt.Touch, it != nil)
	if it == nil {
		return dst, false
	}
	view := s.viewLocked(c, it) // a created item has no exptime yet
	view.Created = created
	touched := exptime32(opt.TouchExptime, s.now)
	exp := it.exptime()
	if opt.Touch && opt.TouchThenRecache {
		exp = touched
	}
	recache := opt.Recache && exp != 0 && exp < exptime32(opt.RecacheExpt, s.now)
	view.Win = created || (!view.WinSentBefore && (view.Stale || recache))
	if view.Win {
		it.setState(it.state() | stTokenSent)
	}
	switch {
	case created && (!opt.Touch || opt.VivifyLast):
		it.setExptime(exptime32(opt.VivifyExpt, s.now))
	case opt.Touch:
		it.setExptime(touched)
	}
	if !opt.NoBump {
		s.touchLocked(it)
	}
	return a.AppendItem(dst, view), true
}

// vivifyLocked creates the missing key with value, no flags and no exptime, as mg N and ma N
// do, and returns it; nil when it does not fit (NoMemory or TooLarge). memcached links such
// items directly: they count in total_items, not in cmd_set. The caller runs maintainLocked
// once it is done with the item.
func (s *shard) vivifyLocked(c *Cache, h uint64, key, value []byte, newCAS uint64) record {
	out, _, r := s.storeLocked(c, h, Add, key, value, 0, 0, 0)
	if out != Stored {
		return nil
	}
	s.st.CmdSet--
	if newCAS != 0 {
		r.setCAS(newCAS)
	}
	return r
}

// MetaStoreOptions modifies a MetaStore (the flags of ms and binary stores).
type MetaStoreOptions struct {
	// Invalidate (I): in CAS mode, a CAS id below the item's stores the value anyway, marked
	// stale, keeping the item's exptime and token state (memcached's CAS_STALE).
	Invalidate bool
	KeyBinary  bool   // b: the key came base64-encoded
	NewCAS     uint64 // E: the stored item's CAS id (0: a fresh one)
	// ValueLen, when not nil, receives the stored value's length (after
	// Append or Prepend, the whole value's): ms's s flag.
	ValueLen *int
}

// MetaStore performs a storage command like Store, with memcached's meta and binary semantics
// for cas: mode CAS (ms with C in set or replace mode, binary set/add/replace with a CAS) may
// store a stale value with opt.Invalidate; Append and Prepend with cas != 0 require the item's
// CAS id to match (else Exists); Add ignores cas. It returns the outcome and the stored item's
// visible CAS id.
func (c *Cache) MetaStore(mode StoreMode, key, value []byte, flags uint64, exptime int64, cas uint64, opt MetaStoreOptions) (Outcome, uint64) {
	s, h := c.lock(key)
	defer s.mu.Unlock()
	// Every lookup is an access for tinylfu's frequency sketch: look the item up here only when
	// the meta semantics need it, so a plain ms counts once, like set.
	var it record
	if (mode == CAS && opt.Invalidate) || ((mode == Append || mode == Prepend) && cas != 0) {
		_, it = s.findLocked(h, key)
	}
	var stale uint8
	switch {
	case mode == CAS && it != nil && opt.Invalidate && !c.disableCAS && cas != 0 && cas < it.cas():
		stale = stStale | it.state()&stTokenSent
		mode, exptime = Set, int64(it.exptime())
		s.st.CasHits++
	case (mode == Append || mode == Prepend) && it != nil && cas != 0 && c.visibleCAS(it.cas()) != cas:
		s.st.CmdSet++
		return Exists, 0
	}
	out, id, r := s.storeLocked(c, h, mode, key, value, flags, exptime, cas)
	if r != nil {
		if opt.KeyBinary {
			stale |= stKeyBinary
		}
		r.setState(stale)
		if opt.NewCAS != 0 {
			r.setCAS(opt.NewCAS)
			id = c.visibleCAS(opt.NewCAS)
		}
		if opt.ValueLen != nil {
			*opt.ValueLen = len(r.value())
		}
	}
	s.maintainLocked()
	return out, id
}

// MetaDeleteOptions modifies a MetaDelete (the flags of md, binary delete's CAS).
type MetaDeleteOptions struct {
	CompareCAS bool   // C: delete only if the item's CAS id is CAS (else Exists)
	CAS        uint64 //
	// Invalidate (I): mark the item stale with a new CAS id (and T's exptime when Touch)
	// instead of removing it; its token can be won again.
	Invalidate bool
	Touch      bool   // T, with Invalidate; with RemoveValue the emptied item's exptime
	Exptime    int64  //
	NewCAS     uint64 // E: the CAS id an invalidated or emptied item gets
	// RemoveValue (x): replace the item by an empty one with Flags and
	// Exptime (0 without Touch), keeping its CAS id (or taking NewCAS),
	// instead of removing it; with Invalidate it is then marked stale.
	RemoveValue bool
	Flags       uint64
}

// MetaDelete removes or invalidates key: Deleted, NotFound, or Exists on a CAS mismatch (which
// memcached counts as a delete miss).
func (c *Cache) MetaDelete(key []byte, opt MetaDeleteOptions) Outcome {
	s, h := c.lock(key)
	defer s.mu.Unlock()
	i, it := s.findLocked(h, key)
	if it == nil || (opt.CompareCAS && c.visibleCAS(it.cas()) != opt.CAS) {
		s.st.DeleteMisses++
		if it == nil {
			return NotFound
		}
		return Exists
	}
	if opt.RemoveValue {
		id := opt.NewCAS
		if id == 0 {
			id = it.cas()
		}
		var exp int64
		if opt.Touch {
			exp = opt.Exptime
		}
		out, _, r := s.storeLocked(c, h, Set, key, nil, opt.Flags, exp, 0)
		defer s.maintainLocked()
		if r == nil {
			return out // NoMemory: memcached's "SERVER_ERROR out of memory"
		}
		s.st.CmdSet-- // memcached stores the emptied item directly
		r.setCAS(id)
		if !opt.Invalidate {
			s.st.DeleteHits++
			return Deleted
		}
		it, opt.Touch = r, false
	} else if !opt.Invalidate {
		s.st.DeleteHits++
		s.killLocked(i)
		return Deleted
	}
	if opt.Touch {
		it.setExptime(exptime32(opt.Exptime, s.now))
	}
	it.setState(it.state()&^stTokenSent | stStale)
	id := opt.NewCAS
	if id == 0 {
		id = c.nextCAS()
	}
	it.setCAS(id)
	return Deleted
}

// Peek looks key up without side effects, as memcached's me does: no counter, access time,
// fetched flag, token or policy changes, and an expired or flushed item is a miss but stays. It
// hands the item to a like MetaGet (Now set).
func (c *Cache) Peek(dst, key []byte, a Appender) ([]byte, bool) {
	s, h := c.lock(key)
	defer s.mu.Unlock()
	if _, r := s.lookupLocked(h, key); r != nil && !s.invalidLocked(r) {
		return a.AppendItem(dst, s.viewLocked(c, r)), true
	}
	return dst, false
}
