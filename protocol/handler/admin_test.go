package handler

import (
	"errors"
	"testing"
)

// fakeLimiter records the limits cache_memlimit sets.
type fakeLimiter struct {
	got  []int64
	fail bool
}

func (f *fakeLimiter) SetMemoryLimit(bytes int64) error {
	if f.fail {
		return errors.New("cannot")
	}
	f.got = append(f.got, bytes)
	return nil
}

// TestCacheMemlimit checks cache_memlimit's replies and that an accepted
// limit reaches the cache, the stats settings and the OnMemoryLimit hook.
// The replies without a limiter are memcached's when it cannot adjust.
func TestCacheMemlimit(t *testing.T) {
	var hooked int64
	h, _ := newTestHandler(t, func(c *Config) { c.OnMemoryLimit = func(b int64) { hooked = b } })
	s := h.NewSession("")
	if got, _ := run(s, "cache_memlimit 128\r\n"); got != "OK\r\n" || h.cfg.Cache.Stats().LimitMaxbytes != 128<<20 {
		t.Fatalf("the cache's own limit: %q, limit_maxbytes %d", got, h.cfg.Cache.Stats().LimitMaxbytes)
	}
	h.limiter = nil
	if got, _ := run(s, "cache_memlimit 128\r\n"); got != "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n" {
		t.Fatalf("without a limiter: %q", got)
	}
	lim := &fakeLimiter{}
	h.limiter = lim
	for _, tc := range []struct{ input, want string }{
		{"cache_memlimit 128\r\n", "OK\r\n"},
		{"cache_memlimit 256 noreply\r\n", ""},
		{"cache_memlimit 7\r\n", "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"},
		{"cache_memlimit 1000000001\r\n", "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"},
		{"cache_memlimit x\r\n", "ERROR\r\n"},
		{"cache_memlimit\r\n", "ERROR\r\n"},
	} {
		if got, _ := run(s, tc.input); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.input, got, tc.want)
		}
	}
	if len(lim.got) != 2 || lim.got[0] != 128<<20 || lim.got[1] != 256<<20 {
		t.Errorf("limits set: %v, want 128 and 256 MiB", lim.got)
	}
	if live := h.Live(); live.MaxBytes != 256<<20 || hooked != 256<<20 {
		t.Errorf("after cache_memlimit 256: Live.MaxBytes %d, hook %d", live.MaxBytes, hooked)
	}
	lim.fail = true
	if got, _ := run(s, "cache_memlimit 64\r\n"); got != "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n" {
		t.Errorf("a limit the cache refuses: %q", got)
	}
	if h.Live().MaxBytes != 256<<20 {
		t.Errorf("a refused limit changed Live.MaxBytes to %d", h.Live().MaxBytes)
	}
}

// TestSlabsCommands checks what slabs automove sets.
func TestSlabsCommands(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	s := h.NewSession("")
	if live := h.Live(); live.SlabAutomove != 1 || live.SlabAutomoveRatio != 0.8 {
		t.Errorf("defaults: %+v, want memcached's 1 and 0.8", live)
	}
	for _, tc := range []struct{ input, want string }{
		{"slabs automove 2\r\n", "OK\r\n"},
		{"slabs automove ratio 0.25\r\n", "OK\r\n"},
		{"slabs automove 3\r\n", "ERROR\r\n"},
		{"slabs reassign 1 2\r\n", "OK\r\n"},
		{"slabs reassign 1 65\r\n", "BADCLASS invalid src or dst class id\r\n"},
	} {
		if got, _ := run(s, tc.input); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.input, got, tc.want)
		}
	}
	if live := h.Live(); live.SlabAutomove != 2 || live.SlabAutomoveRatio != 0.25 {
		t.Errorf("after automove 2 and ratio 0.25: %+v", live)
	}
}
