package main

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// memLimit keeps the Go runtime's soft memory limit a small allowance above what the heap must
// hold, unless GOMEMLIMIT is set. -m charges everything the cache holds, but its slab pages are
// mapped outside the Go heap (cache/pagemem.go), so a limit derived from -m alone never binds
// (it was 1.125 x -m + 16 MiB). What the heap must hold is the cache's heap-held charge
// (Cache.HeapUsed: its index, window queue, go-tinylfu's main space, and the pages and large
// records the heap gave) and whatever else the last collection found live (buffers,
// connections). The charge gets no collector headroom of its own: it is what the cache keeps,
// sized for -m. The rest of the live heap gets GOGC's. Above both, memAllowance plus an eighth
// of -m pays for the runtime's own memory (its metadata, spans not yet returned, stacks) and
// the cache's garbage between two collections (go-tinylfu's list element per Add, a main space
// dropped by each rebuild). At -m 64 that garbage, at GOGC 50, was most of what tandem held
// above memcached on a fill (docs/benchmarks-appendix.md, "The 1M x 100 B fill against #42's
// memory goal"); there the limit binds. The eighth of -m keeps it from binding where the heap
// is a small part of the process: from -m 256 on it leaves more room than GOGC 50 uses.
//
// It also lowers GOGC to 50 (unless GOGC is set): the heap is mostly the index, which only
// grows with the items, and at 100 a churning cache's garbage could double it. 25 was measured
// too (CHANGELOG.md, storage engine round 3): 18 MiB less at the peak of a churn over 1M items,
// but 10% more CPU and a 27% higher p99.9, since with the pages out of the heap every cycle
// marks an index that is most of a small heap; the limit pays that CPU only where it binds.
//
// The limit is set once before the cache exists and again by tick, every memLimitInterval, as
// the charge moves. setMB (cache_memlimit) is safe from any goroutine; tick and run are called
// from one goroutine at a time.
type memLimit struct {
	log    zerolog.Logger
	env    bool         // GOMEMLIMIT is set: the limit is the environment's
	mb     atomic.Int64 // -m, in MiB
	last   int64        // the limit last set, in bytes
	sample []rtmetrics.Sample
}

// gcPercent is the GOGC that newMemLimit sets.
const gcPercent = 50

// memAllowance, memFloor and memLimitInterval: see memoryLimit and memLimit. The allowance was
// chosen by measurement (docs/benchmarks-appendix.md, "The heap's limit from the cache's
// charge"): after a 1M x 100 B fill at -m 64, 0 MiB left tandem 0.4 MB above memcached, 2 MiB
// 2.3 MB, 4 MiB 4 MB, 6 MiB 6 MB (#42 allows 6 MiB); at 4 MiB the replied fill ran as many
// collections as without a limit (the limit's saving there is free spans returned sooner) and a
// noreply burst 13% more server CPU. The floor is about the old limit at -m 8.
const (
	memAllowance     = 4 << 20
	memFloor         = 24 << 20
	memLimitInterval = 100 * time.Millisecond
)

// memoryLimit is the limit for -m mb (MiB), the cache's heap-held charge and the live heap
// (bytes): the charge, the rest of the live heap with GOGC's headroom, memAllowance and an
// eighth of -m, never below memFloor.
func memoryLimit(mb, charge, live int64) int64 {
	return max(memFloor, charge+max(0, live-charge)*(100+gcPercent)/100+memAllowance+mb<<17)
}

// newMemLimit sets GOGC and the first limit, for an empty cache of mb MiB; getenv reads the
// environment (os.Getenv).
func newMemLimit(log zerolog.Logger, mb int64, getenv func(string) string) *memLimit {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	l := &memLimit{log: log, env: getenv("GOMEMLIMIT") != "",
		sample: []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	l.mb.Store(mb)
	l.tick(0)
	return l
}

// setMB records a new -m (cache_memlimit); the next tick applies it.
func (l *memLimit) setMB(mb int64) { l.mb.Store(mb) }

// tick sets the limit for the cache's heap-held charge now, when it moved.
func (l *memLimit) tick(charge int64) {
	if l.env {
		return
	}
	rtmetrics.Read(l.sample)
	var live int64
	if s := l.sample[0].Value; s.Kind() == rtmetrics.KindUint64 {
		live = int64(s.Uint64())
	}
	limit := memoryLimit(l.mb.Load(), charge, live)
	if limit == l.last {
		return
	}
	debug.SetMemoryLimit(limit)
	if l.last == 0 {
		l.log.Debug().Int64("bytes", limit).Msg("Go memory limit set")
	}
	l.last = limit
}

// run calls tick with charge() every memLimitInterval until the returned function is called;
// that function waits for the goroutine to end. Without a limit of its own (GOMEMLIMIT set)
// it starts nothing.
func (l *memLimit) run(charge func() int64) (stop func()) {
	if l.env {
		return func() {}
	}
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(memLimitInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				l.tick(charge())
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
