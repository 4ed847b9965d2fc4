package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
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

// serve wires everything and runs until a signal or a fatal error.
func serve(cfg *Config) int {
	base := newLogger(cfg)
	log := base.With().Str("component", "main").Logger()
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	raiseFileLimit(log, cfg.MaxConns)
	setMemoryLimit(log, cfg.MemoryMB)
	spareProcessor(log, cfg.Mode, cfg.Threads)

	// A clock refreshed once a second, like memcached's current_time: reading
	// the system clock on every request costs a measurable part of a hit.
	clock := newCoarseClock()
	c, err := cache.New(cache.Config{
		MaxBytes:         cfg.MemoryMB << 20,
		MaxItemSize:      cfg.MaxItemSize,
		DisableEvictions: cfg.DisableEvictions,
		DisableCAS:       cfg.DisableCAS,
		Clock:            clock,
	})
	if err != nil {
		log.Error().Err(err).Msg("cannot create the cache")
		return 2
	}
	clock.start()
	defer clock.stop()
	stopSweep := sweepExpired(c)
	defer stopSweep()

	var pool *workerpool.Pool
	var exec reactor.Executor
	if cfg.Mode == reactor.ModePool {
		pool, err = workerpool.New(workerpool.Config{Workers: cfg.Workers, Logger: base})
		if err != nil {
			log.Error().Err(err).Msg("cannot create the worker pool")
			return 2
		}
		exec = poolExecutor{pool}
	}

	var creds *handler.Credentials
	if cfg.AuthFile != "" {
		if creds, err = handler.LoadCredentials(cfg.AuthFile); err != nil {
			log.Error().Err(err).Str("auth_file", cfg.AuthFile).Msg("cannot read the auth file")
			return 2
		}
	}

	var srv reactor.Server
	stop := make(chan struct{}, 1)
	h, err := handler.New(handler.Config{
		Cache:           c,
		MaxItemSize:     cfg.MaxItemSize,
		EnableShutdown:  cfg.EnableShutdown,
		DisableFlushAll: cfg.DisableFlushAll,
		DisableCAS:      cfg.DisableCAS,
		Auth:            creds,
		Dialect:         protocolDialect(cfg.Protocol),
		TandemVersion:   version,
		Server: func() handler.ServerInfo {
			st := srv.Stats()
			si := handler.ServerInfo{
				Mode: string(cfg.Mode), Threads: cfg.Threads, MaxConns: cfg.MaxConns,
				CurrConns: st.CurrConns, TotalConns: st.TotalConns, RejectedConns: st.RejectedConns,
				PoolParked: st.Parked, Panics: st.Panics,
			}
			if pool != nil {
				si.Workers, si.PoolRunning, si.PoolOverloads = cfg.Workers, pool.Running(), pool.Overloads()
			}
			return si
		},
		Settings:    func() []handler.Setting { return settings(cfg) },
		Conns:       func() []handler.ConnInfo { return connInfos(srv) },
		OnShutdown:  func() { stop <- struct{}{} },
		OnVerbosity: func(level int) { setVerbosity(level) },
	})
	if err != nil {
		log.Error().Err(err).Msg("cannot create the handler")
		return 2
	}

	met := newMetrics(cfg) // nil unless --metrics-listen
	srv, err = reactor.New(reactor.Config{
		Mode:         cfg.Mode,
		Addr:         net.JoinHostPort(cfg.Listen, strconv.Itoa(cfg.Port)),
		Loops:        cfg.Threads,
		MaxConns:     cfg.MaxConns,
		NewSession:   func() reactor.Session { return h.NewSession() },
		Executor:     exec,
		IdleTimeout:  cfg.IdleTimeout,
		ReusePort:    cfg.ReusePort,
		WorkerWrites: cfg.WorkerWrites,
		MaxOutput:    cfg.MaxConnOutput,
		MaxInput:     cfg.MaxConnInput,
		Logger:       base,

		ObserveLatency: met.latencyObserver(),
		Clock:          clock.Now,
	})
	if err != nil {
		log.Error().Err(err).Msg("cannot create the server")
		return 2
	}
	if err := met.start(log, metricsSources{Handler: h, Cache: c, Server: srv.Stats}); err != nil {
		log.Error().Err(err).Str("addr", cfg.MetricsListen).Msg("cannot start the metrics endpoint")
		return 2
	}
	defer met.stop()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve() }()
	select {
	case <-srv.Ready():
	case err := <-serveErr:
		log.Error().Err(err).Msg("cannot start serving")
		return 1
	}
	if cfg.PidFile != "" {
		if err := os.WriteFile(cfg.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Warn().Err(err).Str("pidfile", cfg.PidFile).Msg("cannot write the pid file")
		}
	}
	log.Info().
		Str("addr", srv.Addr().String()).
		Str("mode", string(cfg.Mode)).
		Int("event_loops", cfg.Threads).
		Int("workers", workersOf(cfg)).
		Int64("memory_mb", cfg.MemoryMB).
		Int("max_item_size", cfg.MaxItemSize).
		Int("conn_limit", cfg.MaxConns).
		Bool("evictions", !cfg.DisableEvictions).
		Str("version", version).
		Msg("tandem listening")

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	status := 0
	select {
	case sig := <-sigs:
		log.Info().Str("signal", sig.String()).Msg("shutting down")
	case <-stop:
		log.Info().Msg("shutdown command received; shutting down")
	case err := <-serveErr:
		// The engine stopped by itself: fatal.
		log.Error().Err(err).Msg("server stopped unexpectedly")
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error().Err(err).Msg("graceful shutdown incomplete")
		status = 1
	}
	if err := <-serveErr; err != nil && !errors.Is(err, reactor.ErrServerClosed) {
		log.Error().Err(err).Msg("server stopped with an error")
		status = 1
	}
	if pool != nil {
		if err := pool.Release(time.Second); err != nil {
			log.Warn().Err(err).Msg("worker pool did not stop in time")
		}
	}
	if cfg.PidFile != "" {
		_ = os.Remove(cfg.PidFile)
	}
	log.Info().Int("status", status).Msg("stopped")
	return status
}

// poolExecutor adapts the worker pool to the reactor's Executor.
type poolExecutor struct{ p *workerpool.Pool }

func (e poolExecutor) Submit(t reactor.Task) error { return e.p.Submit(t) }

func workersOf(cfg *Config) int {
	if cfg.Mode == reactor.ModePool {
		return cfg.Workers
	}
	return 0
}

// raiseFileLimit lifts the soft RLIMIT_NOFILE towards the hard limit so the
// connection limit is reachable (gnet stops the whole engine on EMFILE).
func raiseFileLimit(log zerolog.Logger, conns int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return
	}
	want := uint64(conns) + 64
	if rl.Cur < want && rl.Cur < rl.Max {
		rl.Cur = min(max(want, rl.Cur), rl.Max)
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	if rl.Cur < want {
		log.Warn().Uint64("nofile", rl.Cur).Int("conn_limit", conns).
			Msg("open file limit is below the connection limit; raise ulimit -n")
	}
}

// setMemoryLimit gives the Go runtime a soft memory limit derived from -m,
// unless GOMEMLIMIT is set. -m charges everything an item costs in the heap
// (its record at its size class, its slot, go-tinylfu's entry and index slot),
// so the live heap stays below -m plus the process's own ~10 MB; the limit
// adds 1/8 of -m and 16 MiB for garbage between collections, which keeps the
// peak RSS under 1.15 x -m + 24 MB while items churn. It also lowers GOGC to
// 50 (unless GOGC is set): most of the heap is item memory that only grows
// with the items, and at 100 the garbage of a churning cache could double it
// while the limit is still far away.
func setMemoryLimit(log zerolog.Logger, mb int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := mb<<20 + mb<<17 + 16<<20 // 1.125 x -m + 16 MiB
	debug.SetMemoryLimit(limit)
	log.Debug().Int64("bytes", limit).Msg("Go memory limit set")
}

// gcPercent is the GOGC that setMemoryLimit sets.
const gcPercent = 50

// sweepInterval and sweepSlots pace the background expiry sweep: every
// interval it looks at up to sweepSlots items (about 50 µs of CPU at 1M
// items), so a cache of a million items is swept every 5 s and expired items
// are reclaimed without traffic, as memcached's LRU crawler does.
const (
	sweepInterval = 100 * time.Millisecond
	sweepSlots    = 20_000
)

// sweepExpired runs the cache's expiry sweep from a ticker until the returned
// function is called; that function waits for the goroutine to end.
func sweepExpired(c *cache.Cache) (stop func()) {
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
				c.Maintain(sweepSlots)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// spareProcessor makes GOMAXPROCS at least one more than the event loops in
// the gnet modes when the process has more than one CPU, unless GOMAXPROCS is
// set. The loops block in epoll_wait as ordinary syscalls; when every P is
// held by a blocked loop, the runtime's sysmon wakes every 20 µs to retake
// them and the loops pay the slow path of exitsyscall when they wake. With
// -t 2 on 2 cores, sysmon alone took 5.5% of the server's CPU at 1,000
// connections, 3.1% with a spare P; with it, server CPU per request fell from
// 7.7 to 6.8 µs (inline, 200 connections) and the single-connection rate rose
// 22% (inline) and 20% (pool). On a single CPU the extra threads cost more
// than sysmon does (inline -t 1 pinned to one core: 7% slower), so one CPU
// is left alone. See docs/threads.md.
func spareProcessor(log zerolog.Logger, mode reactor.Mode, loops int) {
	if mode == reactor.ModeGoroutine || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if n := runtime.GOMAXPROCS(0); n > 1 && n <= loops {
		runtime.GOMAXPROCS(loops + 1)
		log.Debug().Int("gomaxprocs", loops+1).Int("was", n).Msg("GOMAXPROCS raised to event loops + 1")
	}
}

// settings lists "stats settings" with memcached's names.
func settings(cfg *Config) []handler.Setting {
	b := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	onOff := "on"
	if cfg.DisableEvictions {
		onOff = "off"
	}
	proto := map[string]string{"auto": "auto-negotiate", "ascii": "ascii", "binary": "binary"}[cfg.Protocol]
	return []handler.Setting{
		{Name: "maxbytes", Value: strconv.FormatInt(cfg.MemoryMB<<20, 10)},
		{Name: "maxconns", Value: strconv.Itoa(cfg.MaxConns)},
		{Name: "tcpport", Value: strconv.Itoa(cfg.Port)},
		{Name: "udpport", Value: "0"},
		{Name: "inter", Value: cfg.Listen},
		{Name: "verbosity", Value: strconv.Itoa(cfg.Verbose)},
		{Name: "evictions", Value: onOff},
		{Name: "shutdown_command", Value: b(cfg.EnableShutdown)},
		{Name: "num_threads", Value: strconv.Itoa(cfg.Threads)},
		{Name: "reqs_per_event", Value: strconv.Itoa(cfg.ReqsPerEvent)},
		{Name: "cas_enabled", Value: b(!cfg.DisableCAS)},
		{Name: "binding_protocol", Value: proto},
		{Name: "auth_enabled_sasl", Value: b(cfg.AuthFile != "")},
		{Name: "auth_enabled_ascii", Value: b(cfg.AuthFile != "")},
		{Name: "item_size_max", Value: strconv.Itoa(cfg.MaxItemSize)},
		{Name: "flush_enabled", Value: b(!cfg.DisableFlushAll)},
		{Name: "idle_timeout", Value: strconv.Itoa(int(cfg.IdleTimeout / time.Second))},
		{Name: "tandem_mode", Value: string(cfg.Mode)},
		{Name: "tandem_workers", Value: strconv.Itoa(workersOf(cfg))},
		{Name: "tandem_reuseport", Value: b(cfg.ReusePort)},
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
