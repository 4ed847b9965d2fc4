package loadgen

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Workload names what each connection does in a loop.
type Workload string

// Workloads.
const (
	// Mixed issues sets and gets at the SetRatio:GetRatio mix.
	Mixed Workload = "mixed"
	// LookAside gets a key and, on a miss, sets it (a look-aside cache in
	// front of a slower store). Requests counts the gets.
	LookAside Workload = "lookaside"
)

// Config describes one load-generation run. The zero value is not usable:
// start from DefaultConfig.
type Config struct {
	Addr  string `json:"addr"`  // host:port of the server
	Conns int    `json:"conns"` // concurrent connections, one goroutine each
	Depth int    `json:"depth"` // requests in flight per connection (pipeline depth)

	// The run stops at whichever comes first: Requests requests in total
	// (0 = no count bound), Duration of wall time (0 = no duration bound), or
	// HardCap (always > 0), after which Result.HitHardCap is set.
	Requests int64         `json:"requests"`
	Duration time.Duration `json:"duration_ns"`
	HardCap  time.Duration `json:"hard_cap_ns"`

	Workload  Workload `json:"workload"`
	SetRatio  int      `json:"set_ratio"` // Mixed only: sets per SetRatio+GetRatio requests
	GetRatio  int      `json:"get_ratio"`
	Keys      uint64   `json:"keys"` // key space size
	KeyPrefix string   `json:"key_prefix"`
	Dist      Dist     `json:"dist"`
	ZipfS     float64  `json:"zipf_s,omitempty"`
	// ValueSizes lists value sizes in bytes; with several, each key gets one
	// of them, picked by a hash of the key.
	ValueSizes []int  `json:"value_sizes"`
	Verify     bool   `json:"verify"` // check every value read against Values
	Seed       uint64 `json:"seed"`   // value contents; also the key streams when KeySeed is 0
	// KeySeed, when not 0, seeds the key streams and the set:get draws
	// instead of Seed, leaving the values alone: a second run over data an
	// earlier run stored can draw fresh keys and still verify every value.
	KeySeed uint64 `json:"key_seed,omitempty"`

	DialTimeout time.Duration `json:"dial_timeout_ns"`
	IOTimeout   time.Duration `json:"io_timeout_ns"` // bound on every write and reply read

	// Progress, when not nil, receives a one-line progress report every
	// ProgressEvery (default 1 s). On a terminal the line is rewritten in
	// place with '\r'; anywhere else (a file, a pipe, a buffer) each report
	// is a line of its own.
	Progress      io.Writer     `json:"-"`
	ProgressEvery time.Duration `json:"-"`
}

// DefaultConfig returns a small, bounded mixed workload against
// 127.0.0.1:11211: 4 connections, depth 1, 10,000 requests at 1:10 set:get
// over 10,000 uniform keys with 32-byte values, verified.
func DefaultConfig() Config {
	return Config{
		Addr:        "127.0.0.1:11211",
		Conns:       4,
		Depth:       1,
		Requests:    10000,
		HardCap:     10 * time.Minute,
		Workload:    Mixed,
		SetRatio:    1,
		GetRatio:    10,
		Keys:        10000,
		KeyPrefix:   "key:",
		Dist:        Uniform,
		ZipfS:       0.99,
		ValueSizes:  []int{32},
		Verify:      true,
		Seed:        1,
		DialTimeout: 5 * time.Second,
		IOTimeout:   10 * time.Second,
	}
}

// ErrConfig marks an invalid Config.
var ErrConfig = errors.New("loadgen: invalid config")

// Validate checks c and reports the first problem found.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...)
	}
	switch {
	case c.Addr == "":
		return bad("empty address")
	case c.Conns < 1:
		return bad("conns %d < 1", c.Conns)
	case c.Depth < 1:
		return bad("depth %d < 1", c.Depth)
	case c.Requests < 0 || c.Duration < 0:
		return bad("negative requests or duration")
	case c.Requests == 0 && c.Duration == 0:
		return bad("unbounded run: set requests and/or duration")
	case c.HardCap <= 0:
		return bad("hard cap must be > 0")
	case c.Keys < 1:
		return bad("keys must be >= 1")
	case len(c.ValueSizes) == 0:
		return bad("no value sizes")
	case len(c.KeyPrefix)+20 > 250:
		return bad("key prefix too long (keys are at most 250 bytes)")
	case strings.ContainsAny(c.KeyPrefix, " \r\n\t\x00"):
		return bad("key prefix contains whitespace or control bytes")
	}
	for _, s := range c.ValueSizes {
		if s < 0 {
			return bad("negative value size %d", s)
		}
	}
	switch c.Workload {
	case Mixed:
		if c.SetRatio < 0 || c.GetRatio < 0 || c.SetRatio+c.GetRatio == 0 {
			return bad("set:get ratio %d:%d", c.SetRatio, c.GetRatio)
		}
	case LookAside:
	default:
		return bad("unknown workload %q", c.Workload)
	}
	switch c.Dist {
	case Uniform, Sequential:
	case Zipfian:
		if !(c.ZipfS > 0) || math.IsInf(c.ZipfS, 0) {
			return bad("zipf exponent %v (must be > 0)", c.ZipfS)
		}
	default:
		return bad("unknown key distribution %q", c.Dist)
	}
	return nil
}

// ParseRatio parses "S:G" (e.g. "1:10") into set and get weights.
func ParseRatio(s string) (set, get int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if ok {
		set, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			get, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || set < 0 || get < 0 || set+get == 0 {
		return 0, 0, fmt.Errorf("%w: ratio %q, want set:get like 1:10", ErrConfig, s)
	}
	return set, get, nil
}

// ParseSizes parses a comma-separated list of byte sizes ("32" or
// "2,4,9,19"). A size may end in k or m (KiB, MiB).
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		mult := 1
		switch {
		case strings.HasSuffix(f, "k"):
			mult, f = 1<<10, f[:len(f)-1]
		case strings.HasSuffix(f, "m"):
			mult, f = 1<<20, f[:len(f)-1]
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: value size %q", ErrConfig, f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}
