package cache

import (
	"math"
	"strconv"
)

// Arith performs incr (incr true; wraps at 2^64) or decr (stops at 0) by delta on the decimal
// value of key, keeping its flags and TTL and giving it a new cas id. It returns the new value
// and Stored, or NotFound, NonNumeric, or NoMemory (the longer number did not fit; memcached's
// "SERVER_ERROR out of memory"). Like memcached 1.6.18, a result shorter than the stored value
// is written in place and padded with spaces to the old length ("100" decr 1 is "99 "); a longer
// one replaces the value with exactly its digits.
func (c *Cache) Arith(key []byte, incr bool, delta uint64) (uint64, Outcome) {
	res, out := c.MetaArith(key, incr, delta, MetaArithOptions{})
	return res.Value, out
}

// MetaArithOptions modifies a MetaArith (the flags of ma, binary incr/decr).
type MetaArithOptions struct {
	CAS        uint64 // C: the item's CAS id must equal it (0: no check)
	Vivify     bool   // N (binary: expiration != 0xffffffff): create a missing key as Initial
	Initial    uint64 // J
	VivifyExpt int64  // the created item's exptime
	Touch      bool   // T: set a new exptime on success
	Exptime    int64  //
	VivifyLast bool   // N came after T: a created item gets N's exptime rather than T's
	NewCAS     uint64 // E: the CAS id the change gives the item (0: a fresh one)
}

// ArithResult describes a successful MetaArith.
type ArithResult struct {
	Value   uint64 // the new value (Initial for a created item)
	CAS     uint64 // the item's visible CAS id afterwards
	Exptime int64  // the item's exptime before T or N applied (0 for a created item)
	Now     int64  // the cache time of the operation
	Created bool   // the key was missing and created (Vivify)
}

// MetaArith is Arith with the options of ma: Stored with the result, or NotFound, Exists,
// NonNumeric, NoMemory (the longer number did not fit). A vivify that cannot store the new
// item returns NoMemory, with Created set.
func (c *Cache) MetaArith(key []byte, incr bool, delta uint64, opt MetaArithOptions) (ArithResult, Outcome) {
	s, h := c.lock(key)
	defer s.mu.Unlock()
	res := ArithResult{Now: s.now}
	hits, misses := &s.st.IncrHits, &s.st.IncrMisses
	if !incr {
		hits, misses = &s.st.DecrHits, &s.st.DecrMisses
	}
	var tmp [20]byte
	i, it := s.findLocked(h, key)
	if it == nil {
		if !opt.Vivify {
			*misses++ // memcached counts no miss when it vivifies
			return res, NotFound
		}
		res.Created = true
		if it = s.vivifyLocked(c, h, key, strconv.AppendUint(tmp[:0], opt.Initial, 10), 0); it == nil {
			return res, NoMemory
		}
		defer s.maintainLocked() // after the item's last use: it may rebuild the index
		res.Value = opt.Initial
	} else {
		val := it.value()
		n, ok := parseUint(val)
		switch {
		case len(val) > 0 && opt.CAS != 0 && c.visibleCAS(it.cas()) != opt.CAS:
			return res, Exists
		case !ok:
			return res, NonNumeric
		}
		if incr {
			n += delta
		} else {
			n -= min(delta, n)
		}
		*hits++
		digits := strconv.AppendUint(tmp[:0], n, 10)
		if len(digits) <= len(val) {
			copy(val, digits)
			for i := len(digits); i < len(val); i++ {
				val[i] = ' '
			}
		} else {
			if it.size()+int64(len(digits)-len(val)) > s.cfg.maxItem {
				return res, NoMemory
			}
			if it, ok = s.placeLocked(h, i, it, Replace, key, digits); !ok {
				return res, NoMemory
			}
			// memcached links a new item here and applies T to the old one, which it has just
			// unlinked: the TTL does not change (the reply still shows T's).
			s.st.TotalItems++
			opt.Touch = false
		}
		it.setCAS(c.nextCAS())
		it.setAtime(uint32(s.now))
		res.Value, res.Exptime = n, int64(it.exptime())
	}
	switch {
	case res.Created && (!opt.Touch || opt.VivifyLast):
		it.setExptime(exptime32(opt.VivifyExpt, s.now))
	case opt.Touch:
		it.setExptime(exptime32(opt.Exptime, s.now))
	}
	if opt.NewCAS != 0 {
		it.setCAS(opt.NewCAS)
	}
	res.CAS = c.visibleCAS(it.cas())
	return res, Stored
}

// parseUint reads a value the way memcached's safe_strtoull reads it with strtoull: optional
// leading white space, an optional sign, decimal digits, then the end of the value, white space
// or a NUL byte. Out of range is an error, and so is a minus sign on a number that is negative
// as a signed 64-bit integer; "-1" is rejected, but "-0" is 0 and "-18446744073709551615" is 1.
func parseUint(b []byte) (uint64, bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	var n uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false // ERANGE
		}
		n = n*10 + d
	}
	if i == start {
		return 0, false
	}
	if i < len(b) && !isSpace(b[i]) && b[i] != 0 {
		return 0, false
	}
	if neg {
		n = -n
		if int64(n) < 0 {
			return 0, false
		}
	}
	return n, true
}

// isSpace is C's isspace in the C locale.
func isSpace(b byte) bool {
	return b == ' ' || (b >= '\t' && b <= '\r')
}
