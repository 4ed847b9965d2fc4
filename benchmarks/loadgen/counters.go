package loadgen

import (
	"sync"
	"sync/atomic"
)

// counters are the run-wide totals. Workers keep local tallies and add them
// once per batch, so the atomics are touched a few times per batch.
type counters struct {
	gets, sets, hits, misses atomic.Int64
	bytesRead, bytesSent     atomic.Int64
	errServer, errClient     atomic.Int64
	errGeneric, errUnstored  atomic.Int64
	errVerify, errProtocol   atomic.Int64
	errIO                    atomic.Int64

	firstMu sync.Mutex
	first   string // guarded by firstMu; set once
}

// tally is a worker's local view of counters between two adds.
type tally struct {
	gets, sets, hits, misses int64
	bytesRead, bytesSent     int64
	errServer, errClient     int64
	errGeneric, errUnstored  int64
	errVerify, errProtocol   int64
	errIO                    int64
}

func (c *counters) add(t *tally) {
	add := func(a *atomic.Int64, v int64) {
		if v != 0 {
			a.Add(v)
		}
	}
	add(&c.gets, t.gets)
	add(&c.sets, t.sets)
	add(&c.hits, t.hits)
	add(&c.misses, t.misses)
	add(&c.bytesRead, t.bytesRead)
	add(&c.bytesSent, t.bytesSent)
	add(&c.errServer, t.errServer)
	add(&c.errClient, t.errClient)
	add(&c.errGeneric, t.errGeneric)
	add(&c.errUnstored, t.errUnstored)
	add(&c.errVerify, t.errVerify)
	add(&c.errProtocol, t.errProtocol)
	add(&c.errIO, t.errIO)
	*t = tally{}
}

// noteFirst remembers the first error message of the run.
func (c *counters) noteFirst(msg string) {
	c.firstMu.Lock()
	if c.first == "" {
		c.first = msg
	}
	c.firstMu.Unlock()
}

func (c *counters) errors() Errors {
	e := Errors{
		Server:   c.errServer.Load(),
		Client:   c.errClient.Load(),
		Generic:  c.errGeneric.Load(),
		Unstored: c.errUnstored.Load(),
		Verify:   c.errVerify.Load(),
		Protocol: c.errProtocol.Load(),
		IO:       c.errIO.Load(),
	}
	c.firstMu.Lock()
	e.First = c.first
	c.firstMu.Unlock()
	return e
}
