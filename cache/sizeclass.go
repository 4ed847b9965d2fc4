package cache

import "slices"

// maxSmall is the largest of the Go allocator's small size classes; larger allocations are
// rounded up to its 8 KiB pages.
const maxSmall = 32 << 10

// classes[(n+7)/8] is the size the Go allocator hands out for a request of n <= maxSmall bytes
// (every class is a multiple of 8). It is read from the allocator at start-up (an append's
// capacity is rounded up to the size class) rather than copied from the runtime's source.
var classes = func() []uint32 {
	t := make([]uint32, maxSmall/8+1)
	for n := 8; n <= maxSmall; {
		c := cap(slices.Grow([]byte(nil), n))
		for i := n / 8; i <= c/8 && i < len(t); i++ {
			t[i] = uint32(c)
		}
		n = c + 8
	}
	return t
}()

// sizeClass returns the number of bytes the Go allocator uses for an n-byte allocation.
func sizeClass(n int) int {
	if n <= maxSmall {
		return int(classes[(n+7)>>3])
	}
	return (n + 8191) &^ 8191
}
