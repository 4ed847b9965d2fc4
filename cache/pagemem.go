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
// refuses a mapping (vm.max_map_count) and in race-detector builds, which do not watch mappings.

// osPage is the kernel's page size; slab pages are whole multiples of it.
var osPage = os.Getpagesize()

// pageMem returns n bytes of zeroed memory for a page of class cl and whether they are a
// mapping: a slab page of at least osPage bytes is one unless raceEnabled or the kernel refuses.
func pageMem(cl, n int) ([]byte, bool) {
	if cl != large && n >= osPage && !raceEnabled {
		if b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
			return b, true
		}
	}
	return make([]byte, n), false
}

// unmapPage gives a mapped page's memory back to the kernel; the page must not be used after.
func unmapPage(pg *page) {
	if pg.mapped {
		if err := unix.Munmap(pg.mem); err != nil {
			panic("cache: munmap of a slab page: " + err.Error())
		}
	}
}

// unmapPages releases the mapped pages of a Cache that is no longer reachable (a cleanup that
// runtime.AddCleanup attaches in New; the shards are referenced by nothing else by then).
func unmapPages(shards []shard) {
	for i := range shards {
		for p := range shards[i].pages {
			unmapPage(&shards[i].pages[p])
		}
	}
}
