package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWarmRestartAfterMemlimitGrew stores more than -m holds after a
// cache_memlimit raised the limit, stops gracefully and starts again with
// the original -m: the start line must count the items the cache really
// holds ("items", equal to curr_items) and say how many of the file's it
// dropped, and stats must count those in evictions.
func TestWarmRestartAfterMemlimitGrew(t *testing.T) {
	file := memoryFile(t)
	args := []string{"-m", "8", "-e", file}
	s := startServer(t, "pool", args...)
	c := dial(t, s.Addr)
	if got := roundTrip(t, c, "cache_memlimit 32\r\n", 4); got != "OK\r\n" {
		t.Fatalf("cache_memlimit 32: %q", got)
	}
	var req strings.Builder
	const n = 60_000
	for i := range n {
		fmt.Fprintf(&req, "set grown:%d 0 0 100 noreply\r\n%0100d\r\n", i, i)
	}
	req.WriteString("mn\r\n")
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "MN\r\n" {
		t.Fatalf("after the sets: %q %v", line, err)
	}
	st, err := serverStats(s.Addr, "")
	if err != nil {
		t.Fatal(err)
	}
	before := statUint(t, st, "curr_items")
	stopGracefully(t, s, syscall.SIGTERM)

	s = startServer(t, "pool", args...)
	st, err = serverStats(s.Addr, "")
	if err != nil {
		t.Fatal(err)
	}
	held := statUint(t, st, "curr_items")
	var line struct {
		Items    uint64 `json:"items"`
		InFile   uint64 `json:"items_in_file"`
		Dropped  uint64 `json:"dropped_over_limit"`
		Messages string `json:"message"`
	}
	for _, l := range strings.Split(s.Log(), "\n") {
		if strings.Contains(l, "warm restart") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("before the stop %d items; in the file %d, held after the start %d, dropped %d", before, line.InFile, held, line.Dropped)
	if line.Items != held {
		t.Errorf("the warm-restart line says %d items, stats curr_items %d\n%s", line.Items, held, s.Log())
	}
	if line.InFile != held+line.Dropped {
		t.Errorf("items in the file %d != held %d + dropped %d", line.InFile, held, line.Dropped)
	}
	// stats tells the operator too: the items left out are evictions.
	if ev := statUint(t, st, "evictions"); line.Dropped == 0 || ev != line.Dropped {
		t.Errorf("stats evictions %d after the start, the log's dropped_over_limit %d (want equal and > 0)", ev, line.Dropped)
	}
}
