//go:build race

package cache

// raceEnabled shortens the slowest tests under the race detector.
const raceEnabled = true
