package main

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tandemcache/tandem/protocol/handler"
	"github.com/tandemcache/tandem/reactor"
)

// The flag table: every command-line option, declared once. A flag's entry
// gives its name, default and help text (--help and the man page, by help
// group), the start-up warning when it is one of memcached's without effect
// in tandem, the memcached -o keys that set the same thing, and the "stats
// settings" rows that report it. memcached's -o keys that have no flag of
// tandem's are entries without a flag name. parseFlags registers the flags
// from it, applyExtended resolves the -o keys through it, collectWarnings
// logs its warnings and settings prints its rows (in memcached's order,
// settingsOrder); fixedSettings holds the rows no option sets.
//
// To add a flag, add one entry to options, in its help group where --help
// should show it.

// option is one entry of the flag table.
type option struct {
	name, short string // the flag (--name, -short); "" for an -o key of memcached's that has no flag
	group       string // the --help heading it is shown under (helpGroups)
	// def is the default: an int, int64, bool, string, float64,
	// time.Duration, []string (a repeatable flag), counter (-v, -vv), or a
	// func() int for a default that depends on the machine.
	def any
	// defText is --help's default where def depends on the machine; a %d
	// in it is the value here.
	defText string
	help    string // "{keys}" in it is replaced by the -o keys the table maps
	// field is the Config field the flag sets, a pointer of def's type; nil
	// for a string flag that set converts.
	field func(c *Config) any
	// set runs after parsing, in table order: text is the flag's value for
	// a flag without field, given says whether the command line has it.
	set func(c *Config, text string, given bool) error
	// inert is why a memcached flag or -o key has no effect in tandem: given,
	// it is logged as a warning ("-f: WHY; ignored", "-o KEY=V: WHY; ignored").
	inert string
	// warn returns the start-up warning for what the flag's value says, or "".
	warn func(c *Config, given bool) string
	// oKeys are memcached's -o keys for the same setting, applied by oSet
	// (kv is "key=value" as given); without oSet they are accepted, with
	// inert's warning when there is one.
	oKeys []string
	oSet  func(c *Config, kv string) (warn string, err error)
	// settings are the "stats settings" rows that report it.
	settings []settingRow
}

// counter is the default of a flag counted by repetition (-v, -vv, -vvv).
type counter int

// settingRow is one row of "stats settings": its name and how its value is
// rendered from the configuration and what commands changed at run time.
type settingRow struct {
	name  string
	value func(c *Config, l handler.Live) string
}

// The --help headings, in order.
const (
	gListen  = "Listening"
	gMemory  = "Memory and items"
	gSched   = "Scheduling and connection buffers"
	gProto   = "Protocol and security"
	gTLS     = "TLS (settings are memcached's -o ssl_* keys, see -o and docs/operations.md)"
	gProcess = "Process"
	gInert   = "Extended options (-o) and memcached's flags without effect in tandem (a warning is logged)"
)

var helpGroups = []string{gListen, gMemory, gSched, gProto, gTLS, gProcess, gInert}

var options = []option{
	// Listening.
	{name: "port", short: "p", group: gListen, def: 11211,
		help:     "TCP port to listen on (0 picks a free port, logged at start)",
		field:    func(c *Config) any { return &c.Port },
		settings: []settingRow{{"tcpport", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.Port) }}}},
	{name: "listen", short: "l", group: gListen, def: []string{"127.0.0.1"},
		help:  "interface address to listen on, optionally with :port; 0.0.0.0 for all (memcached: all interfaces); several -l or a comma list listen on each, a repeated one once; without -l, $" + listenEnv + " when set (the container image's 0.0.0.0)",
		field: func(c *Config) any { return &c.Listen },
		set: func(c *Config, _ string, given bool) error {
			listen := c.Listen
			c.ListenDefault = !given
			if env := os.Getenv(listenEnv); c.ListenDefault && env != "" {
				listen, c.ListenDefault = []string{env}, false
			}
			c.Listen = nil
			for _, l := range listen {
				// A notls: or mtls: prefix stays on the value (memcached's
				// "inter" setting shows it); ListenAddrs cuts it off.
				c.Listen = append(c.Listen, strings.Split(l, ",")...)
			}
			c.Listen = dedupeListen(c.Listen, c.Port)
			return nil
		},
		settings: []settingRow{{"inter", func(c *Config, _ handler.Live) string { return strings.Join(c.Listen, ",") }}}},
	{name: "unix-socket", short: "s", group: gListen, def: "",
		help:     "unix domain socket to listen on instead of TCP, as memcached (a stale socket file is replaced, a live one refused; removed at exit)",
		field:    func(c *Config) any { return &c.UnixSocket },
		settings: []settingRow{{"domain_socket", func(c *Config, _ handler.Live) string { return orNULL(c.UnixSocket) }}}},
	{name: "unix-mask", short: "a", group: gListen, def: "700",
		help: "octal permissions of the unix socket",
		set: func(c *Config, text string, _ bool) error {
			mask, err := strconv.ParseUint(text, 8, 32)
			if err != nil {
				return fmt.Errorf("-a: %q is not an octal mask", text)
			}
			c.UnixMask = uint32(mask)
			return nil
		},
		warn: func(c *Config, given bool) string {
			if given && c.UnixSocket == "" {
				return "-a: applies to the unix socket of -s, which is not given; ignored"
			}
			return ""
		},
		settings: []settingRow{{"umask", func(c *Config, _ handler.Live) string { return strconv.FormatUint(uint64(c.UnixMask), 8) }}}},
	{name: "listen-backlog", short: "b", group: gListen, def: 1024,
		help:     "backlog queue of the listening socket",
		field:    func(c *Config) any { return &c.Backlog },
		settings: []settingRow{{"tcp_backlog", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.Backlog) }}}},
	{name: "udp-port", short: "U", group: gListen, def: 0,
		help:  "UDP port: tandem does not serve UDP, any other value than 0 is ignored with a warning",
		field: func(c *Config) any { return &c.UDPPort },
		warn: func(c *Config, _ bool) string {
			if c.UDPPort != 0 {
				return "-U: UDP is not served by tandem; TCP only"
			}
			return ""
		},
		settings: []settingRow{{"udpport", fixed("0")}}}, // UDP is not served, whatever -U says
	{name: "conn-limit", short: "c", group: gListen, def: 1024,
		help:     "max simultaneous connections; extra ones get \"ERROR Too many open connections\"",
		field:    func(c *Config) any { return &c.MaxConns },
		settings: []settingRow{{"maxconns", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.MaxConns) }}}},
	{name: "idle-timeout", group: gListen, def: time.Duration(0),
		help:  "close connections that complete no request for this long: idle, trickling a partial request, or not reading their replies (e.g. 30s; 0 = never; memcached -o idle_timeout=SECONDS)",
		field: func(c *Config) any { return &c.IdleTimeout },
		oKeys: []string{"idle_timeout"},
		oSet: func(c *Config, kv string) (string, error) {
			v := optValue(kv)
			secs, err := strconv.Atoi(v)
			if err != nil || secs < 0 {
				return "", fmt.Errorf("-o idle_timeout: bad seconds %q", v)
			}
			c.IdleTimeout = time.Duration(secs) * time.Second
			return "", nil
		},
		settings: []settingRow{{"idle_timeout", func(c *Config, _ handler.Live) string { return strconv.Itoa(int(c.IdleTimeout / time.Second)) }}}},
	{name: "reuseport", group: gListen, def: false,
		help:     "SO_REUSEPORT: one listening socket per event loop",
		field:    func(c *Config) any { return &c.ReusePort },
		settings: []settingRow{{"tandem_reuseport", func(c *Config, _ handler.Live) string { return yesNo(c.ReusePort) }}}},

	// Memory and items.
	{name: "memory-limit", short: "m", group: gMemory, def: int64(64),
		help:  "memory for items in megabytes, their index included (the process needs about 1.1x this plus 10-20 MB)",
		field: func(c *Config) any { return &c.MemoryMB },
		settings: []settingRow{{"maxbytes", func(c *Config, l handler.Live) string {
			return strconv.FormatInt(cmp.Or(l.MaxBytes, c.MemoryMB<<20), 10) // as cache_memlimit last set it
		}}}},
	{name: "max-item-size", short: "I", group: gMemory, def: "1m",
		help: "max item size, bytes with optional k/m suffix (key+value+48 bytes must fit; 1k..1024m)",
		set: func(c *Config, text string, _ bool) (err error) {
			if c.MaxItemSize, err = parseSize(text); err != nil {
				return fmt.Errorf("-I: %w", err)
			}
			return nil
		},
		settings: []settingRow{{"item_size_max", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.MaxItemSize) }}}},
	{name: "shards", group: gMemory, def: 0,
		help:  "cache shards, each with its own lock and pages: a power of two; 0 = one per 16 MB of -m, 1 to 64 (more shards let more cores store at once, fewer fill -m further with values of many sizes; lowered until a shard holds an item of -I)",
		field: func(c *Config) any { return &c.Shards }},
	{name: "disable-evictions", short: "M", group: gMemory, def: false,
		help:  "return an error on memory exhausted instead of evicting items",
		field: func(c *Config) any { return &c.DisableEvictions },
		settings: []settingRow{{"evictions", func(c *Config, _ handler.Live) string {
			return map[bool]string{false: "on", true: "off"}[c.DisableEvictions]
		}}}},
	{name: "disable-cas", short: "C", group: gMemory, def: false,
		help:     "report CAS uniques as 0",
		field:    func(c *Config) any { return &c.DisableCAS },
		settings: []settingRow{{"cas_enabled", func(c *Config, _ handler.Live) string { return yesNo(!c.DisableCAS) }}}},
	{name: "lock-memory", short: "k", group: gMemory, def: false,
		help:  "lock all process memory in RAM (mlockall; a warning if the system refuses)",
		field: func(c *Config) any { return &c.LockMemory }},
	{name: "memory-file", short: "e", group: gMemory, def: "",
		help:  "keep the items in this file (put it on tmpfs) so that a restart after a graceful stop finds them again (outside Linux the file keeps the blocks of freed pages)",
		field: func(c *Config) any { return &c.MemoryFile },
		oKeys: []string{"memory_file"}, // tandem's: memcached 1.6.18 knows only -e
		oSet: func(c *Config, kv string) (string, error) {
			if c.MemoryFile = optValue(kv); c.MemoryFile == "" {
				return "", fmt.Errorf("-o memory_file: a file name is required")
			}
			return "", nil
		},
		settings: []settingRow{{"memory_file", func(c *Config, _ handler.Live) string { return orCNull(c.MemoryFile) }}}},

	// Scheduling and connection buffers.
	{name: "mode", group: gSched, def: "pool",
		help:     "scheduling: pool (event loops + worker pool), inline (loops execute), goroutine (one goroutine per connection)",
		set:      func(c *Config, text string, _ bool) error { c.Mode = reactor.Mode(text); return nil },
		settings: []settingRow{{"tandem_mode", func(c *Config, _ handler.Live) string { return string(c.Mode) }}}},
	{name: "threads", short: "t", group: gSched, def: func() int { return runtime.GOMAXPROCS(0) }, defText: "GOMAXPROCS, here %d",
		help:  "event loops (reactor threads)",
		field: func(c *Config) any { return &c.Threads },
		settings: []settingRow{
			{"num_threads", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.Threads) }},
			{"num_threads_per_udp", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.Threads) }},
		}},
	{name: "workers", group: gSched, def: func() int { return 2 * runtime.GOMAXPROCS(0) }, defText: "2 x GOMAXPROCS, here %d",
		help:     "worker pool size in pool mode",
		field:    func(c *Config) any { return &c.Workers },
		settings: []settingRow{{"tandem_workers", func(c *Config, _ handler.Live) string { return strconv.Itoa(workersOf(c)) }}}},
	{name: "max-reqs-per-event", short: "R", group: gSched, def: 20,
		help:     "requests one connection runs before the others get their turn; a longer pipeline is served in slices, in order",
		field:    func(c *Config) any { return &c.ReqsPerEvent },
		settings: []settingRow{{"reqs_per_event", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.ReqsPerEvent) }}}},
	{name: "conn-buffer-limit", group: gSched, def: "16m",
		help: "all connections' buffers together (queued replies, framed and unparsed input; bytes, k/m suffix; 0 = no limit; memcached -o read_buf_mem_limit=MB): above it a connection holds no reply its socket refused, and one reading a request over 16k is closed",
		set: func(c *Config, text string, _ bool) error {
			if text == "0" {
				c.BufferLimit = -1
				return nil
			}
			n, err := parseSize(text)
			if err != nil {
				return fmt.Errorf("--conn-buffer-limit: %w", err)
			}
			c.BufferLimit = int64(n)
			return nil
		},
		oKeys: []string{"read_buf_mem_limit"},
		oSet: func(c *Config, kv string) (string, error) {
			v := optValue(kv)
			mb, err := strconv.Atoi(v)
			if err != nil || mb < 0 {
				return "", fmt.Errorf("-o read_buf_mem_limit: bad megabytes %q", v)
			}
			c.BufferLimit = int64(mb) << 20
			if mb == 0 {
				c.BufferLimit = -1 // memcached: 0 means no limit
			}
			return "", nil
		},
		// Bytes; 0: no limit.
		settings: []settingRow{{"read_buf_mem_limit", func(c *Config, _ handler.Live) string { return strconv.FormatInt(max(c.BufferLimit, 0), 10) }}}},
	{name: "max-conn-input", group: gSched, def: "64m",
		help: "close a connection whose incomplete request (a value or line still arriving) exceeds this (bytes, k/m suffix; at least -I + 64k, raised to that when not given). A client sending complete requests faster than they run is paused, not closed (pool and inline modes pause through Linux epoll; on other systems they close it)",
		set: func(c *Config, text string, given bool) (err error) {
			if c.MaxConnInput, err = parseSize(text); err != nil {
				return fmt.Errorf("--max-conn-input: %w", err)
			}
			if !given { // a value of -I bytes must fit in the input buffer
				c.MaxConnInput = max(c.MaxConnInput, c.MaxItemSize+64<<10)
			}
			return nil
		}},
	{name: "max-conn-output", group: gSched, def: "64m",
		help: "close a connection whose replies to one slice of requests exceed this (bytes, k/m suffix): a multi-get of many large values. A client that does not read is paused once 256k of its replies are unsent, not closed (Linux; see --max-conn-input)",
		set: func(c *Config, text string, _ bool) (err error) {
			if c.MaxConnOutput, err = parseSize(text); err != nil {
				return fmt.Errorf("--max-conn-output: %w", err)
			}
			return nil
		}},
	{name: "loop-writes", group: gSched, def: false,
		help:  "ignored (a warning): pool workers hand their replies back to the event loop by default",
		field: func(c *Config) any { return &c.LoopWrites },
		warn: func(c *Config, _ bool) string {
			if c.LoopWrites {
				return "--loop-writes: ignored; pool workers hand their replies back to the event loop"
			}
			return ""
		}},
	{name: "worker-writes", group: gSched, def: false,
		help:  "ignored (a warning): workers never write to sockets; pool-mode replies are written by the connection's event loop",
		field: func(c *Config) any { return &c.WorkerWrites },
		warn: func(c *Config, _ bool) string {
			if c.WorkerWrites {
				return "--worker-writes: ignored; workers no longer write to sockets: pool-mode replies are written by the connection's event loop"
			}
			return ""
		}},

	// Protocol and security.
	{name: "protocol", short: "B", group: gProto, def: "auto",
		help:  "binding protocol: auto, ascii or binary",
		field: func(c *Config) any { return &c.Protocol },
		settings: []settingRow{{"binding_protocol", func(c *Config, _ handler.Live) string {
			return map[string]string{"auto": "auto-negotiate", "ascii": "ascii", "binary": "binary"}[c.Protocol]
		}}}},
	{name: "auth-file", short: "Y", group: gProto, def: "",
		help:  "require authentication with the user:password lines of this file: SASL PLAIN on binary connections, memcached's -Y token (a set whose data is \"user password\") on text ones",
		field: func(c *Config) any { return &c.AuthFile },
		settings: []settingRow{
			{"auth_enabled_sasl", func(c *Config, _ handler.Live) string { return yesNo(c.AuthFile != "") }},
			{"auth_enabled_ascii", func(c *Config, _ handler.Live) string { return yesNo(c.AuthFile != "") }},
		}},
	{name: "enable-sasl", short: "S", group: gProto, def: false,
		help:  "require SASL authentication on binary connections; needs -Y (refused without it)",
		field: func(c *Config) any { return &c.SASL }},
	{name: "enable-shutdown", short: "A", group: gProto, def: false,
		help:     "allow the shutdown command",
		field:    func(c *Config) any { return &c.EnableShutdown },
		settings: []settingRow{{"shutdown_command", func(c *Config, _ handler.Live) string { return yesNo(c.EnableShutdown) }}}},
	{name: "disable-flush-all", short: "F", group: gProto, def: false,
		help:     "refuse flush_all",
		field:    func(c *Config) any { return &c.DisableFlushAll },
		settings: []settingRow{{"flush_enabled", func(c *Config, _ handler.Live) string { return yesNo(!c.DisableFlushAll) }}}},
	{name: "disable-dumping", short: "X", group: gProto, def: false,
		help:     "refuse stats cachedump and lru_crawler metadump",
		field:    func(c *Config) any { return &c.DisableDumps },
		settings: []settingRow{{"dump_enabled", func(c *Config, _ handler.Live) string { return yesNo(!c.DisableDumps) }}}},
	{name: "disable-watch", short: "W", group: gProto, def: false,
		help:  "refuse the watch command (log streaming)",
		field: func(c *Config) any { return &c.DisableWatch }},
	{name: "prefix-delimiter", short: "D", group: gProto, def: ":",
		help: "the character that ends a key prefix in per-prefix stats (stats detail); giving it turns those stats on",
		set: func(c *Config, text string, given bool) error {
			if len(text) != 1 {
				return fmt.Errorf("-D: %q is not one character", text)
			}
			c.PrefixDelimiter, c.DetailEnabled = text[0], given
			return nil
		},
		settings: []settingRow{ // as "stats detail" last set them
			{"stat_key_prefix", func(_ *Config, l handler.Live) string { return string(l.PrefixDelimiter) }},
			{"detail_enabled", func(_ *Config, l handler.Live) string { return yesNo(l.DetailEnabled) }},
		}},
	{name: "large-client-flags", group: gProto, def: false,
		help:  "64-bit client flags in the text and meta protocols (memcached's build option --enable-large-client-flags; binary extras stay 32 bits): 4 more bytes per item; without it flags are 32 bits and a larger number is truncated, as memcached stores it",
		field: func(c *Config) any { return &c.LargeClientFlags }},

	// TLS.
	{name: "enable-ssl", short: "Z", group: gTLS, def: false,
		help:  "serve TLS on every -l listener but those prefixed notls: (mtls: also requires a client certificate); needs -o ssl_chain_cert=FILE,ssl_key=FILE; more: -o ssl_ca_cert, ssl_verify_mode (0 none, 1 request, 2 require, 3 require once), ssl_min_version (2 or tlsv1.2, 3 or tlsv1.3), ssl_ciphers, ssl_session_cache, ssl_keyformat (1 PEM, 2 DER)",
		field: func(c *Config) any { return &c.TLS.Enabled },
		oKeys: []string{"ssl_chain_cert", "ssl_key", "ssl_ca_cert", "ssl_verify_mode", "ssl_min_version", "ssl_ciphers",
			"ssl_session_cache", "ssl_keyformat", "ssl_kernel_tls", "ssl_wbuf_size"},
		oSet: func(c *Config, kv string) (string, error) {
			k, v, _ := strings.Cut(kv, "=")
			_, warn, err := c.TLS.applySSLOption(k, v)
			return warn, err
		},
		settings: []settingRow{ // as memcached prints them (ssl_verify_mode as OpenSSL's bits)
			{"ssl_enabled", func(c *Config, _ handler.Live) string { return yesNo(c.TLS.Enabled) }},
			{"ssl_chain_cert", func(c *Config, _ handler.Live) string { return orCNull(c.TLS.ChainCert) }},
			{"ssl_key", func(c *Config, _ handler.Live) string { return orCNull(c.TLS.Key) }},
			{"ssl_verify_mode", func(c *Config, _ handler.Live) string { return sslVerifyModeSetting(c.TLS.VerifyMode) }},
			{"ssl_keyformat", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.TLS.KeyFormat) }},
			{"ssl_ciphers", func(c *Config, _ handler.Live) string { return orNULL(c.TLS.Ciphers) }},
			{"ssl_ca_cert", func(c *Config, _ handler.Live) string { return orNULL(c.TLS.CACert) }},
			{"ssl_wbuf_size", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.TLS.WbufSize) }},
			{"ssl_session_cache", func(c *Config, _ handler.Live) string { return yesNo(c.TLS.SessionCache) }},
			{"ssl_kernel_tls", func(c *Config, _ handler.Live) string { return yesNo(c.TLS.KernelTLS) }},
			{"ssl_min_version", func(c *Config, _ handler.Live) string { return c.TLS.MinVersion }},
		}},
	{name: "tls-handshake-timeout", group: gTLS, def: reactor.DefaultTLSHandshakeTimeout,
		help:  "close a TLS connection whose handshake has not completed within this time (counted in ssl_handshake_errors)",
		field: func(c *Config) any { return &c.TLS.HandshakeTimeout }},

	// Process.
	{name: "daemon", short: "d", group: gProcess, def: false,
		help:  "run in the background: return once the server listens (logs go to --log-file, else to standard error where it is a file or a pipe, else are discarded)",
		field: func(c *Config) any { return &c.Daemon }},
	{name: "pidfile", short: "P", group: gProcess, def: "",
		help:  "write the process id to this file (removed at exit)",
		field: func(c *Config) any { return &c.PidFile }},
	{name: "user", short: "u", group: gProcess, def: "",
		help:  "when started as root, switch to this user before listening",
		field: func(c *Config) any { return &c.User }},
	{name: "enable-coredumps", short: "r", group: gProcess, def: false,
		help:  "raise the core file limit to its maximum and dump core on a fatal error",
		field: func(c *Config) any { return &c.CoreDumps }},
	{name: "verbose", short: "v", group: gProcess, def: counter(0),
		help:     "-v: debug log; -vv: also every command and reply line (memcached's -vv); -vvv: trace",
		field:    func(c *Config) any { return &c.Verbose },
		settings: []settingRow{{"verbosity", func(_ *Config, l handler.Live) string { return strconv.Itoa(l.Verbosity) }}}},
	{name: "log-level", group: gProcess, def: "info",
		help:  "log level without -v: trace, debug, info, warn, error",
		field: func(c *Config) any { return &c.LogLevel }},
	{name: "log-format", group: gProcess, def: "",
		help:  "log format: json or console (console on a terminal, else json, when not given)",
		field: func(c *Config) any { return &c.LogFormat }},
	{name: "log-file", group: gProcess, def: "",
		help:  "append the log to this file instead of standard error",
		field: func(c *Config) any { return &c.LogFile }},
	{name: "metrics-listen", group: gProcess, def: "",
		help:  "serve Prometheus metrics over HTTP on this host:port at /metrics, e.g. 127.0.0.1:9150 (off when not given)",
		field: func(c *Config) any { return &c.MetricsListen },
		warn: func(c *Config, _ bool) string {
			if host, _, err := net.SplitHostPort(c.MetricsListen); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
				return "--metrics-listen " + c.MetricsListen + ": /metrics (and --pprof) is served on every interface; give an address (127.0.0.1:PORT) to keep it local"
			}
			return ""
		}},
	{name: "pprof", group: gProcess, def: false,
		help:  "also serve Go's net/http/pprof at /debug/pprof/ on the --metrics-listen address",
		field: func(c *Config) any { return &c.Pprof }},
	{name: "help", short: "h", group: gProcess, def: false,
		help:  "print this help and exit",
		field: func(c *Config) any { return &c.ShowHelp }},
	{name: "version", short: "V", group: gProcess, def: false,
		help:  "print the version and exit",
		field: func(c *Config) any { return &c.ShowVersion }},
	{name: "license", short: "i", group: gProcess, def: false,
		help:  "print tandem's license and exit",
		field: func(c *Config) any { return &c.ShowLicense }},

	// memcached's -o, and its flags without effect.
	{name: "extended", short: "o", group: gInert, def: []string(nil),
		help:  "memcached's extended options key[=value],...: {keys}; the extstore keys (ext_*) are refused, every other key memcached 1.6.18 knows is accepted with a warning, an unknown one refused",
		field: func(c *Config) any { return &c.Options }},
	{name: "slab-growth-factor", short: "f", group: gInert, def: 1.25,
		help:     "memcached's slab chunk growth factor (tandem's size classes are its own)",
		field:    func(c *Config) any { return &c.GrowthFactor },
		inert:    "tandem's item size classes are its own, not made from -f",
		settings: []settingRow{{"growth_factor", func(c *Config, _ handler.Live) string { return strconv.FormatFloat(c.GrowthFactor, 'f', 2, 64) }}}},
	{name: "slab-min-size", short: "n", group: gInert, def: 48,
		help:     "memcached's minimum slab chunk bytes (tandem's size classes are its own)",
		field:    func(c *Config) any { return &c.SlabMinSize },
		inert:    "tandem's item size classes are its own, not made from -n",
		settings: []settingRow{{"chunk_size", func(c *Config, _ handler.Live) string { return strconv.Itoa(c.SlabMinSize) }}}},
	{name: "enable-largepages", short: "L", group: gInert, def: false,
		help:  "large memory pages (not used)",
		field: func(c *Config) any { return &c.LargePages },
		inert: "large memory pages are not used"},
	{name: "napi-ids", short: "N", group: gInert, def: 0,
		help:     "NAPI ids (not used)",
		field:    func(c *Config) any { return &c.NapiIDs },
		inert:    "NAPI ids are not used by tandem",
		settings: []settingRow{{"num_napi_ids", fixed("(null)")}}},

	// memcached's -o keys without a flag of tandem's (memcached 1.6.18,
	// Debian's build with TLS and extstore).
	{oKeys: []string{"maxconns_fast"}, // what tandem does: a connection over -c is answered and closed
		settings: []settingRow{{"maxconns_fast", fixed("yes")}}},
	{oKeys: []string{"no_maxconns_fast"}, inert: "tandem always answers a connection over -c with an error and closes it"},
	{oKeys: []string{"hashpower"}, inert: "tandem's cache has no hash table to presize",
		settings: []settingRow{{"hashpower_init", fixed("0")}}},
	{oKeys: []string{"no_hashexpand"}, inert: "tandem's cache has no hash table to expand"},
	// slabs reassign and automove are accepted (tandem moves memory between
	// its classes by itself): see protocol/handler/admin.go.
	{oKeys: []string{"slab_reassign", "no_slab_reassign", "slab_automove", "no_slab_automove", "slab_automove_ratio",
		"slab_automove_window", "slab_automove_freeratio", "slab_sizes", "slab_chunk_max", "no_chunked_items"},
		inert: "tandem's size classes are its own; its cache moves memory between them by itself",
		settings: []settingRow{
			{"slab_reassign", fixed("yes")},
			{"slab_automove", func(_ *Config, l handler.Live) string { return strconv.Itoa(l.SlabAutomove) }},
			{"slab_automove_ratio", func(_ *Config, l handler.Live) string { return strconv.FormatFloat(l.SlabAutomoveRatio, 'f', 2, 64) }},
			{"slab_automove_window", fixed("30")},
			{"slab_chunk_max", fixed("524288")},
			{"slab_automove_freeratio", fixed("0.010")},
		}},
	{oKeys: []string{"tail_repair_time"}, inert: "tandem's eviction never waits on referenced items",
		settings: []settingRow{{"tail_repair_time", fixed("0")}}},
	{oKeys: []string{"hash_algorithm"}, inert: "tandem hashes keys with Go's maphash",
		settings: []settingRow{{"hash_algorithm", fixed("maphash")}}},
	// The expiry sweep is tandem's crawler (protocol/handler/crawler.go):
	// the lru_crawler commands set what these rows show.
	{oKeys: []string{"lru_crawler", "no_lru_crawler", "lru_crawler_sleep", "lru_crawler_tocrawl"},
		inert: "tandem's expiry sweep plays the LRU crawler's part, on from the start at its own pace (lru_crawler disable and enable pause and resume it)",
		settings: []settingRow{
			{"lru_crawler", func(_ *Config, l handler.Live) string { return yesNo(l.LRUCrawler) }},
			{"lru_crawler_sleep", func(_ *Config, l handler.Live) string { return strconv.FormatUint(uint64(l.LRUCrawlerSleep), 10) }},
			{"lru_crawler_tocrawl", func(_ *Config, l handler.Live) string { return strconv.FormatUint(uint64(l.LRUCrawlerToCrawl), 10) }},
		}},
	{oKeys: []string{"lru_maintainer", "no_lru_maintainer"}, inert: "tandem's eviction is TinyLFU, without memcached's LRU maintainer",
		settings: []settingRow{{"lru_maintainer_thread", fixed("no")}}},
	{oKeys: []string{"hot_lru_pct", "warm_lru_pct", "hot_max_factor", "warm_max_factor"},
		inert: "tandem's eviction is TinyLFU, without memcached's segmented LRU",
		settings: []settingRow{
			{"lru_segmented", fixed("no")},
			{"hot_lru_pct", fixed("20")},
			{"warm_lru_pct", fixed("40")},
			{"hot_max_factor", fixed("0.20")},
			{"warm_max_factor", fixed("2.00")},
		}},
	{oKeys: []string{"temporary_ttl"}, inert: "tandem's eviction is TinyLFU, without memcached's temporary LRU",
		settings: []settingRow{{"temp_lru", fixed("no")}, {"temporary_ttl", fixed("61")}}},
	{oKeys: []string{"watcher_logbuf_size"}, inert: "tandem's watch buffers 256 KiB per watcher",
		settings: []settingRow{{"watcher_logbuf_size", fixed("262144")}}},
	{oKeys: []string{"worker_logbuf_size"}, inert: "tandem's watch has no per-worker log buffers",
		settings: []settingRow{{"worker_logbuf_size", fixed("65536")}}},
	{oKeys: []string{"track_sizes"}, inert: "tandem does not track item sizes (stats sizes reports disabled)",
		settings: []settingRow{{"track_sizes", fixed("no")}}},
	{oKeys: []string{"no_inline_ascii_resp", "inline_ascii_resp"}, inert: "a memcached memory layout option",
		settings: []settingRow{{"inline_ascii_response", fixed("no")}}},
	{oKeys: []string{"modern", "no_modern"}, inert: "a memcached defaults switch"},
	{oKeys: []string{"drop_privileges", "no_drop_privileges"}, inert: "tandem does not restrict its system calls"},
	{oKeys: []string{"resp_obj_mem_limit"}, inert: "deprecated in memcached too"},
	{oKeys: []string{"sock_cookie_id"}, inert: "tandem does not set socket cookies"},
	// External storage is refused (Config.unservable): its tuning values are
	// memcached's defaults, inert as in a memcached without extstore.
	{oKeys: []string{"ext_path", "ext_page_size", "ext_wbuf_size", "ext_threads", "ext_io_depth", "ext_item_size",
		"ext_item_age", "ext_low_ttl", "ext_drop_unread", "ext_recache_rate", "ext_compact_under", "ext_drop_under",
		"ext_max_frag", "ext_max_sleep"},
		oSet: func(c *Config, kv string) (string, error) { c.Extstore = append(c.Extstore, kv); return "", nil },
		settings: []settingRow{
			{"ext_item_size", fixed("512")},
			{"ext_item_age", fixed("4294967295")},
			{"ext_low_ttl", fixed("0")},
			{"ext_recache_rate", fixed("2000")},
			{"ext_wbuf_size", fixed("4194304")},
			{"ext_compact_under", fixed("0")},
			{"ext_drop_under", fixed("0")},
			{"ext_max_sleep", fixed("1000000")},
			{"ext_max_frag", fixed("0.80")},
			{"ext_drop_unread", fixed("no")},
		}},
}

// optionByKey maps each -o key to its entry of options.
var optionByKey = map[string]*option{}

func init() {
	for i := range options {
		for _, k := range options[i].oKeys {
			optionByKey[k] = &options[i]
		}
	}
}

// register adds the flag of o to fs; text receives its value when o has no
// field.
func (o *option) register(fs *pflag.FlagSet, c *Config, text *string) {
	help := strings.Replace(o.help, "{keys}", keysHelp(), 1)
	def := o.def
	if f, ok := def.(func() int); ok {
		def = f()
	}
	if o.field == nil {
		fs.StringVarP(text, o.name, o.short, def.(string), help)
	} else {
		switch p := o.field(c).(type) {
		case *int:
			if n, ok := def.(counter); ok {
				fs.CountVarP(p, o.name, o.short, help)
				*p = int(n)
			} else {
				fs.IntVarP(p, o.name, o.short, def.(int), help)
			}
		case *int64:
			fs.Int64VarP(p, o.name, o.short, def.(int64), help)
		case *bool:
			fs.BoolVarP(p, o.name, o.short, def.(bool), help)
		case *string:
			fs.StringVarP(p, o.name, o.short, def.(string), help)
		case *float64:
			fs.Float64VarP(p, o.name, o.short, def.(float64), help)
		case *time.Duration:
			fs.DurationVarP(p, o.name, o.short, def.(time.Duration), help)
		case *[]string:
			fs.StringArrayVarP(p, o.name, o.short, def.([]string), help)
		default:
			panic(fmt.Sprintf("flag table: --%s sets a %T", o.name, p))
		}
	}
	if o.defText != "" {
		fs.Lookup(o.name).DefValue = fmt.Sprintf(o.defText, def)
	}
}

// keysHelp says, for -o's help, which keys set what a flag sets and which
// are what tandem does anyway.
func keysHelp() string {
	var maps, same []string
	for _, o := range options {
		switch {
		case len(o.oKeys) == 0:
		case o.name != "" && len(o.oKeys) == 1:
			maps = append(maps, o.oKeys[0]+" is "+flagName(&o))
		case o.name != "":
			prefix, _, _ := strings.Cut(o.oKeys[0], "_")
			maps = append(maps, "the "+prefix+"_* keys configure "+flagName(&o))
		case o.inert == "" && o.oSet == nil:
			same = append(same, strings.Join(o.oKeys, ", "))
		}
	}
	s := strings.Join(maps, ", ")
	if len(same) > 0 {
		s += "; " + strings.Join(same, ", ") + " is what tandem does"
	}
	return s
}

// flagName is how help texts name o's flag: -x where it has a short name.
func flagName(o *option) string {
	if o.short != "" {
		return "-" + o.short
	}
	return "--" + o.name
}

// optValue is the value of an -o key=value.
func optValue(kv string) string {
	_, v, _ := strings.Cut(kv, "=")
	return v
}

func fixed(v string) func(*Config, handler.Live) string {
	return func(*Config, handler.Live) string { return v }
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// orNULL is memcached's "NULL" for a string setting not given.
func orNULL(v string) string {
	if v == "" {
		return "NULL"
	}
	return v
}

// orCNull is C's printf of a NULL string.
func orCNull(v string) string {
	if v == "" {
		return "(null)"
	}
	return v
}
