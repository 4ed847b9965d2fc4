package cache

import "slices"

// Slab memory (see the package comment's Layout and Memory bound): a class's first page holds
// 16 chunks and each further one as many as the class already has, up to maxPage bytes, so a
// class in little use holds little memory and a busy one few pages.

// page is one slab page of a shard, or one large record's memory.
type page struct {
	mem    []byte // nil: an unused entry of the page table
	mapped bool   // mem is a mapping of its own (pagemem.go), not Go heap memory
	size   int    // chunk size; len(mem) for a large record
	class  int    // slab class, or large
	live   int    // live records in its chunks
	carved int    // chunks handed out at least once
}

const (
	large    = -1         // the class of a large record's page
	anyClass = -2         // every class, to sampleLocked
	noHandle = ^uint32(0) // no chunk
	maxPages = 1 << 16    // page indexes fit the handle's upper 16 bits
)

// handle names chunk i of page p.
func handle(p, i int) uint32 { return uint32(p)<<16 | uint32(i) }

// slabClass holds a class's free chunks, linked through their first 4 bytes, and its pages.
type slabClass struct {
	free    uint32 // the first free chunk's handle + 1 (0: none); each holds the next one's
	carving int    // the page whose uncarved tail the class uses next, + 1 (0: none)
	pages   int    // pages of the class
	evicted int    // byte-pressure evictions since the class last looked for a page to take
}

// maxSmall is the largest of the Go allocator's small size classes; larger allocations are
// rounded up to its 8 KiB pages.
const maxSmall = 32 << 10

// slabSizes lists the chunk size of each slab class: the Go allocator's small size classes,
// read from the allocator at start-up (an append's capacity is rounded up to the size class)
// rather than copied from the runtime's source. classOf[(n+7)/8] is the class of an n-byte
// record, n <= maxSmall.
var slabSizes, classOf = func() ([]int, []int8) {
	var sizes []int
	of := make([]int8, maxSmall/8+1)
	for n := 8; n <= maxSmall; n += 8 {
		if len(sizes) == 0 || sizes[len(sizes)-1] < n {
			sizes = append(sizes, cap(slices.Grow([]byte(nil), n)))
		}
		of[n/8] = int8(len(sizes) - 1)
	}
	return sizes, of
}()

// sizeClass returns the number of bytes the Go allocator uses for an n-byte allocation: the
// chunk size of a record of n bytes.
func sizeClass(n int) int {
	if n <= maxSmall {
		return slabSizes[classOf[(n+7)>>3]]
	}
	return (n + 8191) &^ 8191
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
	size, cl := sizeClass(n), large
	if size <= s.cfg.maxChunk {
		cl = int(classOf[size/8])
	}
	for {
		if h, ok := s.takeLocked(cl); ok {
			return h, true
		}
		need := size
		if cl != large {
			need = s.nextPage(cl)
		}
		if s.used()+int64(need) <= s.cfg.budget && len(s.pages)-len(s.unused) < maxPages {
			if p := s.newPageLocked(cl, need); cl == large {
				return handle(p, 0), true
			}
		} else if !s.makeRoomLocked(cl, keep) {
			return noHandle, false
		}
	}
}

// nextPage is the size of class cl's next page: 16 chunks, or as many as the class has; from
// the kernel's page size on, a whole number of its pages (see pagemem.go).
func (s *shard) nextPage(cl int) int {
	n := sizeClass(min(slabSizes[cl]<<(4+min(s.slab[cl].pages, 20)), s.cfg.maxPage))
	if n >= osPage {
		n = (n + osPage - 1) &^ (osPage - 1)
	}
	return n
}

// takeLocked pops a free chunk of class cl, or carves one from its page.
func (s *shard) takeLocked(cl int) (uint32, bool) {
	if cl == large {
		return 0, false
	}
	sc := &s.slab[cl]
	if sc.free != 0 {
		h := sc.free - 1
		sc.free = le.Uint32(s.chunk(h))
		return h, true
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
	pg.mem, pg.mapped = pageMem(cl, n)
	s.pageBytes += int64(n)
	if cl != large {
		pg.size, pg.carved = slabSizes[cl], 0
		s.slab[cl].carving = p + 1
		s.slab[cl].pages++
	}
	return p
}

// makeRoomLocked frees a chunk of class cl or a page (see the file comment), never evicting the
// record in chunk keep, and reports whether it did. A page without live records goes first.
// With evictions disabled only expired or flushed items go.
func (s *shard) makeRoomLocked(cl int, keep uint32) bool {
	if s.cfg.disableEvictions && s.purgeLocked(keep) > 0 {
		return true
	}
	if p := s.pageLocked(cl, keep, true); p >= 0 {
		return s.freePageLocked(p)
	} else if s.cfg.disableEvictions {
		return false
	}
	victim, ok := s.sampleLocked(cl, keep)
	if cl != large && (!ok || s.slab[cl].evicted >= s.cfg.maxPage/slabSizes[cl]) {
		// A class without items, or one that has evicted a page's worth of them, takes the page
		// of the oldest of a few items of any class unless its own oldest is older.
		s.slab[cl].evicted = 0
		if other, found := s.sampleLocked(anyClass, keep); found && s.pages[other>>16].class != cl && other>>16 != keep>>16 &&
			(!ok || s.liveAt(other).atime() <= s.liveAt(victim).atime()) {
			return s.freePageLocked(int(other >> 16))
		}
	}
	if ok {
		if cl != large {
			s.slab[cl].evicted++
		}
		s.dropLocked(victim, true)
		return true
	}
	p := s.pageLocked(cl, keep, false)
	return p >= 0 && s.freePageLocked(p)
}

// pageLocked returns the first page from the page hand on that holds memory, is neither class
// cl's (unless cl is large) nor chunk keep's, and has no live record if empty; -1 if none does.
func (s *shard) pageLocked(cl int, keep uint32, empty bool) int {
	for range s.pages {
		p := s.pageHand % len(s.pages)
		s.pageHand = p + 1
		if pg := &s.pages[p]; pg.mem != nil && (pg.class != cl || cl == large) && p != int(keep>>16) && (!empty || pg.live == 0) {
			return p
		}
	}
	return -1
}

// freePageLocked evicts the items of page p and releases it, and reports true.
func (s *shard) freePageLocked(p int) bool {
	for i := range s.pages[p].carved {
		if s.liveAt(handle(p, i)) != nil {
			s.dropLocked(handle(p, i), true) // a large record's page is released here
		}
	}
	pg := &s.pages[p]
	if pg.mem == nil {
		return true
	}
	sc := &s.slab[pg.class]
	if sc.carving == p+1 {
		sc.carving = 0
	}
	var prev uint32 // the last free chunk kept, + 1 (0: the list head)
	for f := sc.free; f != 0; {
		next := le.Uint32(s.chunk(f - 1))
		switch {
		case int((f-1)>>16) != p:
			prev = f
		case prev == 0:
			sc.free = next
		default:
			le.PutUint32(s.chunk(prev-1), next)
		}
		f = next
	}
	sc.pages--
	s.pageBytes -= int64(len(pg.mem))
	unmapPage(pg)
	*pg = page{}
	s.unused = append(s.unused, p)
	return true
}
