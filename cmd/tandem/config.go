package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/reactor"
)

// Config is the effective configuration from the command line.
type Config struct {
	Port int
	// Listen lists the -l values: each an address, or an address with a
	// port ("127.0.0.1:11212", "[::1]:11212"); several -l and comma lists
	// add up, as in memcached.
	Listen           []string
	MemoryMB         int64
	Shards           int // 0: the cache's default for -m
	MaxConns         int
	Threads          int
	MaxItemSize      int
	DisableEvictions bool
	Verbose          int
	Mode             reactor.Mode
	Workers          int
	LogLevel         string
	LogFormat        string
	LogFile          string
	EnableShutdown   bool
	DisableFlushAll  bool
	DisableCAS       bool
	DisableDumps     bool // -X
	LargeClientFlags bool // --large-client-flags: 64-bit client flags
	Protocol         string
	ReqsPerEvent     int
	IdleTimeout      time.Duration
	ReusePort        bool
	WorkerWrites     bool  // accepted and ignored: the mode is gone (#41)
	LoopWrites       bool  // accepted and ignored: the default since #25
	MaxConnOutput    int   // per-connection cap on unsent replies, bytes
	MaxConnInput     int   // per-connection cap on an incomplete request, bytes
	BufferLimit      int64 // all connections' buffers together, bytes; -1 = no limit
	PidFile          string
	ShowVersion      bool
	ShowHelp         bool
	ShowLicense      bool
	MetricsListen    string
	Pprof            bool
	AuthFile         string
	Daemon           bool
	User             string
	LockMemory       bool // -k: mlockall
	CoreDumps        bool // -r: raise the core file limit
	Backlog          int  // -b: listen backlog
	// PrefixDelimiter is -D: the delimiter of per-prefix stats; setting it
	// turns those stats on, as in memcached.
	PrefixDelimiter byte
	// DetailEnabled starts per-prefix stats on (-D given).
	DetailEnabled bool
	// UnixSocket is -s and UnixMask -a (octal permissions of the socket).
	UnixSocket string
	UnixMask   uint32
	// ListenDefault says no -l was given: tandem listens on 127.0.0.1 where
	// memcached listens on every interface, and says so at start.
	ListenDefault bool
	// Extstore lists the -o ext_* options given (memcached's external
	// storage), which stop tandem at start: see unservable.
	Extstore []string

	// Accepted for memcached command-line compatibility; see their flags.
	UDPPort      int
	Options      []string
	LargePages   bool
	GrowthFactor float64
	SlabMinSize  int
	SASL         bool
	DisableWatch bool
	MemoryFile   string
	NapiIDs      int

	// TLS is -Z and the ssl_* keys of -o (tls.go).
	TLS TLSSettings

	// Warnings lists accepted but unsupported settings, logged once at start.
	Warnings []string
}

// Exit statuses, documented in --help and docs/operations.md.
const (
	exitOK      = 0
	exitFailure = 1 // the server could not start or stopped on an error
	exitUsage   = 2 // the command line is wrong
)

// parseSize parses memcached's size syntax (-I and tandem's byte flags):
// bytes with an optional k or m suffix.
func parseSize(s string) (int, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q (want bytes, or a number with k or m)", s)
	}
	return n * mult, nil
}

// ListenAddrs returns the host:port of every -l value, -p filling in where
// the value has no port.
func (c *Config) ListenAddrs() ([]string, error) {
	addrs := make([]string, 0, len(c.Listen))
	for _, l := range c.Listen {
		_, l = splitListen(l)
		host, port := l, strconv.Itoa(c.Port)
		if h, p, err := net.SplitHostPort(l); err == nil {
			if _, err := strconv.ParseUint(p, 10, 16); err != nil {
				return nil, fmt.Errorf("-l %q: bad port", l)
			}
			host, port = h, p
		} else if strings.Count(l, ":") == 1 {
			return nil, fmt.Errorf("-l %q: %v", l, err)
		} else {
			host = strings.TrimSuffix(strings.TrimPrefix(l, "["), "]")
		}
		if host == "" {
			return nil, fmt.Errorf("-l %q: no address", l)
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	return addrs, nil
}

// Validate reports every invalid setting.
func (c *Config) Validate() error {
	var errs []error
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("-p: port %d out of range 0..65535", c.Port))
	}
	if len(c.Listen) == 0 {
		errs = append(errs, errors.New("-l: no address"))
	} else if _, err := c.ListenAddrs(); err != nil {
		errs = append(errs, err)
	}
	if c.MemoryMB < 1 {
		errs = append(errs, fmt.Errorf("-m: memory limit must be >= 1 MB, got %d", c.MemoryMB))
	}
	if !cache.ValidShards(c.Shards) {
		errs = append(errs, fmt.Errorf("--shards: must be 0 or a power of two up to 65536, got %d", c.Shards))
	}
	if c.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("-c: conn limit must be >= 1, got %d", c.MaxConns))
	}
	if c.Threads < 1 || c.Threads > 1024 {
		errs = append(errs, fmt.Errorf("-t: threads must be 1..1024, got %d", c.Threads))
	}
	if c.MaxItemSize < 1024 || c.MaxItemSize > 1<<30 {
		errs = append(errs, fmt.Errorf("-I: item size must be 1k..1024m, got %d", c.MaxItemSize))
	} else if int64(c.MaxItemSize) > c.MemoryMB<<20 {
		errs = append(errs, fmt.Errorf("-I: item size %d is larger than the memory limit", c.MaxItemSize))
	}
	switch c.Mode {
	case reactor.ModePool, reactor.ModeInline, reactor.ModeGoroutine:
	default:
		errs = append(errs, fmt.Errorf("--mode: %q is not pool, inline or goroutine", c.Mode))
	}
	if c.ReqsPerEvent < 1 {
		errs = append(errs, fmt.Errorf("-R: must be >= 1, got %d", c.ReqsPerEvent))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers: must be >= 1, got %d", c.Workers))
	}
	switch c.Protocol {
	case "auto", "ascii", "binary":
	default:
		errs = append(errs, fmt.Errorf("-B: %q is not auto, ascii or binary", c.Protocol))
	}
	switch c.LogFormat {
	case "", "json", "console":
	default:
		errs = append(errs, fmt.Errorf("--log-format: %q is not json or console", c.LogFormat))
	}
	if _, err := zerolog.ParseLevel(c.LogLevel); err != nil || c.LogLevel == "" {
		errs = append(errs, fmt.Errorf("--log-level: %q is not trace, debug, info, warn or error", c.LogLevel))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, errors.New("--idle-timeout: must not be negative"))
	}
	if c.MaxConnOutput < 64<<10 {
		errs = append(errs, fmt.Errorf("--max-conn-output: must be at least 64k, got %d", c.MaxConnOutput))
	}
	if c.MaxConnInput < c.MaxItemSize+64<<10 {
		errs = append(errs, fmt.Errorf("--max-conn-input: must be at least -I + 64k (%d), got %d", c.MaxItemSize+64<<10, c.MaxConnInput))
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-listen: %q is not host:port", c.MetricsListen))
		}
	}
	if c.Pprof && c.MetricsListen == "" {
		errs = append(errs, errors.New("--pprof: needs --metrics-listen"))
	}
	if c.Backlog < 1 {
		errs = append(errs, fmt.Errorf("-b: listen backlog must be >= 1, got %d", c.Backlog))
	}
	if c.UnixMask > 0o777 {
		errs = append(errs, fmt.Errorf("-a: mask %o is not octal permissions (at most 777)", c.UnixMask))
	}
	if c.GrowthFactor <= 1 {
		errs = append(errs, fmt.Errorf("-f: growth factor must be greater than 1, got %g", c.GrowthFactor))
	}
	if c.SlabMinSize < 1 {
		errs = append(errs, fmt.Errorf("-n: slab minimum size must be >= 1, got %d", c.SlabMinSize))
	}
	errs = append(errs, c.validateTLS()...)
	errs = append(errs, c.unservable()...)
	return errors.Join(errs...)
}

// unservable lists the settings that would change what a client sees in a
// way tandem cannot give: starting anyway would run the server unsafely or
// silently differently, so they stop it at start.
func (c *Config) unservable() []error {
	var errs []error
	if len(c.Extstore) > 0 {
		errs = append(errs, fmt.Errorf("-o %s: external storage (extstore) is not supported by tandem; "+
			"starting RAM-only would silently lose the capacity it was given on disk. "+
			"Size -m for the items instead, or keep memcached for an extstore cache", strings.Join(c.Extstore, ",")))
	}
	if c.SASL && c.AuthFile == "" {
		errs = append(errs, errors.New("-S: SASL needs credentials in tandem: give them with -Y/--auth-file (user:password lines; SASL PLAIN)"))
	}
	return errs
}
