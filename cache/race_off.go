//go:build !race

package cache

// raceEnabled keeps slab pages in the Go heap under the race detector (pagemem.go).
const raceEnabled = false
