package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/reactor"
)

// TestSpareProcessor: with more than one CPU inline mode gets GOMAXPROCS of
// at least loops + 1; one CPU, pool and goroutine mode and an explicit
// GOMAXPROCS are left alone.
func TestSpareProcessor(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	tests := []struct {
		name  string
		env   string
		mode  reactor.Mode
		start int
		loops int
		want  int
	}{
		{"inline, as many loops as Ps", "", reactor.ModeInline, 2, 2, 3},
		{"inline, more loops than Ps", "", reactor.ModeInline, 2, 4, 5},
		{"inline, Ps to spare", "", reactor.ModeInline, 4, 2, 4},
		{"pool, as many loops as Ps", "", reactor.ModePool, 2, 2, 2},
		{"one CPU", "", reactor.ModeInline, 1, 1, 1},
		{"goroutine mode", "", reactor.ModeGoroutine, 2, 2, 2},
		{"GOMAXPROCS set", "2", reactor.ModeInline, 2, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tt.env)
			runtime.GOMAXPROCS(tt.start)
			spareProcessor(zerolog.Nop(), tt.mode, tt.loops)
			if got := runtime.GOMAXPROCS(0); got != tt.want {
				t.Errorf("GOMAXPROCS %d, want %d", got, tt.want)
			}
		})
	}
}

// TestExpiredItemsReclaimedWithoutTraffic: items whose TTL passed leave curr_items and bytes
// with no request touching them, through the background sweep (memcached's LRU crawler does
// the same). The 15 s limit is a hang guard; the sweep takes about 1-2 s here.
func TestExpiredItemsReclaimedWithoutTraffic(t *testing.T) {
	srv := startServer(t, "inline")
	c := dial(t, srv.Addr)
	var req strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&req, "set exp:%d 0 1 5 noreply\r\nhello\r\n", i)
	}
	req.WriteString("set keep 0 0 5\r\nhello\r\n")
	if got := roundTrip(t, c, req.String(), len("STORED\r\n")); got != "STORED\r\n" {
		t.Fatalf("set: %q", got)
	}
	var st map[string]string
	ok := waitFor(15*time.Second, func() bool {
		var err error
		st, err = serverStats(srv.Addr, "")
		return err == nil && st["curr_items"] == "1" && st["bytes"] == strconv.Itoa(len("keep")+5+48)
	})
	if !ok {
		t.Fatalf("expired items not reclaimed: curr_items %s bytes %s", st["curr_items"], st["bytes"])
	}
	if r := statUint(t, st, "reclaimed"); r != 2000 {
		t.Errorf("reclaimed %d, want 2000", r)
	}
}
