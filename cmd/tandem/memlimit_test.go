package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/rs/zerolog"
)

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name         string
		mb           int64 // -m
		charge, live int64
		want         int64
	}{
		{"empty small cache: the floor", 8, 0, 3 * mib, memFloor},
		{"just below the floor", 64, 11 * mib, 0, memFloor},
		{"-m 64 after a 1M x 100 B fill", 64, 17 * mib, 16 * mib, 17*mib + memAllowance + 8*mib},
		{"live heap beyond the charge gets GOGC's headroom", 64, 17 * mib, 37 * mib, 17*mib + 30*mib + memAllowance + 8*mib},
		{"-m 1024", 1024, 18 * mib, 17 * mib, 18*mib + memAllowance + 128*mib},
		{"heap-held large records", 1024, 900 * mib, 905 * mib, 900*mib + 7*mib + memAllowance + 128*mib + mib/2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := memoryLimit(tc.mb, tc.charge, tc.live); got != tc.want {
				t.Errorf("memoryLimit(%d, %d, %d) = %d, want %d", tc.mb, tc.charge, tc.live, got, tc.want)
			}
		})
	}
}

// TestMemLimitEnv checks that GOGC and GOMEMLIMIT in the environment keep their settings, and
// that without them the limit follows the charge.
func TestMemLimitEnv(t *testing.T) {
	gc := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name      string
		getenv    func(string) string
		wantGC    int   // GOGC after newMemLimit
		wantLimit int64 // limit after a tick with a charge of 100 MiB at -m 64, or -1: left alone
	}{
		{"neither set", env(), gcPercent, 100<<20 + memAllowance + 8<<20},
		{"GOGC set", env("GOGC", "100"), 100, 100<<20 + memAllowance + 8<<20},
		{"GOMEMLIMIT set", env("GOMEMLIMIT", "1GiB"), gcPercent, -1},
		{"both set", env("GOGC", "off", "GOMEMLIMIT", "1GiB"), 100, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			l := newMemLimit(zerolog.Nop(), 64, tc.getenv)
			if got := debug.SetGCPercent(100); got != tc.wantGC {
				t.Errorf("GOGC %d, want %d", got, tc.wantGC)
			}
			if got := debug.SetMemoryLimit(-1); tc.wantLimit < 0 && got != math.MaxInt64 {
				t.Errorf("GOMEMLIMIT in the environment: the limit was set to %d", got)
			}
			l.tick(100 << 20)
			got := debug.SetMemoryLimit(-1)
			switch {
			case tc.wantLimit < 0 && got != math.MaxInt64:
				t.Errorf("GOMEMLIMIT in the environment: a tick set the limit to %d", got)
			case tc.wantLimit >= 0 && got < tc.wantLimit:
				// The live heap of the test binary may add to it, never take away.
				t.Errorf("limit %d after a tick with 100 MiB charged, want at least %d", got, tc.wantLimit)
			}
			l.setMB(1024)
			l.tick(100 << 20)
			if got2 := debug.SetMemoryLimit(-1); tc.wantLimit >= 0 && got2 != got+120<<20 {
				t.Errorf("after setMB(1024): limit %d, want %d (120 MiB more)", got2, got+120<<20)
			}
		})
	}
}
