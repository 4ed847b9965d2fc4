package cache

import (
	"math"
	"time"
)

// Clock tells the cache the current time. Now returns unix seconds; the cache assumes the values
// lie in (0, 2^32) and never go backwards by much (a step back only delays expiry).
type Clock interface{ Now() int64 }

// SystemClock returns a Clock backed by time.Now().Unix().
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() int64 { return time.Now().Unix() }

// MaxRelativeExptime is the largest exptime taken as relative seconds (30 days, memcached's
// REALTIME_MAXDELTA); larger values are absolute unix times.
const MaxRelativeExptime = 60 * 60 * 24 * 30

// AbsExptime converts an exptime as sent by a client into absolute unix seconds, with memcached's
// rules: 0 means never (returns 0); a negative value means already expired; up to
// MaxRelativeExptime it is relative to now; larger values are absolute (in the past means
// already expired). An already expired result is <= now and non-zero.
func AbsExptime(exptime, now int64) int64 {
	switch {
	case exptime == 0:
		return 0
	case exptime < 0:
		return 1
	case exptime > MaxRelativeExptime:
		return exptime
	default:
		return now + exptime
	}
}

// time32 narrows unix seconds (an exptime or an access time) for storage in an item; 0 stays 0
// (never), anything else is clamped to [1, MaxUint32] so an expiry never turns into "never".
func time32(t int64) uint32 {
	switch {
	case t == 0:
		return 0
	case t < 1:
		return 1
	case t > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(t)
}
