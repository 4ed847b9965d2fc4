package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
	"github.com/tandemcache/tandem/protocol/handler"
	"github.com/tandemcache/tandem/reactor"
	"github.com/tandemcache/tandem/workerpool"
)

const protocolVersion = handler.Version

// shutdownTimeout bounds the graceful shutdown.
const shutdownTimeout = 10 * time.Second

// serve wires everything and runs until a signal or a fatal error. It
// returns the exit status.
func serve(cfg *Config) int {
	base, sink, err := newLogger(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem: %v\n", err)
		return exitFailure
	}
	defer sink.close()
	daemon := isDaemonChild()
	if daemon && sink.logFile() != nil {
		// Until it is ready, the daemon also logs to the waiting command.
		sink.set(io.MultiWriter(sink.file, os.Stderr))
	}
	log := base.With().Str("component", "main").Logger()
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	if cfg.CoreDumps {
		if err := enableCoreDumps(); err != nil {
			log.Error().Err(err).Msg("cannot enable core dumps")
			return exitFailure
		}
	}
	raiseFileLimit(log, cfg.MaxConns)
	if cfg.LockMemory {
		lockMemory(log)
	}
	if err := switchUser(cfg.User); err != nil {
		log.Error().Err(err).Msg("cannot switch user")
		return exitFailure
	}
	memLimit := newMemLimit(log, cfg.MemoryMB, os.Getenv)
	spareProcessor(log, cfg.Mode, cfg.Threads)

	// A clock refreshed once a second, like memcached's current_time: reading
	// the system clock on every request costs a measurable part of a hit.
	clock := newCoarseClock()
	var watcher atomic.Pointer[handler.Handler] // "watch evictions": set once the handler exists
	c, err := cache.New(cache.Config{
		OnEvict: func(it *cache.Item) {
			if h := watcher.Load(); h != nil {
				h.WatchEviction(it)
			}
		},
		MaxBytes:         cfg.MemoryMB << 20,
		Shards:           cfg.Shards,
		MaxItemSize:      cfg.MaxItemSize,
		DisableEvictions: cfg.DisableEvictions,
		DisableCAS:       cfg.DisableCAS,
		Clock:            clock,
		MemoryFile:       cfg.MemoryFile,
		LargeClientFlags: cfg.LargeClientFlags,
	})
	if err != nil {
		log.Error().Err(err).Msg("cannot create the cache")
		return exitFailure
	}
	logRestart(log, c.Restart(), c.Stats().CurrItems, cfg.MemoryMB<<20)
	clock.start()
	defer clock.stop()
	// The sweep pauses on "lru_crawler disable", once the handler exists.
	stopSweep := sync.OnceFunc(sweepExpired(c, func() bool {
		h := watcher.Load()
		return h == nil || h.CrawlerEnabled()
	}))
	defer stopSweep()
	defer memLimit.run(c.HeapUsed)()

	var pool *workerpool.Pool
	var exec reactor.Executor
	if cfg.Mode == reactor.ModePool {
		pool, err = workerpool.New(workerpool.Config{Workers: cfg.Workers, Logger: base})
		if err != nil {
			log.Error().Err(err).Msg("cannot create the worker pool")
			return exitFailure
		}
		exec = poolExecutor{pool}
	}

	var creds *handler.Credentials
	if cfg.AuthFile != "" {
		if creds, err = handler.LoadCredentials(cfg.AuthFile); err != nil {
			log.Error().Err(err).Str("auth_file", cfg.AuthFile).Msg("cannot read the auth file")
			return exitFailure
		}
	}

	var certs *certStore // nil without -Z
	if cfg.TLS.Enabled {
		if certs, err = newCertStore(cfg.TLS); err != nil {
			log.Error().Err(err).Msg("cannot load the TLS certificate")
			return exitFailure
		}
	}

	var srv reactor.Server
	var listeners listenerRows // stats conns' conn_listening rows (listenfds.go)
	stop := make(chan struct{}, 1)
	h, err := handler.New(handler.Config{
		Cache:           c,
		MaxItemSize:     cfg.MaxItemSize,
		EnableShutdown:  cfg.EnableShutdown,
		DisableFlushAll: cfg.DisableFlushAll,
		DisableCAS:      cfg.DisableCAS,
		DisableDumps:    cfg.DisableDumps,
		PrefixDelimiter: cfg.PrefixDelimiter,
		DetailEnabled:   cfg.DetailEnabled,
		Verbosity:       cfg.Verbose,
		Logger:          base.With().Str("component", "handler").Logger(),
		Auth:            creds,
		Dialect:         protocolDialect(cfg.Protocol),
		TandemVersion:   version,
		EventLibrary:    eventLibrary(cfg.Mode),
		Server:          func() handler.ServerInfo { return withTLSInfo(serverInfo(cfg, srv, pool), certs) },
		Settings:        func(live handler.Live) []handler.Setting { return settings(cfg, live) },
		Conns: func() []protocol.ConnInfo {
			if srv == nil {
				return nil
			}
			return listeners.add(reactor.Conns(srv), srv.Addrs())
		},
		DisableWatch:  cfg.DisableWatch,
		OnMemoryLimit: func(bytes int64) { memLimit.setMB(bytes >> 20) },
		OnShutdown:    func() { stop <- struct{}{} },
		OnVerbosity:   func(level int) { setVerbosity(cfg, level) },

		RefreshCerts:     certs.refreshCommand(log), // nil without -Z
		LargeClientFlags: cfg.LargeClientFlags,
	})
	if err != nil {
		log.Error().Err(err).Msg("cannot create the handler")
		return exitFailure
	}
	watcher.Store(h)

	addrs, tlsAddrs, err := tlsListens(cfg, certs)
	if err != nil { // Validate has checked them
		log.Error().Err(err).Msg("bad listen address")
		return exitUsage
	}
	if cfg.UnixSocket != "" {
		addrs, tlsAddrs = nil, nil // as in memcached, -s disables TCP
	}
	met := newMetrics(cfg) // nil unless --metrics-listen
	srv, err = reactor.New(reactor.Config{
		Mode:       cfg.Mode,
		Addrs:      addrs,
		UnixSocket: cfg.UnixSocket,
		UnixMask:   os.FileMode(cfg.UnixMask),
		Backlog:    cfg.Backlog,
		Loops:      cfg.Threads,
		MaxConns:   cfg.MaxConns,
		// The peer names the connection in the command log (-vv).
		NewSession:   func(peer net.Addr) reactor.Session { return h.NewSession(addrString(peer)) },
		Executor:     exec,
		Workers:      cfg.Workers,
		ReqsPerEvent: cfg.ReqsPerEvent,
		IdleTimeout:  cfg.IdleTimeout,
		ReusePort:    cfg.ReusePort,
		MaxOutput:    cfg.MaxConnOutput,
		MaxInput:     cfg.MaxConnInput,
		BufferLimit:  cfg.BufferLimit,
		Logger:       base,

		ObserveLatency: met.latencyObserver(),
		Clock:          clock.Now,

		// TLS listeners are served by the net front end in every mode
		// (reactor/tls.go).
		TLSAddrs:            tlsAddrs,
		TLSHandshakeTimeout: cfg.TLS.HandshakeTimeout,
		TLSCounters:         certs.tlsCounters(),
	})
	if err != nil {
		log.Error().Err(err).Msg("cannot create the server")
		return exitFailure
	}
	met.registerTLS(certs)
	src := metricsSources{Handler: h, Cache: c, Settings: func() []handler.Setting { return settings(cfg, h.Live()) }}
	if err := met.start(log, src); err != nil {
		log.Error().Err(err).Str("addr", cfg.MetricsListen).Msg("cannot start the metrics endpoint")
		return exitFailure
	}
	defer met.stop()

	// Signals are caught before the server listens, so that none sent once
	// it is reachable can kill it (signals.go).
	sigs := notifySignals()
	defer sigs.release()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve() }()
	select {
	case <-srv.Ready():
	case err := <-serveErr:
		log.Error().Err(err).Msg("cannot start serving")
		return exitFailure
	}
	if cfg.PidFile != "" {
		if err := os.WriteFile(cfg.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Warn().Err(err).Str("pidfile", cfg.PidFile).Msg("cannot write the pid file")
		}
		defer os.Remove(cfg.PidFile)
	}
	if cfg.ListenDefault && cfg.UnixSocket == "" {
		// Before "tandem listening", which tells scripts the server is up.
		logListenDefault(log, srv.Addrs())
	}
	log.Info().
		Str("addr", srv.Addr().String()).
		Stringers("addrs", addrStringers(srv.Addrs())).
		Stringers("tls_addrs", addrStringers(srv.Addrs()[:len(tlsAddrs)])).
		Str("mode", string(cfg.Mode)).
		Int("event_loops", cfg.Threads).
		Int("workers", workersOf(cfg)).
		Int64("memory_mb", cfg.MemoryMB).
		Int("max_item_size", cfg.MaxItemSize).
		Int("conn_limit", cfg.MaxConns).
		Bool("evictions", !cfg.DisableEvictions).
		Int("pid", os.Getpid()).
		Str("version", version).
		Msg("tandem listening")
	if daemon {
		if err := detachDaemon(sink); err != nil {
			log.Error().Err(err).Msg("cannot detach the daemon")
		}
	}

	status := exitOK
wait:
	for {
		select {
		case <-sigs.hangup:
			reopenLog(log, sink, certs != nil)
			if certs != nil || sink.path != "" {
				reloadCertsOnHangup(log, certs)
			}
		case sig := <-sigs.stop:
			log.Info().Str("signal", sig.String()).Msg("shutting down")
			break wait
		case <-stop:
			log.Info().Msg("shutdown command received; shutting down")
			break wait
		case err := <-serveErr:
			// The engine stopped by itself: fatal.
			log.Error().Err(err).Msg("server stopped unexpectedly")
			return exitFailure
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error().Err(err).Msg("graceful shutdown incomplete")
		status = exitFailure
	}
	if err := <-serveErr; err != nil && !errors.Is(err, reactor.ErrServerClosed) {
		log.Error().Err(err).Msg("server stopped with an error")
		status = exitFailure
	}
	if pool != nil {
		if err := pool.Release(time.Second); err != nil {
			log.Warn().Err(err).Msg("worker pool did not stop in time")
		}
	}
	if cfg.MemoryFile != "" {
		stopSweep()
		saveRestart(log, c)
	}
	log.Info().Int("status", status).Msg("stopped")
	return status
}

// serverInfo is the network side's part of "stats". The fields the reactor
// does not count (read_buf_count, read_buf_bytes_free, response_obj_*) are
// 0; reserved_fds is 0 because tandem reserves none of -c for itself.
func serverInfo(cfg *Config, srv reactor.Server, pool *workerpool.Pool) handler.ServerInfo {
	si := handler.ServerInfo{Mode: string(cfg.Mode), Threads: cfg.Threads, MaxConns: cfg.MaxConns}
	if srv == nil {
		return si
	}
	st := srv.Stats()
	si.CurrConns = st.CurrConns
	// One connection state per open connection and per listener, as
	// memcached counts them (a unix socket replaces the TCP listeners).
	listeners := 1
	if addrs, err := cfg.ListenAddrs(); err == nil && cfg.UnixSocket == "" {
		listeners = len(addrs)
	}
	si.ConnStructures = st.CurrConns + int64(listeners)
	si.PoolParked = st.Parked
	si.Counters[handler.TotalConns] = st.TotalConns
	si.Counters[handler.RejectedConns] = st.RejectedConns
	si.Counters[handler.Panics] = st.Panics
	si.Counters[handler.ClosedOverflow] = st.ClosedOverflow
	si.Counters[handler.ClosedIdle] = st.ClosedIdle
	si.Counters[handler.ConnYields] = st.Yields
	si.Counters[handler.ReadBufOOM] = st.ReadBufOOM
	si.Counters[handler.ReadPauses] = st.ReadPauses
	// The bytes of connection buffers (queued replies, framed and unparsed
	// input) are what memcached reports as read buffer bytes in use.
	si.ReadBufBytes = st.BufferBytes
	if pool != nil {
		si.Workers, si.PoolRunning = cfg.Workers, st.Running
		si.Counters[handler.PoolOverloads] = pool.Overloads()
	}
	return si
}

// eventLibrary names the event library of mode for the libevent stats
// field: gnet's module version in the modes built on it, Go's netpoller in
// goroutine mode.
func eventLibrary(mode reactor.Mode) string {
	if mode == reactor.ModeGoroutine {
		return runtime.Version() + "-netpoll"
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/panjf2000/gnet/v2" {
				return "gnet-" + d.Version
			}
		}
	}
	return "gnet"
}

// addrStringers is addrs as fmt.Stringers, for the log.
func addrStringers(addrs []net.Addr) []fmt.Stringer {
	out := make([]fmt.Stringer, len(addrs))
	for i, a := range addrs {
		out[i] = a
	}
	return out
}

// addrString is a peer's address as text; "" when unknown.
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// poolExecutor adapts the worker pool to the reactor's Executor.
type poolExecutor struct{ p *workerpool.Pool }

func (e poolExecutor) Submit(t reactor.Task) error { return e.p.Submit(t) }

// sweepInterval and sweepSlots pace the background expiry sweep: every
// interval it looks at up to sweepSlots items (about 50 µs of CPU at 1M
// items), so a cache of a million items is swept every 5 s and expired items
// are reclaimed without traffic, as memcached's LRU crawler does.
const (
	sweepInterval = 100 * time.Millisecond
	sweepSlots    = 20_000
)

// sweepExpired runs the cache's expiry sweep from a ticker until the returned
// function is called; that function waits for the goroutine to end. The
// sweep skips its turns while enabled reports false ("lru_crawler
// disable").
func sweepExpired(c *cache.Cache, enabled func() bool) (stop func()) {
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sweepInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if enabled() {
					c.Maintain(sweepSlots)
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// spareProcessor makes GOMAXPROCS at least one more than the event loops in
// inline mode when the process has more than one CPU, unless GOMAXPROCS is
// set. The loops block in epoll_wait as ordinary syscalls; when every P is
// held by a blocked loop, the runtime's sysmon wakes every 20 µs to retake
// them and the loops pay the slow path of exitsyscall when they wake. With
// -t 2 on 2 cores, sysmon alone took 5.5% of the server's CPU at 1,000
// connections, 3.1% with a spare P; with it, server CPU per request fell from
// 7.7 to 6.8 µs (inline, 200 connections) and the single-connection rate rose
// 22%. On a single CPU the extra threads cost more than sysmon does (inline
// -t 1 pinned to one core: 7% slower), so one CPU is left alone.
//
// Pool mode keeps GOMAXPROCS as it is: there an idle P is what makes every
// worker wake-up start a second OS thread (the runtime's wakep), and without
// the spare P the pool ran 2-10 µs less CPU per request (-t 2, 2, 8 and 200
// connections; docs/threads.md).
func spareProcessor(log zerolog.Logger, mode reactor.Mode, loops int) {
	if mode != reactor.ModeInline || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if n := runtime.GOMAXPROCS(0); n > 1 && n <= loops {
		runtime.GOMAXPROCS(loops + 1)
		log.Debug().Int("gomaxprocs", loops+1).Int("was", n).Msg("GOMAXPROCS raised to event loops + 1")
	}
}

// protocolDialect maps -B to the dialect every connection is fixed to.
func protocolDialect(b string) protocol.Dialect {
	switch b {
	case "ascii":
		return protocol.DialectText
	case "binary":
		return protocol.DialectBinary
	}
	return protocol.DialectUnknown
}
