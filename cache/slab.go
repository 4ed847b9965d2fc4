package cache

// Slab memory (see the package comment's Layout and Memory bound): a class's first page holds
// 16 chunks and each further one as many as the class already has, up to maxPage bytes, so a
// class in little use holds little memory and a busy one few pages. A class's free chunks are
// linked through their first 4 bytes.

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

// slabClass holds a class's free chunks: free is the first one's handle + 1 (0: none), each
// free chunk holding the next one's in its first 4 bytes; carving is the page whose uncarved
// tail the class uses next (-1: none).
type slabClass struct {
	free    uint32
	carving int
	pages   int // pages of the class
	evicted int // byte-pressure evictions since the class last looked for a page to take
}

// slabSizes lists the chunk size of each slab class; classOf[size/8] is the class of a chunk size.
var slabSizes, classOf = func() ([]int, []int8) {
	var sizes []int
	of := make([]int8, maxSmall/8+1)
	for i := 1; i < len(classes); i++ {
		if c := int(classes[i]); len(sizes) == 0 || sizes[len(sizes)-1] != c {
			sizes = append(sizes, c)
		}
		of[classes[i]/8] = int8(len(sizes) - 1)
	}
	return sizes, of
}()

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
	return recordIn(c)
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
	if sc.carving < 0 {
		return 0, false
	}
	p := &s.pages[sc.carving]
	h := handle(sc.carving, p.carved)
	if p.carved++; p.carved == len(p.mem)/p.size {
		sc.carving = -1
	}
	return h, true
}

// newPageLocked adds a page of class cl of n bytes and returns its index.
func (s *shard) newPageLocked(cl int, n int) int {
	pg := page{size: n, class: cl, carved: 1}
	if cl != large {
		pg.size, pg.carved = slabSizes[cl], 0
	}
	if cl != large && n >= osPage {
		pg.mem, pg.mapped = mapPage(n)
	} else {
		pg.mem = make([]byte, n)
	}
	p := len(s.pages)
	if i := len(s.unused); i > 0 {
		p, s.unused = s.unused[i-1], s.unused[:i-1]
		s.pages[p] = pg
	} else {
		s.pages = append(s.pages, pg)
	}
	s.pageBytes += int64(n)
	if cl != large {
		s.slab[cl].carving = p
		s.slab[cl].pages++
	}
	return p
}

// freeChunkLocked returns chunk h, whose record was just dropped, to its class (a large record's
// page is released).
func (s *shard) freeChunkLocked(h uint32) {
	p := &s.pages[h>>16]
	p.live--
	if p.class == large {
		s.pageBytes -= int64(len(p.mem))
		*p = page{}
		s.unused = append(s.unused, int(h>>16))
		return
	}
	c, sc := s.chunk(h), &s.slab[p.class]
	c[offState] = 0
	le.PutUint32(c, sc.free)
	sc.free = h + 1
}

// makeRoomLocked frees a chunk of class cl or a page (see the file comment), never evicting the
// record in chunk keep, and reports whether it did. A page without live records goes first.
// With evictions disabled only expired or flushed items go.
func (s *shard) makeRoomLocked(cl int, keep uint32) bool {
	if s.cfg.disableEvictions && s.purgeLocked(keep, true) > 0 {
		return true
	}
	if p := s.pageLocked(cl, keep, func(pg *page) bool { return pg.live == 0 }); p >= 0 {
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
		s.evictLocked(victim)
		return true
	}
	p := s.pageLocked(cl, keep, func(*page) bool { return true })
	return p >= 0 && s.freePageLocked(p)
}

// pageLocked returns the first page from the page hand on that holds memory, is not class cl's
// (unless cl is large) nor holds the record in chunk keep, and satisfies ok; -1 if none does.
func (s *shard) pageLocked(cl int, keep uint32, ok func(*page) bool) int {
	for range s.pages {
		p := s.pageHand % len(s.pages)
		s.pageHand = p + 1
		if pg := &s.pages[p]; pg.mem != nil && (pg.class != cl || cl == large) && p != int(keep>>16) && ok(pg) {
			return p
		}
	}
	return -1
}

// freePageLocked evicts the items of page p and releases it, and reports true.
func (s *shard) freePageLocked(p int) bool {
	for i := range s.pages[p].carved {
		if s.liveAt(handle(p, i)) != nil {
			s.evictLocked(handle(p, i)) // a large record's page is released here
		}
	}
	pg := &s.pages[p]
	if pg.mem == nil {
		return true
	}
	sc := &s.slab[pg.class]
	if sc.carving == p {
		sc.carving = -1
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
