package main

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tandemcache/tandem/reactor"
)

// Config is the effective configuration from the command line.
type Config struct {
	Port             int
	Listen           string
	MemoryMB         int64
	MaxConns         int
	Threads          int
	MaxItemSize      int
	DisableEvictions bool
	Verbose          int
	Mode             reactor.Mode
	Workers          int
	LogLevel         string
	LogFormat        string
	EnableShutdown   bool
	DisableFlushAll  bool
	DisableCAS       bool
	Protocol         string
	ReqsPerEvent     int
	IdleTimeout      time.Duration
	ReusePort        bool
	WorkerWrites     bool
	MaxConnOutput    int // per-connection cap on unsent replies, bytes
	MaxConnInput     int // per-connection cap on unparsed input, bytes
	PidFile          string
	ShowVersion      bool
	MetricsListen    string
	Pprof            bool
	AuthFile         string

	// Accepted for memcached command-line compatibility only.
	UDPPort  int
	User     string
	Options  []string
	Daemon   bool
	Socket   string
	LargeMem bool

	// Warnings lists accepted but unsupported settings, logged once at start.
	Warnings []string
}

// maxItemSizeFlag parses memcached's -I syntax: bytes with an optional k or m suffix.
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

// parseFlags reads the command line into a Config. It returns
// pflag.ErrHelp for --help.
func parseFlags(args []string) (*Config, *pflag.FlagSet, error) {
	c := &Config{}
	fs := pflag.NewFlagSet("tandem", pflag.ContinueOnError)
	fs.SortFlags = false
	var mode, itemSize string
	fs.IntVarP(&c.Port, "port", "p", 11211, "TCP port to listen on (0 picks a free port, logged at start)")
	fs.StringVarP(&c.Listen, "listen", "l", "127.0.0.1", "interface address to listen on (default loopback only; 0.0.0.0 for all)")
	fs.Int64VarP(&c.MemoryMB, "memory-limit", "m", 64, "memory for items in megabytes, their index included (the process needs about 1.1x this plus 10-20 MB)")
	fs.IntVarP(&c.MaxConns, "conn-limit", "c", 1024, "max simultaneous connections; extra ones get \"ERROR Too many open connections\"")
	fs.IntVarP(&c.Threads, "threads", "t", runtime.GOMAXPROCS(0), "event loops (reactor threads); default GOMAXPROCS")
	fs.StringVarP(&itemSize, "max-item-size", "I", "1m", "max item size, bytes with optional k/m suffix (key+value+48 bytes must fit)")
	fs.BoolVarP(&c.DisableEvictions, "disable-evictions", "M", false, "return an error on memory exhausted instead of evicting items")
	fs.CountVarP(&c.Verbose, "verbose", "v", "verbose logging (-v debug, -vv trace); overrides --log-level")
	fs.StringVar(&mode, "mode", "pool", "scheduling: pool (event loops + worker pool), inline (loops execute), goroutine (one goroutine per connection)")
	fs.IntVar(&c.Workers, "workers", 2*runtime.GOMAXPROCS(0), "worker pool size in pool mode (default 2 x GOMAXPROCS)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "", "log format: json or console (default console on a terminal, else json)")
	fs.BoolVarP(&c.EnableShutdown, "enable-shutdown", "A", false, "allow the shutdown command")
	fs.BoolVarP(&c.DisableFlushAll, "disable-flush-all", "F", false, "refuse flush_all")
	fs.BoolVarP(&c.DisableCAS, "disable-cas", "C", false, "report CAS uniques as 0")
	fs.StringVarP(&c.Protocol, "protocol", "B", "auto", "binding protocol: auto, ascii or binary")
	fs.IntVarP(&c.ReqsPerEvent, "max-reqs-per-event", "R", 20, "accepted for memcached compatibility (tandem runs every complete request of a read)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 0, "close connections that complete no request for this long: idle, trickling a partial request, or not reading their replies (e.g. 30s; 0 = never; memcached -o idle_timeout=SECONDS)")
	fs.BoolVar(&c.ReusePort, "reuseport", false, "SO_REUSEPORT: one listening socket per event loop")
	var connOutput, connInput string
	fs.StringVar(&connOutput, "max-conn-output", "64m", "close a connection whose unsent replies exceed this (bytes, k/m suffix): a client that pipelines requests without reading")
	fs.StringVar(&connInput, "max-conn-input", "64m", "close a connection whose unparsed input exceeds this (bytes, k/m suffix; at least -I + 64k, raised to that by default)")
	fs.BoolVar(&c.WorkerWrites, "worker-writes", false, "pool mode: workers write replies to the socket themselves while nothing is queued on the loop (saves a loop hop per batch)")
	fs.StringVarP(&c.PidFile, "pidfile", "P", "", "write the process id to this file")
	fs.BoolVarP(&c.ShowVersion, "version", "V", false, "print the version and exit")
	fs.StringVarP(&c.AuthFile, "auth-file", "Y", "", "require authentication with the user:password lines of this file: SASL PLAIN on binary connections, memcached's -Y token (a set whose data is \"user password\") on text ones")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "", "serve Prometheus metrics over HTTP on this host:port at /metrics, e.g. 127.0.0.1:9150 (default off)")
	fs.BoolVar(&c.Pprof, "pprof", false, "also serve Go's net/http/pprof at /debug/pprof/ on the --metrics-listen address")
	fs.IntVarP(&c.UDPPort, "udp-port", "U", 0, "UDP port: tandem does not serve UDP; only 0 is meaningful")
	fs.StringVarP(&c.User, "user", "u", "", "accepted for memcached compatibility; tandem does not change user (use systemd DynamicUser)")
	fs.StringArrayVarP(&c.Options, "extended", "o", nil, "memcached extended options key=value (idle_timeout maps to --idle-timeout; others are ignored with a warning)")
	fs.BoolVarP(&c.Daemon, "daemon", "d", false, "accepted for compatibility; tandem always runs in the foreground")
	fs.StringVarP(&c.Socket, "unix-socket", "s", "", "not supported (TCP only); ignored with a warning")
	fs.BoolVarP(&c.LargeMem, "enable-largepages", "L", false, "accepted for compatibility; ignored")

	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.Mode = reactor.Mode(mode)
	size, err := parseSize(itemSize)
	if err != nil {
		return nil, fs, fmt.Errorf("-I: %w", err)
	}
	c.MaxItemSize = size
	if c.MaxConnOutput, err = parseSize(connOutput); err != nil {
		return nil, fs, fmt.Errorf("--max-conn-output: %w", err)
	}
	if c.MaxConnInput, err = parseSize(connInput); err != nil {
		return nil, fs, fmt.Errorf("--max-conn-input: %w", err)
	}
	if !fs.Changed("max-conn-input") {
		// A value of -I bytes must fit in the input buffer.
		c.MaxConnInput = max(c.MaxConnInput, c.MaxItemSize+64<<10)
	}
	if err := c.applyExtended(); err != nil {
		return nil, fs, err
	}
	c.collectWarnings(fs)
	return c, fs, nil
}

// applyExtended maps memcached's -o options onto tandem's settings.
func (c *Config) applyExtended() error {
	for _, opt := range c.Options {
		for _, kv := range strings.Split(opt, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "idle_timeout":
				secs, err := strconv.Atoi(v)
				if err != nil || secs < 0 {
					return fmt.Errorf("-o idle_timeout: bad seconds %q", v)
				}
				c.IdleTimeout = time.Duration(secs) * time.Second
			case "":
			default:
				c.Warnings = append(c.Warnings, "-o "+kv+": not supported by tandem, ignored")
			}
		}
	}
	return nil
}

func (c *Config) collectWarnings(fs *pflag.FlagSet) {
	if c.UDPPort != 0 {
		c.Warnings = append(c.Warnings, "-U: UDP is not served by tandem; TCP only")
	}
	if c.User != "" {
		c.Warnings = append(c.Warnings, "-u: tandem does not switch users; run it as the intended user")
	}
	if c.Daemon {
		c.Warnings = append(c.Warnings, "-d: tandem runs in the foreground; use a service manager")
	}
	if c.Socket != "" {
		c.Warnings = append(c.Warnings, "-s: unix sockets are not supported; listening on TCP only")
	}
	if c.LargeMem {
		c.Warnings = append(c.Warnings, "-L: large pages are not used")
	}
	if fs.Changed("max-reqs-per-event") {
		c.Warnings = append(c.Warnings, "-R: tandem executes every complete request of a read; ignored")
	}
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	var errs []error
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("-p: port %d out of range 0..65535", c.Port))
	}
	if c.MemoryMB < 1 {
		errs = append(errs, fmt.Errorf("-m: memory limit must be >= 1 MB, got %d", c.MemoryMB))
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
	return errors.Join(errs...)
}
