package cache

import "slices"

// Slab memory (see the package comment's Layout and Memory bound): a class's first page holds
// 2 chunks and each further one twice the one before, up to growPage (or 4 chunks) and maxPage
// bytes, so a class in little use holds little memory and a busy one few pages. A shard has up to ~100 classes in use when
// value sizes vary: a first page of 16 chunks (32 KiB for 2 KB records) left half of -m in pages
// no record was ever carved from (TestVariableSizesFillMemory).

// page is one slab page of a shard, or one large record's memory.
type page struct {
	mem    []byte // nil: an unused entry of the page table
	kind   uint8  // where mem comes from: onHeap, anonMap or inFile (pagemem.go)
	off    int    // inFile: where mem starts in the shard's region of the memory file
	size   int    // chunk size; len(mem) for a large record
	class  int    // slab class, or large
	live   int    // live records in its chunks
	carved int    // chunks handed out at least once
}

const (
	large     = -1         // the class of a large record's page
	noHandle  = ^uint32(0) // no chunk
	maxPages  = 1 << 16    // page indexes fit the handle's upper 16 bits
	spareGate = 32         // chunks freed before sparePageLocked looks again after finding nothing
	growPage  = 64 << 10   // a class's pages grow to this (see nextPage)
)

// handle names chunk i of page p.
func handle(p, i int) uint32 { return uint32(p)<<16 | uint32(i) }

// slabClass holds a class's free chunks, linked through their first 4 bytes, and its pages.
type slabClass struct {
	free    uint32 // the first free chunk's handle + 1 (0: none); each holds the next one's
	nfree   int    // free chunks
	carving int    // the page whose uncarved tail the class uses next, + 1 (0: none)
	pages   int    // pages of the class
}

// maxSmall is the largest chunk of a slab class; a larger record is a heap buffer of its own,
// rounded to the Go allocator's 8 KiB pages.
const maxSmall = 32 << 10

// slabSizes lists the chunk size of each slab class: every multiple of 8 bytes up to 256, then
// steps of a thirty-second (a record wastes at most 3% of its chunk; Go's own size classes and
// memcached's factor 1.25 waste up to 12.5% and 25%). classOf[(n+7)/8] is the class of an
// n-byte record, n <= maxSmall.
var slabSizes, classOf = func() ([]int, []uint8) {
	var sizes []int
	for n := 8; n <= maxSmall; n += max(8, n/32&^7) {
		sizes = append(sizes, n)
	}
	if sizes[len(sizes)-1] < maxSmall {
		sizes = append(sizes, maxSmall)
	}
	of := make([]uint8, maxSmall/8+1)
	cl := 0
	for i := range of {
		for sizes[cl] < i*8 {
			cl++
		}
		of[i] = uint8(cl)
	}
	return sizes, of
}()

// sizeClass returns the chunk size of an n-byte record, n <= maxSmall.
func sizeClass(n int) int { return slabSizes[classOf[(n+7)>>3]] }

// heapSizes lists the Go allocator's size classes up to maxSmall, read from the allocator at
// start-up (an append's capacity is rounded up to the size class) rather than copied from the
// runtime's source: a large record's buffer and a page below the kernel's page size are heap
// allocations of that size.
var heapSizes = func() []int {
	var sizes []int
	for n := 8; n <= maxSmall; n += 8 {
		if len(sizes) == 0 || sizes[len(sizes)-1] < n {
			sizes = append(sizes, cap(slices.Grow([]byte(nil), n)))
		}
	}
	return sizes
}()

// heapSize returns the bytes the Go allocator takes for an n-byte allocation.
func heapSize(n int) int {
	if n > maxSmall {
		return (n + 8191) &^ 8191
	}
	i, _ := slices.BinarySearch(heapSizes, n)
	return heapSizes[i]
}

// classFor returns the slab class and the memory of a record of n bytes in this shard: its
// chunk, or (class large) its own heap buffer, or piece of the memory file, when no chunk of
// the shard is large enough.
func (s *shard) classFor(n int) (cl, size int) {
	if n <= s.cfg.maxChunk {
		if c := sizeClass(n); c <= s.cfg.maxChunk {
			return int(classOf[(n+7)>>3]), c
		}
	}
	if s.file != nil {
		return large, s.roundMem(n)
	}
	return large, heapSize(n)
}

// chunk returns chunk h's bytes (its length and capacity are the chunk size).
func (s *shard) chunk(h uint32) []byte {
	p := &s.pages[h>>16]
	off := int(h&0xffff) * p.size
	return p.mem[off : off+p.size : off+p.size]
}

// liveAt returns the live record in chunk h, or nil: a stale index entry's handle may name a
// free chunk, a chunk past the end of a page that changed class, or a released page.
func (s *shard) liveAt(h uint32) record {
	if p := &s.pages[h>>16]; int(h&0xffff) >= p.carved {
		return nil
	}
	c := s.chunk(h)
	if c[offState]&stLive == 0 {
		return nil
	}
	return record(c[:hdrSize+int(le.Uint16(c[offKlen:]))+int(le.Uint32(c[offVlen:]))])
}

// records yields the handle and record of every live record, page by page. The caller may drop
// the record it is given.
func (s *shard) records(yield func(uint32, record) bool) {
	for p := range s.pages {
		for i := range s.pages[p].carved {
			if r := s.liveAt(handle(p, i)); r != nil && !yield(handle(p, i), r) {
				return
			}
		}
	}
}

// allocLocked returns a free chunk for a record of n bytes, making room in the budget if it must
// (see the file comment); the record in chunk keep is never evicted. It reports false when no
// room can be made (evictions disabled).
func (s *shard) allocLocked(n int, keep uint32) (uint32, bool) {
	cl, size := s.classFor(n)
	for {
		if h, ok := s.takeLocked(cl); ok {
			s.stealing = 0
			return h, true
		}
		need := size
		if cl != large {
			need = s.nextPage(cl)
		}
		if s.used()+s.growthLocked()+int64(need) <= s.budget && len(s.pages)-len(s.unused) < maxPages {
			if p := s.newPageLocked(cl, need); cl == large {
				return handle(p, 0), true
			}
		} else if h, ok := s.takeLargerLocked(cl); ok {
			s.stealing = 0
			return h, true
		} else if !s.makeRoomLocked(cl, keep) {
			return noHandle, false
		}
	}
}

// nextPage is the size of class cl's next page: 2 chunks, doubling with each page the class
// has up to growPage (or 4 chunks) and maxPage, rounded as roundMem does. A mapped page of
// growPage or more takes the length between half and twice that, in OS pages and at most
// maxPage, whose tail (too short for a chunk) is the smallest share of it.
func (s *shard) nextPage(cl int) int {
	size := slabSizes[cl]
	n := s.roundMem(min(size<<(1+min(s.slab[cl].pages, 20)), max(growPage, 4*size), s.cfg.maxPage))
	if n < growPage || s.file != nil {
		return n
	}
	best := n
	for l := (n/2 + osPage - 1) &^ (osPage - 1); l <= min(2*n, s.cfg.maxPage); l += osPage {
		if l%size*best < best%size*l {
			best = l
		}
	}
	return best
}

// takeLocked pops a free chunk of class cl, or carves one from its page.
func (s *shard) takeLocked(cl int) (uint32, bool) {
	if cl == large {
		return 0, false
	}
	sc := &s.slab[cl]
	if sc.free != 0 {
		return s.popFreeLocked(cl), true
	}
	if sc.carving == 0 {
		return 0, false
	}
	p := &s.pages[sc.carving-1]
	h := handle(sc.carving-1, p.carved)
	if p.carved++; p.carved == len(p.mem)/p.size {
		sc.carving = 0
	}
	return h, true
}

// pushFreeLocked puts the free chunk h on class cl's free list.
func (s *shard) pushFreeLocked(cl int, h uint32) {
	sc := &s.slab[cl]
	le.PutUint32(s.chunk(h), sc.free)
	sc.free = h + 1
	sc.nfree++
	s.freeBytes += int64(slabSizes[cl])
	s.pushes++
}

// popFreeLocked takes the first chunk of class cl's free list, which must not be empty.
func (s *shard) popFreeLocked(cl int) uint32 {
	sc := &s.slab[cl]
	h := sc.free - 1
	sc.free = le.Uint32(s.chunk(h))
	sc.nfree--
	s.freeBytes -= int64(slabSizes[cl])
	return h
}

// takeLargerLocked pops a free chunk of a larger class than cl, at most a quarter larger, for
// when the budget is spent: an eviction frees a chunk of whichever class the policy chose.
func (s *shard) takeLargerLocked(cl int) (uint32, bool) {
	if cl == large {
		return 0, false
	}
	for c := cl + 1; c < len(slabSizes) && slabSizes[c] <= slabSizes[cl]+slabSizes[cl]/4; c++ {
		if s.slab[c].free != 0 {
			return s.popFreeLocked(c), true
		}
	}
	return 0, false
}

// newPageLocked adds a page of class cl of n bytes and returns its index.
func (s *shard) newPageLocked(cl int, n int) int {
	p := len(s.pages)
	if i := len(s.unused); i > 0 {
		p, s.unused = s.unused[i-1], s.unused[:i-1]
	} else {
		s.pages = append(s.pages, page{})
	}
	pg := &s.pages[p]
	*pg = page{size: n, class: cl, carved: 1}
	s.pageMem(pg, cl, n)
	s.pageBytes += int64(n)
	if pg.kind == onHeap {
		s.heapPages += int64(n)
	}
	if cl != large {
		pg.size, pg.carved = slabSizes[cl], 0
		s.slab[cl].carving = p + 1
		s.slab[cl].pages++
		s.empty++
	}
	return p
}

// emptySlab reports whether pg is a slab page (not a large record's) without a live record:
// what shard.empty counts.
func (pg *page) emptySlab() bool { return pg.class != large && pg.live == 0 }

// addLive changes page p's count of live records by d, keeping the count of empty slab pages.
func (s *shard) addLive(p, d int) {
	pg := &s.pages[p]
	if pg.emptySlab() {
		s.empty--
	}
	if pg.live += d; pg.emptySlab() {
		s.empty++
	}
}

// makeRoomLocked frees a chunk of class cl, or with cl large room in the budget (a page), never
// evicting the record in chunk keep, and reports whether it did. In order: a page without live
// records is released; or a page whose records all fit into free chunks of their class elsewhere
// (they move there); or the policy evicts an item (evictLocked), whose chunk the next try may
// take, or whose class may then have a page to spare. Only when the policy has evicted two
// pages' worth without that, or has nothing to evict, does the page under the page hand go with
// its items (memcached's slab rebalancing). With evictions disabled only expired items and empty
// pages go.
func (s *shard) makeRoomLocked(cl int, keep uint32) bool {
	if s.cfg.disableEvictions && s.purgeLocked(keep) > 0 {
		return true
	}
	p := s.pageLocked(cl, keep, true)
	if p < 0 {
		p = s.sparePageLocked(cl, keep)
	}
	if p < 0 && s.cfg.disableEvictions {
		return false
	}
	if p < 0 {
		rec := s.recBytes
		if s.stealing < 2*s.cfg.maxPage && s.evictLocked(keep) {
			s.stealing += int(rec - s.recBytes)
			return true
		}
		if p = s.pageLocked(cl, keep, false); p < 0 {
			return false
		}
	}
	return s.freePageLocked(p)
}

// fitLocked makes room until the shard has extra bytes left in its budget, never evicting the
// record in chunk keep, and reports whether it has.
func (s *shard) fitLocked(keep uint32, extra int64) bool {
	for s.used()+extra > s.budget {
		if !s.makeRoomLocked(large, keep) {
			return false
		}
	}
	return true
}

// pageLocked returns the first page from the page hand on that holds memory, is neither class
// cl's (unless cl is large) nor chunk keep's, and has no live record if empty; -1 if none does.
func (s *shard) pageLocked(cl int, keep uint32, empty bool) int {
	if empty && s.empty == 0 {
		return -1
	}
	for range s.pages {
		p := s.pageHand
		if p >= len(s.pages) { // no modulo: a division per page was most of this scan's time
			p = 0
		}
		s.pageHand = p + 1
		if pg := &s.pages[p]; pg.mem != nil && (pg.class != cl || cl == large) && p != int(keep>>16) && (!empty || pg.live == 0) {
			return p
		}
	}
	return -1
}

// unlinkFreeLocked takes page p's chunks off its class's free list.
func (s *shard) unlinkFreeLocked(p int) {
	cl := s.pages[p].class
	sc := &s.slab[cl]
	var prev uint32 // the last free chunk kept, + 1 (0: the list head)
	for f := sc.free; f != 0; {
		next := le.Uint32(s.chunk(f - 1))
		switch {
		case int((f-1)>>16) != p:
			prev = f
			f = next
			continue
		case prev == 0:
			sc.free = next
		default:
			le.PutUint32(s.chunk(prev-1), next)
		}
		sc.nfree--
		s.freeBytes -= int64(slabSizes[cl])
		f = next
	}
}

// freePageLocked releases page p, and reports true. Its live records move to free chunks of
// its class on other pages while there are any; the rest are evicted.
func (s *shard) freePageLocked(p int) bool {
	pg := &s.pages[p]
	if pg.class != large {
		s.unlinkFreeLocked(p)
		if sc := &s.slab[pg.class]; sc.carving == p+1 {
			sc.carving = 0
		}
	}
	rescue := pg.class != large // until the first eviction, which frees a chunk of p itself
	for i := range pg.carved {
		h := handle(p, i)
		r := s.liveAt(h)
		switch {
		case r == nil:
		case rescue && s.slab[pg.class].free != 0:
			j := s.popFreeLocked(pg.class)
			copy(s.chunk(j), r[:len(r)+s.cfg.tail]) // with large client flags' tail
			s.idx.replace(s.hash(r.key()), h, j)
			s.addLive(int(j>>16), 1)
			s.addLive(p, -1)
			if r.state()&stMain == 0 {
				s.win.push(j) // h's queue entry goes stale
			}
			r[offState] = 0
		default:
			rescue = false
			if !s.invalidLocked(r) {
				s.st.ByteEvictions++
			}
			s.dropLocked(h) // a large record's page is released here
		}
	}
	s.stealing = 0
	if pg.mem == nil {
		return true
	}
	s.unlinkFreeLocked(p) // the chunks the evictions freed
	s.slab[pg.class].pages--
	s.dropPageLocked(p)
	return true
}

// dropPageLocked gives page p's memory back and makes its entry unused (newPageLocked's
// inverse); its chunks must be off every free list.
func (s *shard) dropPageLocked(p int) {
	pg := &s.pages[p]
	if pg.emptySlab() {
		s.empty--
	}
	s.pageBytes -= int64(len(pg.mem))
	if pg.kind == onHeap {
		s.heapPages -= int64(len(pg.mem))
	}
	s.releaseMem(pg)
	*pg = page{}
	s.unused = append(s.unused, p)
}

// sparePageLocked returns the page, of another class than cl and not chunk keep's, with the
// fewest live records that all fit into free chunks of its class on other pages (releasing it
// evicts nothing), or -1. It looks only while the free chunks add up to a page of the size pages
// grow to (growPage; with maxPage, 4x larger at 16-MiB shards, free chunks of 1-KB records held
// 1.2% of the memory, TestNeighbouringClassesFreeChunks), and after a look that found nothing only
// once spareGate more chunks were freed: only a freed chunk lets a page fit elsewhere, and a look
// walks the whole page table (31% of a store into a full cache with values of many sizes,
// BenchmarkStoreNewVariableSizes, when it looked on every call).
func (s *shard) sparePageLocked(cl int, keep uint32) int {
	if s.freeBytes < int64(min(growPage, s.cfg.maxPage)) || s.pushes-s.spareMiss < spareGate {
		return -1
	}
	best := -1
	for p := range s.pages {
		pg := &s.pages[p]
		if pg.mem == nil || pg.class == large || pg.class == cl || p == int(keep>>16) {
			continue
		}
		// Carved chunks are live or free: the class's other free chunks are nfree - (carved - live).
		if pg.live <= s.slab[pg.class].nfree-(pg.carved-pg.live) && (best < 0 || pg.live < s.pages[best].live) {
			best = p
		}
	}
	if best < 0 {
		s.spareMiss = s.pushes
	}
	return best
}
