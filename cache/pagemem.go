//go:build unix

package cache

import (
	"os"

	"golang.org/x/sys/unix"
)

// Slab pages live outside the Go heap, each in an anonymous private mapping of its own, so that
// the memory -m bounds behaves as memcached's does: a page released by a move between classes or
// an emptied shard goes back to the kernel at once instead of waiting for a collection and the
// runtime's scavenger; the collector neither scans them nor counts them, so GOGC's headroom is a
// share of the index, not of the items; and a page's uncarved tail is not resident. Records are
// read and written only under their shard's lock and every caller copies what it keeps (Item and
// ItemMeta alias cache memory during a call only), so no reference outlives an unmap. Should the
// kernel refuse a mapping (vm.max_map_count, for one), the page comes from the Go heap instead,
// as it does in race-detector builds, so that the detector keeps watching item memory.
// Records larger than a chunk keep Go heap memory: they are many mappings' worth at a large -m.

// osPage is the kernel's page size; slab pages are whole multiples of it.
var osPage = os.Getpagesize()

// mapPage returns n bytes of zeroed memory for a slab page and whether they are a mapping.
func mapPage(n int) ([]byte, bool) {
	if raceEnabled {
		return make([]byte, n), false
	}
	if b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
		return b, true
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
