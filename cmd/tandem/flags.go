package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tandemcache/tandem/reactor"
)

// The command line takes every flag of memcached 1.6.18 (`memcached -h`),
// short and long, so that tandem starts under a memcached command line, plus
// tandem's own. A memcached flag does what it does in memcached where that
// maps onto tandem; where it does not, tandem logs one warning naming it and
// starts, unless running would change what clients see (then it refuses to
// start: see Config.unservable).

// flagGroup is a heading of --help and the flags under it.
type flagGroup struct {
	title string
	names []string
}

var flagGroups = []flagGroup{
	{"Listening", []string{"port", "listen", "unix-socket", "unix-mask", "listen-backlog", "udp-port", "conn-limit", "idle-timeout", "reuseport"}},
	{"Memory and items", []string{"memory-limit", "max-item-size", "shards", "disable-evictions", "disable-cas", "lock-memory", "memory-file"}},
	{"Scheduling and connection buffers", []string{"mode", "threads", "workers", "max-reqs-per-event", "conn-buffer-limit", "max-conn-input", "max-conn-output", "loop-writes", "worker-writes"}},
	{"Protocol and security", []string{"protocol", "auth-file", "enable-sasl", "enable-shutdown", "disable-flush-all", "disable-dumping", "disable-watch", "prefix-delimiter", "large-client-flags"}},
	{"TLS (settings are memcached's -o ssl_* keys, see -o and docs/operations.md)", []string{"enable-ssl", "tls-handshake-timeout"}},
	{"Process", []string{"daemon", "pidfile", "user", "enable-coredumps", "verbose", "log-level", "log-format", "log-file", "metrics-listen", "pprof", "help", "version", "license"}},
	{"Accepted from memcached, without effect in tandem (a warning is logged)", append([]string{"extended"}, inertFlagNames...)},
}

// inertFlagNames are the memcached flags tandem accepts without effect, in
// --help's order; inertFlagWarnings holds the warning each logs when given.
// --help, the man page and the start-up warnings come from these two
// (TestFlagTable checks that they agree with each other and the flag set).
var inertFlagNames = []string{"slab-growth-factor", "slab-min-size", "enable-largepages", "napi-ids"}

var inertFlagWarnings = map[string]string{
	"slab-growth-factor": "-f: tandem's item size classes are its own, not made from -f; ignored",
	"slab-min-size":      "-n: tandem's item size classes are its own, not made from -n; ignored",
	"enable-largepages":  "-L: large memory pages are not used; ignored",
	"napi-ids":           "-N: NAPI ids are not used by tandem; ignored",
}

// parseFlags reads the command line into a Config. The flag set is returned
// for printing --help.
func parseFlags(args []string) (*Config, *pflag.FlagSet, error) {
	c := &Config{TLS: defaultTLSSettings()}
	fs := pflag.NewFlagSet("tandem", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, help by usage
	fs.SortFlags = false
	var mode, itemSize, connOutput, connInput, bufLimit, unixMask, delimiter string
	var listen []string

	// Listening.
	fs.IntVarP(&c.Port, "port", "p", 11211, "TCP port to listen on (0 picks a free port, logged at start)")
	fs.StringArrayVarP(&listen, "listen", "l", []string{"127.0.0.1"}, "interface address to listen on, optionally with :port; 0.0.0.0 for all (memcached: all interfaces); several -l or a comma list listen on each, a repeated one once; without -l, $"+listenEnv+" when set (the container image's 0.0.0.0)")
	fs.StringVarP(&c.UnixSocket, "unix-socket", "s", "", "unix domain socket to listen on instead of TCP, as memcached (a stale socket file is replaced, a live one refused; removed at exit)")
	fs.StringVarP(&unixMask, "unix-mask", "a", "700", "octal permissions of the unix socket")
	fs.IntVarP(&c.Backlog, "listen-backlog", "b", 1024, "backlog queue of the listening socket")
	fs.IntVarP(&c.UDPPort, "udp-port", "U", 0, "UDP port: tandem does not serve UDP, any other value than 0 is ignored with a warning")
	fs.IntVarP(&c.MaxConns, "conn-limit", "c", 1024, "max simultaneous connections; extra ones get \"ERROR Too many open connections\"")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 0, "close connections that complete no request for this long: idle, trickling a partial request, or not reading their replies (e.g. 30s; 0 = never; memcached -o idle_timeout=SECONDS)")
	fs.BoolVar(&c.ReusePort, "reuseport", false, "SO_REUSEPORT: one listening socket per event loop")

	// Memory and items.
	fs.Int64VarP(&c.MemoryMB, "memory-limit", "m", 64, "memory for items in megabytes, their index included (the process needs about 1.1x this plus 10-20 MB)")
	fs.StringVarP(&itemSize, "max-item-size", "I", "1m", "max item size, bytes with optional k/m suffix (key+value+48 bytes must fit; 1k..1024m)")
	fs.IntVar(&c.Shards, "shards", 0, "cache shards, each with its own lock and pages: a power of two; 0 = one per 16 MB of -m, 1 to 64 (more shards let more cores store at once, fewer fill -m further with values of many sizes; lowered until a shard holds an item of -I)")
	fs.BoolVarP(&c.DisableEvictions, "disable-evictions", "M", false, "return an error on memory exhausted instead of evicting items")
	fs.BoolVarP(&c.DisableCAS, "disable-cas", "C", false, "report CAS uniques as 0")
	fs.BoolVarP(&c.LockMemory, "lock-memory", "k", false, "lock all process memory in RAM (mlockall; a warning if the system refuses)")

	// Scheduling.
	fs.StringVar(&mode, "mode", "pool", "scheduling: pool (event loops + worker pool), inline (loops execute), goroutine (one goroutine per connection)")
	fs.IntVarP(&c.Threads, "threads", "t", runtime.GOMAXPROCS(0), "event loops (reactor threads)")
	fs.Lookup("threads").DefValue = "GOMAXPROCS, here " + strconv.Itoa(runtime.GOMAXPROCS(0))
	fs.IntVar(&c.Workers, "workers", 2*runtime.GOMAXPROCS(0), "worker pool size in pool mode")
	fs.Lookup("workers").DefValue = "2 x GOMAXPROCS, here " + strconv.Itoa(2*runtime.GOMAXPROCS(0))
	fs.IntVarP(&c.ReqsPerEvent, "max-reqs-per-event", "R", 20, "requests one connection runs before the others get their turn; a longer pipeline is served in slices, in order")
	fs.StringVar(&bufLimit, "conn-buffer-limit", "16m", "all connections' buffers together (queued replies, framed and unparsed input; bytes, k/m suffix; 0 = no limit; memcached -o read_buf_mem_limit=MB): above it a connection holds no reply its socket refused, and one reading a request over 16k is closed")
	fs.StringVar(&connInput, "max-conn-input", "64m", "close a connection whose incomplete request (a value or line still arriving) exceeds this (bytes, k/m suffix; at least -I + 64k, raised to that when not given). A client sending complete requests faster than they run is paused, not closed (pool and inline modes pause through Linux epoll; on other systems they close it)")
	fs.StringVar(&connOutput, "max-conn-output", "64m", "close a connection whose replies to one slice of requests exceed this (bytes, k/m suffix): a multi-get of many large values. A client that does not read is paused once 256k of its replies are unsent, not closed (Linux; see --max-conn-input)")
	fs.BoolVar(&c.WorkerWrites, "worker-writes", false, "ignored (a warning): workers never write to sockets; pool-mode replies are written by the connection's event loop")
	fs.BoolVar(&c.LoopWrites, "loop-writes", false, "ignored (a warning): pool workers hand their replies back to the event loop by default")

	// Protocol and security.
	fs.StringVarP(&c.Protocol, "protocol", "B", "auto", "binding protocol: auto, ascii or binary")
	fs.StringVarP(&c.AuthFile, "auth-file", "Y", "", "require authentication with the user:password lines of this file: SASL PLAIN on binary connections, memcached's -Y token (a set whose data is \"user password\") on text ones")
	fs.BoolVarP(&c.SASL, "enable-sasl", "S", false, "require SASL authentication on binary connections; needs -Y (refused without it)")
	fs.BoolVarP(&c.EnableShutdown, "enable-shutdown", "A", false, "allow the shutdown command")
	fs.BoolVarP(&c.DisableFlushAll, "disable-flush-all", "F", false, "refuse flush_all")
	fs.BoolVarP(&c.DisableDumps, "disable-dumping", "X", false, "refuse stats cachedump and lru_crawler metadump")
	fs.BoolVarP(&c.DisableWatch, "disable-watch", "W", false, "refuse the watch command (log streaming)")
	fs.StringVarP(&delimiter, "prefix-delimiter", "D", ":", "the character that ends a key prefix in per-prefix stats (stats detail); giving it turns those stats on")
	fs.BoolVar(&c.LargeClientFlags, "large-client-flags", false, "64-bit client flags in the text and meta protocols (memcached's build option --enable-large-client-flags; binary extras stay 32 bits): 4 more bytes per item; without it flags are 32 bits and a larger number is truncated, as memcached stores it")

	// Process.
	fs.BoolVarP(&c.Daemon, "daemon", "d", false, "run in the background: return once the server listens (logs go to --log-file, else to standard error where it is a file or a pipe, else are discarded)")
	fs.StringVarP(&c.PidFile, "pidfile", "P", "", "write the process id to this file (removed at exit)")
	fs.StringVarP(&c.User, "user", "u", "", "when started as root, switch to this user before listening")
	fs.BoolVarP(&c.CoreDumps, "enable-coredumps", "r", false, "raise the core file limit to its maximum and dump core on a fatal error")
	fs.CountVarP(&c.Verbose, "verbose", "v", "-v: debug log; -vv: also every command and reply line (memcached's -vv); -vvv: trace")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level without -v: trace, debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "", "log format: json or console (console on a terminal, else json, when not given)")
	fs.StringVar(&c.LogFile, "log-file", "", "append the log to this file instead of standard error")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "", "serve Prometheus metrics over HTTP on this host:port at /metrics, e.g. 127.0.0.1:9150 (off when not given)")
	fs.BoolVar(&c.Pprof, "pprof", false, "also serve Go's net/http/pprof at /debug/pprof/ on the --metrics-listen address")
	fs.BoolVarP(&c.ShowHelp, "help", "h", false, "print this help and exit")
	fs.BoolVarP(&c.ShowVersion, "version", "V", false, "print the version and exit")
	fs.BoolVarP(&c.ShowLicense, "license", "i", false, "print tandem's license and exit")

	// memcached's, without effect.
	fs.StringArrayVarP(&c.Options, "extended", "o", nil, "memcached's extended options key[=value],...: idle_timeout maps to --idle-timeout, maxconns_fast is what tandem does, the ssl_* keys configure TLS (-Z); the extstore keys (ext_*) are refused, every other key memcached 1.6.18 knows is accepted with a warning, an unknown one refused")
	fs.Float64VarP(&c.GrowthFactor, "slab-growth-factor", "f", 1.25, "memcached's slab chunk growth factor (tandem's size classes are its own)")
	fs.IntVarP(&c.SlabMinSize, "slab-min-size", "n", 48, "memcached's minimum slab chunk bytes (tandem's size classes are its own)")
	fs.BoolVarP(&c.LargePages, "enable-largepages", "L", false, "large memory pages (not used)")
	fs.IntVarP(&c.NapiIDs, "napi-ids", "N", 0, "NAPI ids (not used)")

	// TLS.
	fs.BoolVarP(&c.TLS.Enabled, "enable-ssl", "Z", false, "serve TLS on every -l listener but those prefixed notls: (mtls: also requires a client certificate); needs -o ssl_chain_cert=FILE,ssl_key=FILE; more: -o ssl_ca_cert, ssl_verify_mode (0 none, 1 request, 2 require, 3 require once), ssl_min_version (2 or tlsv1.2, 3 or tlsv1.3), ssl_ciphers, ssl_session_cache, ssl_keyformat (1 PEM, 2 DER)")
	fs.DurationVar(&c.TLS.HandshakeTimeout, "tls-handshake-timeout", c.TLS.HandshakeTimeout, "close a TLS connection whose handshake has not completed within this time (counted in ssl_handshake_errors)")

	// Warm restart.
	fs.StringVarP(&c.MemoryFile, "memory-file", "e", "", "keep the items in this file (put it on tmpfs) so that a restart after a graceful stop finds them again (outside Linux the file keeps the blocks of freed pages)")

	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.Mode = reactor.Mode(mode)
	c.ListenDefault = !fs.Changed("listen")
	if env := os.Getenv(listenEnv); c.ListenDefault && env != "" {
		listen, c.ListenDefault = []string{env}, false
	}
	for _, l := range listen {
		// A notls: or mtls: prefix stays on the value (memcached's
		// "inter" setting shows it); ListenAddrs cuts it off.
		c.Listen = append(c.Listen, strings.Split(l, ",")...)
	}
	c.Listen = dedupeListen(c.Listen, c.Port)
	mask, err := strconv.ParseUint(unixMask, 8, 32)
	if err != nil {
		return nil, fs, fmt.Errorf("-a: %q is not an octal mask", unixMask)
	}
	c.UnixMask = uint32(mask)
	if len(delimiter) != 1 {
		return nil, fs, fmt.Errorf("-D: %q is not one character", delimiter)
	}
	c.PrefixDelimiter = delimiter[0]
	if c.MaxItemSize, err = parseSize(itemSize); err != nil {
		return nil, fs, fmt.Errorf("-I: %w", err)
	}
	if c.MaxConnOutput, err = parseSize(connOutput); err != nil {
		return nil, fs, fmt.Errorf("--max-conn-output: %w", err)
	}
	if c.MaxConnInput, err = parseSize(connInput); err != nil {
		return nil, fs, fmt.Errorf("--max-conn-input: %w", err)
	}
	if bufLimit == "0" {
		c.BufferLimit = -1
	} else if n, err := parseSize(bufLimit); err != nil {
		return nil, fs, fmt.Errorf("--conn-buffer-limit: %w", err)
	} else {
		c.BufferLimit = int64(n)
	}
	if !fs.Changed("max-conn-input") {
		// A value of -I bytes must fit in the input buffer.
		c.MaxConnInput = max(c.MaxConnInput, c.MaxItemSize+64<<10)
	}
	if err := c.applyExtended(); err != nil {
		return nil, fs, err
	}
	c.DetailEnabled = fs.Changed("prefix-delimiter")
	c.collectWarnings(fs)
	return c, fs, nil
}

// collectWarnings lists, once each, the memcached flags given that tandem
// accepts without acting on them.
func (c *Config) collectWarnings(fs *pflag.FlagSet) {
	changed := func(name string) bool { return fs.Changed(name) }
	if c.UDPPort != 0 {
		c.Warnings = append(c.Warnings, "-U: UDP is not served by tandem; TCP only")
	}
	if c.LoopWrites {
		c.Warnings = append(c.Warnings, "--loop-writes: ignored; pool workers hand their replies back to the event loop")
	}
	if c.WorkerWrites {
		c.Warnings = append(c.Warnings, "--worker-writes: ignored; workers no longer write to sockets: pool-mode replies are written by the connection's event loop")
	}
	if host, _, err := net.SplitHostPort(c.MetricsListen); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		c.Warnings = append(c.Warnings, "--metrics-listen "+c.MetricsListen+": /metrics (and --pprof) is served on every interface; give an address (127.0.0.1:PORT) to keep it local")
	}
	if changed("unix-mask") && c.UnixSocket == "" {
		c.Warnings = append(c.Warnings, "-a: applies to the unix socket of -s, which is not given; ignored")
	}
	for _, name := range inertFlagNames {
		if changed(name) {
			c.Warnings = append(c.Warnings, inertFlagWarnings[name])
		}
	}
}

// printUsage writes --help: the flags by group, each with its default once,
// and the exit statuses.
func printUsage(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "tandem %s: a memcached-compatible cache server (memcached %s protocols)\n\n", version, protocolVersion)
	fmt.Fprintf(w, "Usage: tandem [flags]\n\nIt takes memcached 1.6.18's flags and behaves as memcached does where tandem can;\nsee docs/operations.md.\n")
	for _, g := range flagGroups {
		sub := pflag.NewFlagSet(g.title, pflag.ContinueOnError)
		sub.SortFlags = false
		for _, n := range g.names {
			sub.AddFlag(fs.Lookup(n))
		}
		fmt.Fprintf(w, "\n%s:\n%s", g.title, sub.FlagUsagesWrapped(100))
	}
	fmt.Fprintf(w, "\nExit status: %d after a clean shutdown (signal or shutdown command), %d when the server\ncannot start or stops on an error, %d for a wrong command line.\n", exitOK, exitFailure, exitUsage)
}
