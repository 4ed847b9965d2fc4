package cache

import (
	"os"

	"golang.org/x/sys/unix"
)

// A slab page of at least osPage bytes is an anonymous mapping of its own, outside the Go heap:
// released, it goes back to the kernel at once, and the collector neither scans nor counts item
// memory, so GOGC's headroom is a share of the index only. Records are used only under their
// shard's lock and callers copy what they keep (an Item aliases cache memory during a call
// only), so no reference outlives an unmap. The page comes from the Go heap when the kernel
// refuses a mapping (vm.max_map_count). Race-detector builds take the same path (the detector
// does not track accesses to mappings, but it sees every lock and every other access around them).
//
// With Config.MemoryFile every page and large record is cut from the file instead (arena below,
// restart.go), so that the next process finds the items again.

// osPage is the kernel's page size; slab pages are whole multiples of it.
var osPage = os.Getpagesize()

// Where a page's memory comes from.
const (
	onHeap  uint8 = iota // a Go heap buffer
	anonMap              // an anonymous mapping of its own
	inFile               // a piece of the memory file's mapping (arena)
)

// pageMem gives pg n bytes of zeroed memory for a page of class cl (mem, kind and off): from
// the memory file while it has room, else a mapping of its own for a slab page of at least
// osPage bytes unless the kernel refuses, else the heap.
func (s *shard) pageMem(pg *page, cl, n int) {
	if s.file != nil {
		if off, ok := s.file.alloc(n); ok {
			pg.mem, pg.kind, pg.off = s.file.mem[off:off+n:off+n], inFile, off
			return
		}
	}
	if cl != large && n >= osPage {
		if b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
			pg.mem, pg.kind = b, anonMap
			return
		}
	}
	pg.mem, pg.kind = make([]byte, n), onHeap
}

// releaseMem gives a page's memory back; the page must not be used after.
func (s *shard) releaseMem(pg *page) {
	switch pg.kind {
	case anonMap:
		if err := unix.Munmap(pg.mem); err != nil {
			panic("cache: munmap of a slab page: " + err.Error())
		}
	case inFile:
		s.file.free(pg.mem, pg.off)
	}
}

// roundMem is the memory a page or a large record of n bytes takes: whole OS pages from the
// kernel's page size on and in the memory file, else what the Go allocator gives for it.
func (s *shard) roundMem(n int) int {
	if n >= osPage || s.file != nil {
		return (n + osPage - 1) &^ (osPage - 1)
	}
	return heapSize(n)
}

// unmapPages releases the mapped pages of a Cache that is no longer reachable (a cleanup that
// runtime.AddCleanup attaches in New; the shards are referenced by nothing else by then). The
// memory file's mapping goes with closeMemFile.
func unmapPages(shards []shard) {
	for i := range shards {
		for p := range shards[i].pages {
			if pg := &shards[i].pages[p]; pg.kind == anonMap {
				shards[i].releaseMem(pg)
			}
		}
	}
}

// arena is one shard's region of the memory file: pages and large records are whole OS pages
// of it, found first-fit in a bitmap. The region is twice the shard's budget, so that its free
// space is rarely too fragmented for a page; the file is sparse, and a released piece is punched
// out of it, so the file holds no more memory than the pages do.
type arena struct {
	fd   int
	off  int64    // the region's offset in the file
	mem  []byte   // the region, a piece of the file's shared mapping
	used []uint64 // one bit per OS page of the region
}

func (a *arena) isUsed(i int) bool { return a.used[i>>6]&(1<<(i&63)) != 0 }

func (a *arena) mark(from, k int, used bool) {
	for i := from; i < from+k; i++ {
		if used {
			a.used[i>>6] |= 1 << (i & 63)
		} else {
			a.used[i>>6] &^= 1 << (i & 63)
		}
	}
}

// alloc returns the offset of n bytes (a multiple of osPage) of the region, reserved in the
// file (so that a full tmpfs refuses here, not with SIGBUS on a write; see reserve), or false
// when there is no such run of free pages or no room in the file system.
func (a *arena) alloc(n int) (int, bool) {
	k, pages := n/osPage, len(a.mem)/osPage
	run := 0
	for i := 0; i < pages; i++ {
		if i&63 == 0 && a.used[i>>6] == ^uint64(0) {
			i, run = i+63, 0
			continue
		}
		if a.isUsed(i) {
			run = 0
			continue
		}
		if run++; run < k {
			continue
		}
		from := (i - k + 1) * osPage
		if reserve(a.fd, a.off+int64(from), int64(n)) != nil {
			return 0, false // ENOSPC above all
		}
		a.mark(i-k+1, k, true)
		return from, true
	}
	return 0, false
}

// free punches b, the piece alloc returned at off, out of the file, which gives its memory back
// (reads of a hole are zeros); where the file system or the platform cannot (punchHole), b is
// zeroed, as alloc promises zeroed memory.
func (a *arena) free(b []byte, off int) {
	if punchHole(a.fd, a.off+int64(off), int64(len(b))) != nil {
		clear(b)
	}
	a.mark(off/osPage, len(b)/osPage, false)
}

// take claims the n bytes at off in the region for a restored page, and reports false when off
// and n are not whole OS pages within the region or overlap a page already claimed.
func (a *arena) take(off int64, n int) ([]byte, bool) {
	if off < 0 || n <= 0 || off%int64(osPage) != 0 || n%osPage != 0 || off+int64(n) > int64(len(a.mem)) {
		return nil, false
	}
	from, k := int(off)/osPage, n/osPage
	for i := from; i < from+k; i++ {
		if a.isUsed(i) {
			return nil, false
		}
	}
	a.mark(from, k, true)
	return a.mem[off : off+int64(n) : off+int64(n)], true
}
