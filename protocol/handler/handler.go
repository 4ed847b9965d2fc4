package handler

import (
	"errors"
	"os"
	"sync/atomic"
	"time"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// Version is the memcached protocol version tandem reports in VERSION and
// stats: clients parse it as a number and gate features on it, so it names
// the memcached release whose behaviour tandem matches.
const Version = "1.6.18"

// ServerInfo is the network side's view for "stats".
type ServerInfo struct {
	Mode          string
	Threads       int
	Workers       int
	MaxConns      int
	CurrConns     int64
	TotalConns    uint64
	RejectedConns uint64
	PoolRunning   int
	PoolParked    int64
	PoolOverloads uint64
	Panics        uint64
}

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
	// TandemVersion is tandem's own release, reported as a stats field.
	TandemVersion string
	// Server reports connection and scheduling counters; may be nil.
	Server func() ServerInfo
	// Settings lists "stats settings"; may be nil.
	Settings func() []Setting
	// Conns lists open connections and listeners for "stats conns"; may be
	// nil (then "stats conns" lists nothing).
	Conns func() []ConnInfo
	// Auth, when set, makes every connection authenticate first: binary
	// ones with SASL PLAIN, text ones as memcached's -Y does (see auth.go).
	Auth *Credentials
	// Dialect fixes the protocol of every connection (memcached -B ascii or
	// binary); DialectUnknown detects it from the first byte (-B auto).
	Dialect protocol.Dialect
	// OnShutdown is called (on its own goroutine) by an allowed shutdown.
	OnShutdown func()
	// OnVerbosity is called with the level of a verbosity command.
	OnVerbosity func(level int)
	// Now is the wall clock for stats; nil means time.Now.
	Now func() time.Time
}

// Handler executes requests. It is safe for concurrent use; per-connection
// state lives in Sessions.
type Handler struct {
	cfg     Config
	started time.Time
	pid     int

	bytesRead    atomic.Uint64
	bytesWritten atomic.Uint64
	shutdownOnce atomic.Bool

	ext extCounters // meta and authentication counters (see ext.go)
}

// New creates a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Cache == nil {
		return nil, errors.New("handler: Cache is required")
	}
	if cfg.MaxItemSize <= 0 {
		return nil, errors.New("handler: MaxItemSize must be positive")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg, started: cfg.Now(), pid: os.Getpid()}, nil
}
