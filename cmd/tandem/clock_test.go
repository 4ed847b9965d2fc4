package main

import (
	"testing"
	"time"
)

func TestCoarseClock(t *testing.T) {
	c := newCoarseClock()
	if d := time.Now().Unix() - c.Now(); d < 0 || d > 1 {
		t.Fatalf("NewCoarseClock is %d s off", d)
	}
	c.stop() // not running: no-op
	c.now.Store(1)
	c.start() // refreshes at once, then after every second boundary
	c.start() // running: no-op
	deadline := time.Now().Add(2 * time.Second)
	for c.Now() == 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	c.stop()
	if d := time.Now().Unix() - c.Now(); d < 0 || d > 1 {
		t.Fatalf("CoarseClock not refreshed: %d s off", d)
	}
	c.stop()
}
