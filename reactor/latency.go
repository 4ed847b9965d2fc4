package reactor

import "time"

// latencySampleEvery is how many batches (pool), reads (inline) or flushes
// (goroutine) a connection runs per timed one. Sampling keeps the cost of
// Config.ObserveLatency to two clock reads per 64 batches, with no shared
// counter, lock or allocation on the request path.
const latencySampleEvery = 64

// latencySampler picks the batches to time. Each connection has its own,
// used only by the goroutine that frames it (its event loop or its
// goroutine), so it needs no atomics.
type latencySampler struct{ n uint32 }

// newLatencySampler starts the count at an offset taken from fd, so that
// connections shorter than latencySampleEvery batches are sampled too.
func newLatencySampler(fd int) latencySampler {
	return latencySampler{n: uint32(fd) * 37}
}

// start returns the current time for one call in latencySampleEvery and the
// zero Time otherwise, or always when observe is nil.
func (l *latencySampler) start(observe func(time.Duration)) time.Time {
	if observe == nil {
		return time.Time{}
	}
	l.n++
	if l.n%latencySampleEvery != 0 {
		return time.Time{}
	}
	return time.Now()
}

// observeSince reports the time since t0 unless t0 is zero.
func observeSince(observe func(time.Duration), t0 time.Time) {
	if !t0.IsZero() {
		observe(time.Since(t0))
	}
}
