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

// arithLocked implements MetaArith's change of a live value under s.mu: with cas != 0 it first
// requires the item's visible cas id to equal it (else Exists). It returns the new value and,
// when Stored, the changed record.
func (s *shard) arithLocked(c *Cache, h uint64, key []byte, incr bool, delta, cas uint64) (uint64, Outcome, record) {
	i, _, r := s.findLocked(h, key)
	if r == nil {
		if incr {
			s.st.IncrMisses++
		} else {
			s.st.DecrMisses++
		}
		return 0, NotFound, nil
	}
	val := r.value()
	if len(val) == 0 {
		return 0, NonNumeric, nil
	}
	if cas != 0 && c.visibleCAS(r.cas()) != cas {
		return 0, Exists, nil
	}
	n, ok := parseUint(val)
	if !ok {
		return 0, NonNumeric, nil
	}
	if incr {
		n += delta
		s.st.IncrHits++
	} else {
		n -= min(delta, n)
		s.st.DecrHits++
	}
	var tmp [20]byte
	digits := strconv.AppendUint(tmp[:0], n, 10)
	if len(digits) <= len(val) {
		copy(val, digits)
		for i := len(digits); i < len(val); i++ {
			val[i] = ' '
		}
	} else {
		if r.size()+int64(len(digits)-len(val)) > s.cfg.maxItem {
			return 0, NoMemory, nil
		}
		var hdr [offVlen]byte // cas, exptime, atime and flags, which placeLocked leaves unset
		copy(hdr[:], r)
		st := r.state()
		if r, ok = s.placeLocked(h, i, true, r, Replace, key, digits); !ok {
			return 0, NoMemory, nil
		}
		copy(r, hdr[:])
		r.setState(st)
		s.st.TotalItems++ // memcached links a new item here
	}
	r.setCAS(c.nextCAS())
	r.setAtime(time32(s.now))
	return n, Stored, r
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
