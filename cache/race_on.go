//go:build race

package cache

// raceEnabled keeps slab pages in the Go heap under the race detector, which does not watch
// memory mapped outside it (pagemem.go).
const raceEnabled = true
