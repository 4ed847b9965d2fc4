package cache

import (
	"bytes"
	"hash/maphash"
	"sync"

	"github.com/dgryski/go-tinylfu"
)

// shard is one lock domain of the cache (see the package comment). Invariants, with mu held
// between operations: every live record has exactly one index slot; a live record is either in
// the window (wn of them, wbytes of chunks, each queued in win at least once) or in the main
// space (stMain, with a tinylfu entry); tinylfu's entries are the main items plus stale entries,
// at most capacity; used() <= budget.
type shard struct {
	mu sync.Mutex

	// All fields below are guarded by mu.
	budget    int64                        // bytes: MaxBytes / shards
	idx       index                        // key hash -> chunk (index.go)
	main      *tinylfu.T[uint64, struct{}] // the main space's policy (policy.go)
	win       ring                         // the window's CLOCK queue of chunks
	retry     []uint64                     // keys go-tinylfu dropped that are offered again
	pages     []page                       // slab pages and large records (slab.go)
	file      *arena                       // the shard's region of Config.MemoryFile, or nil (pagemem.go)
	unused    []int                        // indexes of released pages, reused first
	slab      []slabClass                  // per slab class: free chunks and the page being carved
	n         int                          // live items
	wn        int                          // live items in the window
	wbytes    int64                        // their chunks' bytes
	bytes     int64                        // key+value+ItemOverhead of live items (the bytes statistic)
	recBytes  int64                        // chunk sizes of the live records
	pageBytes int64                        // memory of the pages
	heapPages int64                        // the part of pageBytes on the Go heap (pagemem.go)
	freeBytes int64                        // memory of the free chunks
	entries   int                          // tinylfu entries: main items plus stale entries
	capacity  int                          // tinylfu capacity (an item count)
	mainBytes int64                        // tinylfu's memory at full capacity
	writes    int                          // stores since the main space was last sized
	stealing  int                          // bytes evicted since a chunk or a page was last found
	pageHand  int                          // next page a class takes when it must take one
	empty     int                          // slab pages (not large records) without a live record
	rnd       uint64                       // worthOfferLocked's xorshift state, never 0
	pushes    uint64                       // chunks freed (pushFreeLocked)
	linked    uint64                       // records linkLocked made live
	killed    uint64                       // records killLocked removed: linked - killed are live
	spareMiss uint64                       // pushes when sparePageLocked last found nothing
	keep      uint32                       // a chunk a store still reads while it makes room: never evicted
	st        Stats                        // counters (only the counter fields are used)
	evicted   Item                         // what OnEvict is shown, reused: it must not retain it

	// State of the operation in progress, set by Cache.lock and walk.
	now   int64
	flush *flushState

	cfg *shardConfig // read-only, shared by all shards

	_ [64]byte // keep the next shard's mutex off this shard's cache lines
}

// shardConfig holds the read-only settings every shard uses.
type shardConfig struct {
	seed             maphash.Seed
	maxItem          int64       // largest item size (key+value+ItemOverhead)
	maxCap           int         // largest main capacity: the budget filled with minimal items
	maxPage          int         // largest slab page
	maxChunk         int         // largest slab chunk; larger records get a page of their own
	windowPercent    int64       // the window's share of the shard
	onEvict          func(*Item) // Config.OnEvict
	disableEvictions bool
	tail             int // flagsTail with Config.LargeClientFlags, else 0
}

// flags returns r's client flags: the header's 32 bits, and with Config.LargeClientFlags the
// high 32 bits from the record's tail.
func (s *shard) flags(r record) uint64 {
	if s.cfg.tail == 0 {
		return uint64(r.flags())
	}
	return uint64(r.flags()) | uint64(le.Uint32(r[len(r):len(r)+flagsTail]))<<32
}

// setFlags sets r's client flags: without Config.LargeClientFlags their low 32 bits only (the
// protocol layer never passes more).
func (s *shard) setFlags(r record, v uint64) {
	r.setFlags(uint32(v))
	if s.cfg.tail != 0 {
		le.PutUint32(r[len(r):len(r)+flagsTail], uint32(v>>32))
	}
}

func (s *shard) hash(key []byte) uint64 { return maphash.Bytes(s.cfg.seed, key) }

// used is what the shard charges against its budget: its pages, its index, its window queue and
// its tinylfu.
func (s *shard) used() int64 { return s.pageBytes + s.idx.bytes() + s.win.bytes() + s.mainBytes }

// heapUsed is the part of used() held on the Go heap: all of it but the mapped pages.
func (s *shard) heapUsed() int64 { return s.used() - s.pageBytes + s.heapPages }

// lookupLocked returns the chunk and the record of key (hash h), or nil, without side effects.
func (s *shard) lookupLocked(h uint64, key []byte) (uint32, record) {
	for i, j := s.idx.find(h, -1); i >= 0; i, j = s.idx.find(h, i) {
		if r := s.liveAt(j); bytes.Equal(r.key(), key) {
			return j, r
		}
	}
	return noHandle, nil
}

// findLocked looks key up and counts the lookup for the policy. r is the live record for key,
// or nil, and i its chunk. An expired or flushed record found for key is dropped and counted, as
// memcached's do_item_get does for every command.
func (s *shard) findLocked(h uint64, key []byte) (i uint32, r record) {
	i, r = s.lookupLocked(h, key)
	if r != nil && s.invalidLocked(r) {
		if r.expired(s.now) {
			s.st.GetExpired++
		} else {
			s.st.GetFlushed++
		}
		s.killLocked(i)
		r = nil
	}
	s.accessLocked(h, r)
	return i, r
}

// touchLocked records a read access. As in memcached, the first one only marks the item
// fetched; later ones also make now its last access (memcached bumps an item's time once it is
// fetched again, so `me` and `mg l` after one get still show the time since the store).
func (s *shard) touchLocked(r record) {
	if st := r.state(); st&stFetched == 0 {
		r.setState(st | stFetched)
		return
	}
	r.setAtime(uint32(s.now))
}

// invalidLocked reports whether a live record is expired or flushed.
func (s *shard) invalidLocked(r record) bool {
	return r.expired(s.now) || s.flush.flushed(r, s.now)
}

// killLocked drops the live record in chunk h: out of the index and the window (a main item's
// tinylfu entry stays, stale), its chunk back to its class's free list (a large record's page is
// released).
func (s *shard) killLocked(h uint32) {
	r, p := s.liveAt(h), &s.pages[h>>16]
	s.idx.remove(s.hash(r.key()), h)
	if r.state()&stMain == 0 {
		s.leaveWindowLocked(r)
	}
	s.n--
	s.killed++
	s.bytes -= r.size()
	s.recBytes -= int64(cap(r))
	if s.addLive(int(h>>16), -1); p.class == large {
		s.dropPageLocked(int(h >> 16))
		return
	}
	r[offState] = 0
	s.pushFreeLocked(p.class, h)
}

// dropLocked drops the record in chunk h unasked and counts it: a reclaim when it was expired or
// flushed anyway, else an eviction (as memcached's lru_pull_tail does).
func (s *shard) dropLocked(h uint32) {
	r := s.liveAt(h)
	unfetched := uint64(^r.state() & stFetched) // stFetched is bit 0
	if s.invalidLocked(r) {
		s.st.Reclaimed++
		s.st.ExpiredUnfetched += unfetched
	} else {
		s.st.Evictions++
		s.st.EvictedUnfetched += unfetched
		if s.cfg.onEvict != nil {
			// One Item per shard, not one per eviction: a 96-byte Item per
			// eviction was 25 MB of the ~140 MB the server allocated replaying
			// ARC OLTP at -m 16 (docs/benchmarks-appendix.md, 12a).
			s.evicted = Item{Key: r.key(), Value: r.value(), Flags: s.flags(r), Exptime: int64(r.exptime()),
				LastAccess: int64(r.atime()), Fetched: unfetched == 0, Now: s.now}
			s.cfg.onEvict(&s.evicted)
			s.evicted = Item{} // drop the slices into the chunk
		}
	}
	s.killLocked(h)
}

// purgeLocked drops every expired or flushed record but the one in chunk keep, counted as
// reclaims, and returns how many it dropped.
func (s *shard) purgeLocked(keep uint32) int {
	dropped := 0
	for h, r := range s.records {
		if h != keep && s.invalidLocked(r) {
			s.dropLocked(h)
			dropped++
		}
	}
	return dropped
}
