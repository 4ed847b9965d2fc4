package main

import (
	"runtime"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/reactor"
)

// TestSpareProcessor: with more than one CPU the gnet modes get GOMAXPROCS of
// at least loops + 1; one CPU, goroutine mode and an explicit GOMAXPROCS are
// left alone.
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
		{"pool, as many loops as Ps", "", reactor.ModePool, 2, 2, 3},
		{"inline, more loops than Ps", "", reactor.ModeInline, 2, 4, 5},
		{"pool, Ps to spare", "", reactor.ModePool, 4, 2, 4},
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
