package cache

import (
	"math"
	"time"
)

// Clock tells the cache the current time. Now returns unix seconds; the cache assumes the values
// lie in (0, 2^32), as it stores access times in 32 bits, and never go backwards by much (a
// step back only delays expiry).
type Clock interface{ Now() int64 }

// SystemClock returns a Clock backed by time.Now().Unix().
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() int64 { return time.Now().Unix() }

// MaxRelativeExptime is the largest exptime taken as relative seconds (30 days, memcached's
// REALTIME_MAXDELTA); larger values are absolute unix times.
const MaxRelativeExptime = 60 * 60 * 24 * 30

// exptime32 is the exptime an item stores for an exptime as sent by a client at time now, with
// memcached's rules: 0 means never (0); a negative value means already expired; up to
// MaxRelativeExptime it is relative to now; larger values are absolute (in the past means
// already expired). An already expired result is <= now and non-zero; results are clamped to
// MaxUint32 (2106).
func exptime32(exptime, now int64) uint32 {
	switch {
	case exptime == 0:
		return 0
	case exptime < 0:
		return 1
	case exptime <= MaxRelativeExptime:
		exptime += now
	}
	return uint32(min(max(exptime, 1), math.MaxUint32))
}

// StoredExptime returns the absolute exptime an item gets for a client exptime at time now, as
// the cache stores it (0 = never); callers use it to report TTLs the way memcached does.
func StoredExptime(exptime, now int64) int64 { return int64(exptime32(exptime, now)) }
