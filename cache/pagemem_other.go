//go:build !unix

package cache

// Without mmap, slab pages are Go heap memory (see pagemem.go).

var osPage = 4096

func mapPage(n int) ([]byte, bool) { return make([]byte, n), false }

func unmapPage(*page) {}

func unmapPages([]shard) {}
