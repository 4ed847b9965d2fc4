package handler

import (
	"errors"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// Version is the memcached protocol version tandem reports in VERSION and
// stats: clients parse it as a number and gate features on it, so it names
// the memcached release whose behaviour tandem matches.
const Version = "1.6.18"

// Setting is one line of "stats settings".
type Setting struct {
	Name, Value string
}

// Config configures a Handler.
type Config struct {
	Cache *cache.Cache
	// MaxItemSize is -I in bytes; values larger than it are refused before
	// they are buffered.
	MaxItemSize int
	// EnableShutdown allows the shutdown command (memcached -A).
	EnableShutdown bool
	// DisableFlushAll refuses flush_all (memcached -F).
	DisableFlushAll bool
	// DisableCAS reports CAS uniques as 0 (memcached -C).
	DisableCAS bool
	// LargeClientFlags makes client flags 64 bits wide in the text and meta
	// protocols (memcached built with --enable-large-client-flags; see
	// protocol.Parser.SetLargeClientFlags). The cache must be built with
	// cache.Config.LargeClientFlags too.
	LargeClientFlags bool
	// DisableDumps refuses "stats cachedump" and "lru_crawler metadump"
	// (memcached -X).
	DisableDumps bool
	// PrefixDelimiter is the byte that ends a key's prefix in per-prefix
	// stats ("stats detail"; memcached -D, ':' by default). Setting it with
	// -D also turns the per-prefix stats on from the start, as in memcached:
	// see DetailEnabled.
	PrefixDelimiter byte
	// DetailEnabled starts with per-prefix stats on ("stats detail on").
	DetailEnabled bool
	// DisableWatch refuses the watch command (memcached -W).
	DisableWatch bool
	// Verbosity is the starting verbosity (memcached -v: 1, -vv: 2, -vvv: 3);
	// the verbosity command changes it. From 2 on, every command line and
	// reply line is logged at debug level, as memcached -vv prints them.
	Verbosity int
	// Logger receives the command log of verbosity 2 and above.
	Logger zerolog.Logger
	// TandemVersion is tandem's own release, reported as a stats field.
	TandemVersion string
	// EventLibrary names the event library for the libevent stats field
	// ("NULL" when empty).
	EventLibrary string
	// Server reports connection and scheduling counters; may be nil.
	Server func() ServerInfo
	// Settings lists "stats settings"; may be nil. It is called with the
	// settings the handler owns (verbosity, per-prefix stats), which can
	// change at run time.
	Settings func(Live) []Setting
	// Conns lists open connections and listeners for "stats conns"; may be
	// nil (then "stats conns" lists nothing).
	Conns func() []protocol.ConnInfo
	// Auth, when set, makes every connection authenticate first: binary
	// ones with SASL PLAIN, text ones as memcached's -Y does (see auth.go).
	Auth *Credentials
	// Dialect fixes the protocol of every connection (memcached -B ascii or
	// binary); DialectUnknown detects it from the first byte (-B auto).
	Dialect protocol.Dialect
	// OnShutdown is called (on its own goroutine) by an allowed shutdown.
	OnShutdown func()
	// OnMemoryLimit is called with the new limit in bytes after
	// cache_memlimit changed it (the process's memory limit follows -m).
	OnMemoryLimit func(bytes int64)
	// OnVerbosity is called with the level of a verbosity command.
	OnVerbosity func(level int)
	// RefreshCerts reloads the TLS certificate, key and CA files
	// (refresh_certs). It returns the reply line of a failure without its
	// CRLF (memcached's "Error loading the key: <file> : <why>"), "" on
	// success. nil:
	// TLS is off, and refresh_certs answers as memcached's does then.
	RefreshCerts func() string
	// Now is the wall clock for stats; nil means time.Now.
	Now func() time.Time
}

// Live are the settings the handler owns and commands change at run time,
// for "stats settings".
type Live struct {
	Verbosity       int
	DetailEnabled   bool
	PrefixDelimiter byte
	// MaxBytes is -m in bytes as cache_memlimit last set it; 0 when it has
	// not changed since the start.
	MaxBytes int64
	// SlabAutomove and SlabAutomoveRatio are what "slabs automove" last
	// set (memcached's defaults at first: 1 and 0.8). They have no effect:
	// tandem's cache moves memory between its classes by itself.
	SlabAutomove      int
	SlabAutomoveRatio float64
	// LRUCrawler, LRUCrawlerSleep and LRUCrawlerToCrawl are what the
	// lru_crawler commands last set (crawler.go).
	LRUCrawler        bool
	LRUCrawlerSleep   uint32
	LRUCrawlerToCrawl uint32
}

// Handler executes requests. It is safe for concurrent use; per-connection
// state lives in Sessions.
type Handler struct {
	cfg     Config
	started time.Time
	pid     int

	counters [NumCounters]atomic.Uint64
	// badChunkSets counts storage commands refused for a bad data chunk,
	// which memcached counts in cmd_set. The cache has no call to count
	// them yet, so the handler does and Stats adds them to Cache.CmdSet.
	badChunkSets atomic.Uint64
	verbosity    atomic.Int64
	shutdownOnce atomic.Bool
	prefixes     prefixStats
	dumpLimit    int          // DumpLimit; tests lower it
	dumpsRunning atomic.Int64 // lru_crawler metadumps unfinished
	watch        logBroker    // the watch command's watchers

	// limiter is the cache as a MemoryLimiter, nil while the cache cannot
	// change its limit at run time (tests set a fake).
	limiter       MemoryLimiter
	memLimit      atomic.Int64  // -m in bytes as cache_memlimit set it; 0 = unchanged
	automove      atomic.Int32  // slabs automove level
	automoveRatio atomic.Uint64 // slabs automove ratio, float64 bits
	crawler       crawlerState  // what the lru_crawler commands set

	resetMu sync.Mutex
	// serverBase holds the server counters at the last "stats reset", which
	// the snapshot subtracts (the network side's counters are not reset
	// themselves). Guarded by resetMu.
	serverBase [NumServerCounters]uint64
}

// New creates a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Cache == nil {
		return nil, errors.New("handler: Cache is required")
	}
	if cfg.MaxItemSize <= 0 {
		return nil, errors.New("handler: MaxItemSize must be positive")
	}
	if cfg.LargeClientFlags != cfg.Cache.LargeClientFlags() {
		return nil, errors.New("handler: LargeClientFlags must match the cache's")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PrefixDelimiter == 0 {
		cfg.PrefixDelimiter = ':'
	}
	h := &Handler{cfg: cfg, started: cfg.Now(), pid: os.Getpid(), dumpLimit: DumpLimit}
	h.verbosity.Store(int64(cfg.Verbosity))
	h.limiter, _ = any(cfg.Cache).(MemoryLimiter)
	h.automove.Store(1)
	h.automoveRatio.Store(math.Float64bits(0.8))
	h.crawler.init()
	h.prefixes.init(cfg.PrefixDelimiter, cfg.DetailEnabled)
	return h, nil
}

// Live returns the settings commands change at run time, as "stats
// settings" reports them.
func (h *Handler) Live() Live { return h.live() }

// live returns the run-time settings.
func (h *Handler) live() Live {
	return Live{
		Verbosity:       int(h.verbosity.Load()),
		DetailEnabled:   h.prefixes.enabled.Load(),
		PrefixDelimiter: h.cfg.PrefixDelimiter,

		MaxBytes:          h.memLimit.Load(),
		SlabAutomove:      int(h.automove.Load()),
		SlabAutomoveRatio: math.Float64frombits(h.automoveRatio.Load()),

		LRUCrawler:        !h.crawler.disabled.Load(),
		LRUCrawlerSleep:   h.crawler.sleep.Load(),
		LRUCrawlerToCrawl: h.crawler.tocrawl.Load(),
	}
}
