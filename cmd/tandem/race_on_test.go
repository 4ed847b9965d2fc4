//go:build race

package main

// raceEnabled builds the server under test with the race detector too.
const raceEnabled = true
