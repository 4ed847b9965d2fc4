package harness

import (
	"fmt"
	"os"
	"strconv"
)

// Server kinds.
const (
	KindTandem    = "tandem"
	KindMemcached = "memcached"
)

// Target is one server configuration of the matrix.
type Target struct {
	Name    string `json:"name"`           // e.g. "tandem-pool-t2", "memcached-t1"
	Kind    string `json:"kind"`           // KindTandem or KindMemcached
	Mode    string `json:"mode,omitempty"` // tandem: pool, inline or goroutine
	Threads int    `json:"threads"`        // -t: event loops / worker threads
	Workers int    `json:"workers,omitempty"`
	// MemoryMB, when > 0, is this target's -m instead of the run's
	// ServerLimits.MemoryMB (a scenario that measures eviction sets it).
	MemoryMB int `json:"memory_mb,omitempty"`
	// MaxConns, when > 0, is this target's -c instead of the run's.
	MaxConns int `json:"max_conns,omitempty"`
	// Extra are arguments appended to the command line (the restart
	// scenario's -e FILE).
	Extra []string `json:"extra_args,omitempty"`
}

// TandemTarget returns the tandem target for mode at -t threads; workers > 0
// adds --workers (pool mode).
func TandemTarget(mode string, threads, workers int) Target {
	name := fmt.Sprintf("tandem-%s-t%d", mode, threads)
	if workers > 0 {
		name += fmt.Sprintf("-w%d", workers)
	}
	return Target{Name: name, Kind: KindTandem, Mode: mode, Threads: threads, Workers: workers}
}

// MemcachedTarget returns the real memcached at -t threads.
func MemcachedTarget(threads int) Target {
	return Target{Name: fmt.Sprintf("memcached-t%d", threads), Kind: KindMemcached, Threads: threads}
}

// DefaultTargets is the standard matrix: tandem pool, inline and goroutine
// and memcached, each at -t 1 and -t 2.
func DefaultTargets() []Target {
	var ts []Target
	for _, t := range []int{1, 2} {
		for _, m := range []string{"pool", "inline", "goroutine"} {
			ts = append(ts, TandemTarget(m, t, 0))
		}
		ts = append(ts, MemcachedTarget(t))
	}
	return ts
}

// ServerLimits are the resource flags every target gets, so that no target
// is measured against a smaller memory or connection limit than another.
type ServerLimits struct {
	MemoryMB int `json:"memory_mb"` // -m
	MaxConns int `json:"max_conns"` // -c
}

// Args returns the command-line arguments (without the binary) that start t
// on 127.0.0.1:port. t.MemoryMB and t.MaxConns, when set, replace lim's.
func (t Target) Args(port int, lim ServerLimits) []string {
	mem, conns := lim.MemoryMB, lim.MaxConns
	if t.MemoryMB > 0 {
		mem = t.MemoryMB
	}
	if t.MaxConns > 0 {
		conns = t.MaxConns
	}
	a := []string{
		"-p", strconv.Itoa(port),
		"-l", "127.0.0.1",
		"-t", strconv.Itoa(t.Threads),
		"-m", strconv.Itoa(mem),
		"-c", strconv.Itoa(conns),
	}
	switch t.Kind {
	case KindTandem:
		a = append(a, "--mode", t.Mode)
		if t.Workers > 0 {
			a = append(a, "--workers", strconv.Itoa(t.Workers))
		}
	case KindMemcached:
		a = append(a, "-U", "0")
		if os.Geteuid() == 0 {
			a = append(a, "-u", "root") // memcached refuses to run as root otherwise
		}
	}
	return append(a, t.Extra...)
}
