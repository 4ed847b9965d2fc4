package cache

import (
	"bytes"
	"hash/maphash"
	"sync"

	"github.com/dgryski/go-tinylfu"
)

// shard is one lock domain of the cache (see the package comment). Invariants, with mu held
// between operations: every live record has an index entry naming its chunk (a stale entry may
// name a free chunk or another key's); entries == live items + stale entries <= capacity;
// used() <= budget.
type shard struct {
	mu sync.Mutex

	// All fields below are guarded by mu.
	index      *tinylfu.T[uint64, uint32]
	pages      []page      // slab pages and large records (slab.go)
	unused     []int       // indexes of released pages, reused first
	slab       []slabClass // per slab class: free chunks and the page being carved
	n          int         // live items
	bytes      int64       // key+value+ItemOverhead of live items (the bytes statistic)
	recBytes   int64       // chunk sizes of the live records
	pageBytes  int64       // memory of the pages
	entries    int         // index entries: live items plus stale entries
	capacity   int         // index capacity (an item count)
	indexBytes int64       // indexCharge(capacity): the index with every entry
	writes     int         // stores since the last rebuild
	pressure   int         // byte-pressure evictions since the last rebuild
	hand       uint32      // next chunk the byte-pressure eviction looks at
	pageHand   int         // next page a class without pages takes
	st         Stats       // counters (only the counter fields are used)

	// State of the operation in progress, set by Cache.lock and walk.
	now   int64
	flush *flushState

	cfg *shardConfig // read-only, shared by all shards

	_ [64]byte // keep the next shard's mutex off this shard's cache lines
}

// shardConfig holds the read-only settings every shard uses.
type shardConfig struct {
	seed             maphash.Seed
	budget           int64 // bytes per shard
	maxItem          int64 // largest item size (key+value+ItemOverhead)
	maxCap           int   // largest index capacity: the budget filled with minimal items
	maxPage          int   // largest slab page
	maxChunk         int   // largest slab chunk; larger records get a page of their own
	disableEvictions bool
}

func (s *shard) hash(key []byte) uint64 { return maphash.Bytes(s.cfg.seed, key) }

// used is what the shard charges against its budget: its pages and its index.
func (s *shard) used() int64 { return s.pageBytes + s.indexBytes }

// findLocked looks key up. entry reports whether the index has an entry for the key's hash and
// i is its chunk; r is the live record for key, or nil. An expired or flushed record found for
// key is dropped and counted, as memcached's do_item_get does for every command.
func (s *shard) findLocked(h uint64, key []byte) (i uint32, entry bool, r record) {
	i, entry = s.index.Get(h)
	if !entry {
		return 0, false, nil
	}
	if r = s.liveAt(i); r == nil || !bytes.Equal(r.key(), key) {
		return i, true, nil
	}
	if s.invalidLocked(r) {
		if r.expired(s.now) {
			s.st.GetExpired++
		} else {
			s.st.GetFlushed++
		}
		s.killLocked(i)
		return i, true, nil
	}
	return i, true, r
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

// killLocked drops the live record in chunk h and returns the chunk to its class's free list (a
// large record's page is released). Its index entry stays, stale.
func (s *shard) killLocked(h uint32) {
	r, p := s.liveAt(h), &s.pages[h>>16]
	s.n--
	s.bytes -= r.size()
	s.recBytes -= int64(cap(r))
	if p.live--; p.class == large {
		s.pageBytes -= int64(len(p.mem))
		*p = page{}
		s.unused = append(s.unused, int(h>>16))
		return
	}
	sc := &s.slab[p.class]
	r[offState] = 0
	le.PutUint32(r, sc.free)
	sc.free = h + 1
}

// dropLocked drops the record in chunk h unasked and counts it: a reclaim when it was expired or
// flushed anyway, else an eviction (as memcached's lru_pull_tail does), one made by byte pressure
// (to make room in the budget) if pressure is set.
func (s *shard) dropLocked(h uint32, pressure bool) {
	r := s.liveAt(h)
	unfetched := uint64(^r.state() & stFetched) // stFetched is bit 0
	if s.invalidLocked(r) {
		s.st.Reclaimed++
		s.st.ExpiredUnfetched += unfetched
	} else {
		s.st.Evictions++
		s.st.EvictedUnfetched += unfetched
		if pressure {
			s.pressure++
			s.st.ByteEvictions++
		}
	}
	s.killLocked(h)
}

// onEvict is tinylfu's eviction callback; it runs inside index.Add, under mu. The entry has
// left the index; if its chunk still holds the record it was added for (and not a record of
// another key that reused a stale entry's chunk), that item is dropped and counted.
func (s *shard) onEvict(h uint64, i uint32) {
	s.entries--
	if r := s.liveAt(i); r != nil && s.hash(r.key()) == h {
		s.dropLocked(i, false)
	}
}

// scanWidth is how many live items of a class the byte-pressure eviction compares for each
// victim (memcached's lru_pull_tail looks at 5 items of its tail).
const scanWidth = 8

// sampleLocked moves the hand over the chunks of class cl (large: the large records' pages;
// anyClass: every page) until it has seen scanWidth live records other than the one in chunk
// keep, and returns the chunk of the first expired or flushed one, or else of the one accessed
// longest ago; false if it finds none.
func (s *shard) sampleLocked(cl int, keep uint32) (uint32, bool) {
	var best, bestAt uint32
	seen := 0
	for visits := 0; visits <= len(s.pages) && seen < scanWidth; {
		p, i := int(s.hand>>16), int(s.hand&0xffff)
		if p >= len(s.pages) || i >= s.pages[p].carved || (cl != anyClass && s.pages[p].class != cl) {
			s.hand = handle((p+1)%max(len(s.pages), 1), 0)
			visits++
			continue
		}
		h := s.hand
		s.hand++
		r := s.liveAt(h)
		if r == nil || h == keep {
			continue
		}
		if s.invalidLocked(r) {
			return h, true
		}
		if seen == 0 || r.atime() < bestAt {
			best, bestAt = h, r.atime()
		}
		seen++
	}
	return best, seen > 0
}

// purgeLocked drops every expired or flushed record but the one in chunk keep, counted as
// reclaims, and returns how many it dropped.
func (s *shard) purgeLocked(keep uint32) int {
	dropped := 0
	for h, r := range s.records {
		if h != keep && s.invalidLocked(r) {
			s.dropLocked(h, false)
			dropped++
		}
	}
	return dropped
}
