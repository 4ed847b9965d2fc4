package main

import (
	"bytes"
	"context"
	"errors"
	stdlog "log"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"strings"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol/handler"
)

// The metrics endpoint (--metrics-listen) serves the metric names of the
// Prometheus project's memcached_exporter, so dashboards and alerts written
// for memcached keep working, plus tandem's own under tandem_. Values are
// read at scrape time from the same counters "stats" reports: nothing is
// counted twice and the request path pays nothing for it, except the
// sampled latency histogram (see reactor/latency.go).

// latencyBuckets spans a cache hit on loopback (~10 us) to a stalled server.
var latencyBuckets = []float64{
	5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1,
}

// metrics is the Prometheus endpoint. A nil *metrics is valid and does
// nothing, which is what serve uses when --metrics-listen is empty.
type metrics struct {
	cfg     *Config
	set     *vm.Set // the latency histogram
	latency *vm.PrometheusHistogram
	extra   []func(e *expo) // more families (TLS), registered before start
	srv     *http.Server
	ln      net.Listener
}

// metricsSources are what a scrape reads: the handler's typed stats
// snapshot (the same one "stats" renders) and the cache's per-shard view.
type metricsSources struct {
	Handler *handler.Handler
	Cache   *cache.Cache
	// Settings lists "stats settings" (the LRU crawler gauges come from
	// there, as memcached_exporter reads them); may be nil.
	Settings func() []handler.Setting
}

// newMetrics builds the registry, or returns nil when metrics are off.
func newMetrics(cfg *Config) *metrics {
	if cfg.MetricsListen == "" {
		return nil
	}
	// The library's families get "# HELP" (without text) and "# TYPE" lines.
	vm.ExposeMetadata(true)
	m := &metrics{cfg: cfg, set: vm.NewSet()}
	// Time from a batch of requests arriving to its replies being handed to
	// the socket, sampled for one batch in 64 per connection.
	m.latency = m.set.NewPrometheusHistogramExt("tandem_request_latency_seconds", latencyBuckets)
	return m
}

// latencyObserver returns the reactor's latency hook, or nil without
// metrics (the reactor then never reads the clock for it).
func (m *metrics) latencyObserver() func(time.Duration) {
	if m == nil {
		return nil
	}
	return func(d time.Duration) { m.latency.Update(d.Seconds()) }
}

// Sampling rates of the contention profiles, on with --pprof only: one
// mutex contention event in mutexProfileFraction, and blocking events by
// time blocked, one sample per blockProfileRate nanoseconds on average (so
// every wait of 10 µs or more is recorded). Both cost a little on every
// contended lock or blocking channel operation, hence not by default.
const (
	mutexProfileFraction = 100
	blockProfileRate     = 10_000
)

// enableContentionProfiles turns on the runtime's mutex and block profiles,
// which /debug/pprof/mutex and /debug/pprof/block serve (empty otherwise).
func enableContentionProfiles() {
	runtime.SetMutexProfileFraction(mutexProfileFraction)
	runtime.SetBlockProfileRate(blockProfileRate)
}

// start registers the scrape-time collector and serves /metrics (and
// /debug/pprof/ with --pprof) until stop. It fails when the address cannot
// be bound.
func (m *metrics) start(log zerolog.Logger, src metricsSources) error {
	if m == nil {
		return nil
	}
	ln, err := net.Listen("tcp", m.cfg.MetricsListen)
	if err != nil {
		return err
	}
	// VictoriaMetrics/metrics reports a failed read of /proc, and net/http
	// a failed accept, with the standard log package: send it to ours.
	stdlog.SetFlags(0)
	stdlog.SetOutput(stdlogWriter{log.With().Str("component", "metrics").Logger()})
	mux := http.NewServeMux()
	mux.Handle("/metrics", http.TimeoutHandler(m.handler(newStatsCollector(src)), scrapeTimeout, "scrape timed out\n"))
	if m.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		enableContentionProfiles()
	}
	m.ln = ln
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics endpoint stopped")
		}
	}()
	log.Info().Str("addr", ln.Addr().String()).Bool("pprof", m.cfg.Pprof).Msg("metrics listening")
	return nil
}

// stop closes the endpoint, letting a scrape in progress finish briefly.
func (m *metrics) stop() {
	if m == nil || m.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}

// stdlogWriter logs each line the standard log package prints as a warning.
type stdlogWriter struct{ l zerolog.Logger }

func (w stdlogWriter) Write(p []byte) (int, error) {
	w.l.Warn().Msg(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Scrapes served at once (more are refused with 503) and how long one may
// take.
const (
	maxScrapes    = 4
	scrapeTimeout = 10 * time.Second
)

// handler serves /metrics: tandem's families from sc (and m.extra), then the
// latency histogram, the Go runtime's and the process's.
func (m *metrics) handler(sc *statsCollector) http.Handler {
	inFlight := make(chan struct{}, maxScrapes)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case inFlight <- struct{}{}:
			defer func() { <-inFlight }()
		default:
			http.Error(w, "too many scrapes at once", http.StatusServiceUnavailable)
			return
		}
		var e expo
		sc.collect(&e)
		for _, add := range m.extra {
			add(&e)
		}
		b := bytes.NewBuffer(e.appendTo(nil))
		m.set.WritePrometheus(b)
		vm.WriteProcessMetrics(b)
		vm.WriteFDMetrics(b)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(b.Bytes())
	})
}

// statMetric maps one general statistic onto a metric.
type statMetric struct {
	desc  *family
	vt    valueType
	value func(s *handler.Stats) float64
}

// shardMetric maps one per-shard value onto a metric labelled by slab
// (memcached's slab class; tandem's shard number + 1, as in "stats items").
type shardMetric struct {
	desc  *family
	vt    valueType
	value func(s *cache.ShardStats) uint64
}

// settingMetric maps one "stats settings" value onto a gauge.
type settingMetric struct {
	desc    *family
	setting string
}

// statsCollector turns tandem's stats into metrics at scrape time.
type statsCollector struct {
	src          metricsSources
	up           *family
	version      *family
	info         *family
	commands     *family
	closed       *family
	lruHits      *family // memcached_slab_lru_hits_total{slab,lru}
	slabCommands *family // memcached_slab_commands_total{slab,command,status}
	general      []statMetric
	settings     []settingMetric
	shards       []shardMetric
	cacheIdx     []struct {
		desc  *family
		vt    valueType
		value func(s *cache.Stats) uint64
	}
}

func newStatsCollector(src metricsSources) *statsCollector {
	d := newFamily
	c := &statsCollector{
		src:      src,
		up:       d("memcached_up", "Could the memcached server be reached."),
		version:  d("memcached_version", "The version of this memcached server.", "version"),
		info:     d("tandem_info", "tandem's release and scheduling mode.", "version", "mode"),
		commands: d("memcached_commands_total", "Total number of all requests broken down by command (get, set, etc.) and status.", "command", "status"),
		closed:   d("tandem_connections_closed_total", "Connections closed by the server, by reason.", "reason"),
		lruHits:  d("memcached_slab_lru_hits_total", "Number of get_hits to the LRU.", "slab", "lru"),
		slabCommands: d("memcached_slab_commands_total",
			"Total number of all requests broken down by command (get, set, etc.) and status per slab.", "slab", "command", "status"),
	}
	g := func(name, help string, vt valueType, v func(s *handler.Stats) float64) statMetric {
		return statMetric{desc: d(name, help), vt: vt, value: v}
	}
	counter, gauge := counterValue, gaugeValue
	srv := func(c handler.ServerCounter) func(s *handler.Stats) float64 {
		return func(s *handler.Stats) float64 { return float64(s.Server.Counters[c]) }
	}
	c.general = []statMetric{
		g("memcached_uptime_seconds", "Number of seconds since the server started.", counter,
			func(s *handler.Stats) float64 { return float64(s.Uptime()) }),
		g("memcached_time_seconds", "current UNIX time according to the server.", gauge,
			func(s *handler.Stats) float64 { return float64(s.Now.Unix()) }),
		g("memcached_process_user_cpu_seconds_total", "Accumulated user time for this process.", counter,
			func(s *handler.Stats) float64 { return s.RusageUser.Seconds() }),
		g("memcached_process_system_cpu_seconds_total", "Accumulated system time for this process.", counter,
			func(s *handler.Stats) float64 { return s.RusageSystem.Seconds() }),
		g("memcached_read_bytes_total", "Total number of bytes read by this server from network.", counter,
			func(s *handler.Stats) float64 { return float64(s.Counters[handler.BytesRead]) }),
		g("memcached_written_bytes_total", "Total number of bytes sent by this server to network.", counter,
			func(s *handler.Stats) float64 { return float64(s.Counters[handler.BytesWritten]) }),
		g("memcached_current_connections", "Current number of open connections.", gauge,
			func(s *handler.Stats) float64 { return float64(s.Server.CurrConns) }),
		g("memcached_max_connections", "Maximum number of clients allowed.", gauge,
			func(s *handler.Stats) float64 { return float64(s.Server.MaxConns) }),
		g("memcached_connections_total", "Total number of connections opened since the server started running.", counter,
			srv(handler.TotalConns)),
		g("memcached_connections_rejected_total", "Total number of connections rejected due to hitting the -c limit.", counter,
			srv(handler.RejectedConns)),
		g("memcached_connections_listener_disabled_total", "Number of times that memcached has hit its connections limit and disabled its listener.", counter,
			srv(handler.ListenDisabled)),
		g("memcached_connections_yielded_total", "Total number of connections yielded running due to hitting the memcached's -R limit.", counter,
			srv(handler.ConnYields)),
		g("memcached_current_bytes", "Current number of bytes used to store items.", gauge,
			func(s *handler.Stats) float64 { return float64(s.Cache.Bytes) }),
		g("memcached_limit_bytes", "Number of bytes this server is allowed to use for storage.", gauge,
			func(s *handler.Stats) float64 { return float64(s.Cache.LimitMaxbytes) }),
		g("memcached_current_items", "Current number of items stored by this instance.", gauge,
			func(s *handler.Stats) float64 { return float64(s.Cache.CurrItems) }),
		g("memcached_items_total", "Total number of items stored during the life of this instance.", counter,
			func(s *handler.Stats) float64 { return float64(s.Cache.TotalItems) }),
		g("memcached_items_evicted_total", "Total number of valid items removed from cache to free memory for new items.", counter,
			func(s *handler.Stats) float64 { return float64(s.Cache.Evictions) }),
		g("memcached_items_reclaimed_total", "Total number of times an entry was stored using memory from an expired entry.", counter,
			func(s *handler.Stats) float64 { return float64(s.Cache.Reclaimed) }),
		g("memcached_item_too_large_total", "The number of times an item exceeded the max-item-size when being stored.", counter,
			func(s *handler.Stats) float64 { return float64(s.Cache.StoreTooLarge) }),
		g("memcached_item_no_memory_total", "The number of times an item could not be stored due to no more memory.", counter,
			func(s *handler.Stats) float64 { return float64(s.Cache.StoreNoMemory) }),
		g("memcached_accepting_connections", "The Memcached server is currently accepting new connections.", gauge,
			func(s *handler.Stats) float64 { return b2f(!s.Server.NotAccepting) }),
		g("memcached_malloc_failed_total", "Number of malloc fails.", counter,
			func(*handler.Stats) float64 { return 0 }), // Go has no failing allocation to count
		g("memcached_connections_reserved_fds", "Number of misc fds used internally.", gauge, // sic: the exporter's name
			func(s *handler.Stats) float64 { return float64(s.Server.ReservedFDs) }),
		// memcached_exporter's remaining families that "stats" feeds. The
		// LRU crawler's count lru_crawler metadumps, which memcached runs as
		// crawls; tandem has no LRU maintainer or segmented LRU to move items.
		g("memcached_malloced_bytes", "Number of bytes of memory allocated to slab pages (tandem: charged against -m, pages and index).", gauge,
			func(s *handler.Stats) float64 { return float64(s.Cache.Used) }),
		g("memcached_direct_reclaims_total", "Times worker threads had to directly reclaim or evict items.", counter,
			func(*handler.Stats) float64 { return 0 }),
		g("memcached_lru_crawler_starts_total", "Times an LRU crawler was started.", counter,
			func(s *handler.Stats) float64 { return float64(s.Counters[handler.CrawlerStarts]) }),
		g("memcached_lru_crawler_reclaimed_total", "Total items freed by LRU Crawler.", counter,
			func(*handler.Stats) float64 { return 0 }),
		g("memcached_lru_crawler_items_checked_total", "Total items examined by LRU Crawler.", counter,
			func(s *handler.Stats) float64 { return float64(s.Counters[handler.CrawlerItemsChecked]) }),
		g("memcached_lru_crawler_moves_to_cold_total", "Total number of items moved from HOT/WARM to COLD LRU's.", counter,
			func(*handler.Stats) float64 { return 0 }),
		g("memcached_lru_crawler_moves_to_warm_total", "Total number of items moved from COLD to WARM LRU.", counter,
			func(*handler.Stats) float64 { return 0 }),
		g("memcached_lru_crawler_moves_within_lru_total", "Total number of items reshuffled within HOT or WARM LRU's.", counter,
			func(*handler.Stats) float64 { return 0 }),
		// memcached_exporter emits these two with the proxy's families; "stats"
		// has them outside proxy mode too (0).
		g("memcached_round_robin_fallback_total", "Total times the proxy fell back to round-robin routing.", counter,
			func(*handler.Stats) float64 { return 0 }),
		g("memcached_unexpected_napi_ids_total", "Total unexpected internal event-loop IDs seen by the proxy.", counter,
			func(*handler.Stats) float64 { return 0 }),
		g("tandem_event_loops", "Event loops (-t).", gauge,
			func(s *handler.Stats) float64 { return float64(s.Server.Threads) }),
		g("tandem_workers", "Worker pool size (--workers; 0 outside pool mode).", gauge,
			func(s *handler.Stats) float64 { return float64(s.Server.Workers) }),
		g("tandem_pool_running", "Workers running a connection's batch right now.", gauge,
			func(s *handler.Stats) float64 { return float64(s.Server.PoolRunning) }),
		g("tandem_pool_parked", "Connections with work waiting for a free worker.", gauge,
			func(s *handler.Stats) float64 { return float64(s.Server.PoolParked) }),
		g("tandem_pool_overloads_total", "Submissions refused because every worker was busy (the connection was parked).", counter,
			srv(handler.PoolOverloads)),
		g("tandem_panics_total", "Requests whose execution panicked (their connection was closed).", counter,
			srv(handler.Panics)),
	}
	set := func(name, help, setting string) settingMetric {
		return settingMetric{desc: d(name, help), setting: setting}
	}
	c.settings = []settingMetric{
		set("memcached_lru_crawler_enabled", "Whether the LRU crawler is enabled.", "lru_crawler"),
		set("memcached_lru_crawler_sleep", "Microseconds to sleep between LRU crawls.", "lru_crawler_sleep"),
		set("memcached_lru_crawler_to_crawl", "Max items to crawl per slab per run.", "lru_crawler_tocrawl"),
		set("memcached_lru_crawler_maintainer_thread", "Split LRU mode and background threads.", "lru_maintainer_thread"),
		set("memcached_lru_crawler_hot_percent", "Percent of slab memory reserved for HOT LRU.", "hot_lru_pct"),
		set("memcached_lru_crawler_warm_percent", "Percent of slab memory reserved for WARM LRU.", "warm_lru_pct"),
		set("memcached_lru_crawler_hot_max_factor", "Set idle age of HOT LRU to COLD age * this", "hot_max_factor"),
		set("memcached_lru_crawler_warm_max_factor", "Set idle age of WARM LRU to COLD age * this", "warm_max_factor"),
	}
	sh := func(name, help string, vt valueType, v func(s *cache.ShardStats) uint64) shardMetric {
		return shardMetric{desc: d(name, help, "slab"), vt: vt, value: v}
	}
	zero := func(*cache.ShardStats) uint64 { return 0 }
	slab := func(f func(v handler.SlabView) uint64) func(s *cache.ShardStats) uint64 {
		return func(s *cache.ShardStats) uint64 { return f(handler.ShardSlab(s)) }
	}
	c.shards = []shardMetric{
		sh("memcached_slab_current_items", "Number of items currently stored in this slab class (tandem: cache shard).", gauge,
			func(s *cache.ShardStats) uint64 { return s.CurrItems }),
		sh("memcached_slab_items_age_seconds", "Number of seconds the oldest item has been in the slab class (tandem: since its last access).", gauge,
			func(s *cache.ShardStats) uint64 { return uint64(s.Age) }),
		sh("memcached_slab_mem_requested_bytes", "Number of bytes of memory actual items take up within a slab.", gauge,
			func(s *cache.ShardStats) uint64 { return s.Bytes }),
		sh("memcached_slab_items_evicted_total", "Total number of times an item had to be evicted from the LRU before it expired.", counter,
			func(s *cache.ShardStats) uint64 { return s.Evictions }),
		sh("memcached_slab_items_evicted_unfetched_total", "Total number of items evicted and never fetched.", counter,
			func(s *cache.ShardStats) uint64 { return s.EvictedUnfetched }),
		sh("memcached_slab_items_expired_unfetched_total", "Total number of valid items evicted from the LRU which were never touched after being set.", counter,
			func(s *cache.ShardStats) uint64 { return s.ExpiredUnfetched }),
		sh("memcached_slab_items_outofmemory_total", "Total number of items for this slab class that have triggered an out of memory error.", counter,
			func(s *cache.ShardStats) uint64 { return s.StoreNoMemory }),
		sh("memcached_slab_items_reclaimed_total", "Total number of items reclaimed.", counter,
			func(s *cache.ShardStats) uint64 { return s.Reclaimed }),
		// As "stats items" reports them: one LRU per shard, as COLD; what the
		// cache does not report (evicted_nonzero, evicted_time) is 0.
		sh("memcached_slab_items_crawler_reclaimed_total", "Number of items freed by the LRU Crawler.", counter, zero),
		sh("memcached_slab_items_evicted_nonzero_total", "Total number of times an item which had an explicit expire time set had to be evicted from the LRU before it expired.", counter, zero),
		sh("memcached_slab_items_evicted_time_seconds", "Seconds since the last access for the most recent item evicted from this class.", counter, zero),
		sh("memcached_slab_items_tailrepairs_total", "Total number of times the entries for a particular ID need repairing.", counter, zero),
		sh("memcached_slab_items_moves_to_cold", "Number of items moved from HOT or WARM into COLD.", counter, zero),
		sh("memcached_slab_items_moves_to_warm", "Number of items moves from COLD into WARM.", counter, zero),
		sh("memcached_slab_items_moves_within_lru", "Number of times active items were bumped within HOT or WARM.", counter, zero),
		sh("memcached_slab_hot_items", "Number of items presently stored in the HOT LRU.", gauge, zero),
		sh("memcached_slab_warm_items", "Number of items presently stored in the WARM LRU.", gauge, zero),
		sh("memcached_slab_cold_items", "Number of items presently stored in the COLD LRU.", gauge,
			func(s *cache.ShardStats) uint64 { return s.CurrItems }),
		sh("memcached_slab_temporary_items", "Number of items presently stored in the TEMPORARY LRU.", gauge, zero),
		sh("memcached_slab_hot_age_seconds", "Age of the oldest item in HOT LRU.", gauge, zero),
		sh("memcached_slab_warm_age_seconds", "Age of the oldest item in HOT LRU.", gauge, zero), // sic: the exporter's help
		// As "stats slabs" reports them (handler.SlabView).
		sh("memcached_slab_chunk_size_bytes", "Number of bytes allocated to each chunk within this slab class.", gauge,
			slab(func(v handler.SlabView) uint64 { return v.ChunkSize })),
		sh("memcached_slab_chunks_per_page", "Number of chunks within a single page for this slab class.", gauge,
			slab(func(v handler.SlabView) uint64 { return v.ChunksPerPage })),
		sh("memcached_slab_current_pages", "Number of pages allocated to this slab class.", gauge,
			slab(func(v handler.SlabView) uint64 { return v.TotalPages })),
		sh("memcached_slab_current_chunks", "Number of chunks allocated to this slab class.", gauge,
			slab(func(v handler.SlabView) uint64 { return v.TotalChunks })),
		sh("memcached_slab_chunks_used", "Number of chunks allocated to an item.", gauge,
			slab(func(v handler.SlabView) uint64 { return v.UsedChunks })),
		sh("memcached_slab_chunks_free", "Number of chunks not yet allocated items.", gauge,
			slab(func(v handler.SlabView) uint64 { return v.FreeChunks })),
		sh("memcached_slab_chunks_free_end", "Number of free chunks at the end of the last allocated page.", gauge,
			slab(func(v handler.SlabView) uint64 { return v.FreeChunksEnd })),
	}
	type cm = struct {
		desc  *family
		vt    valueType
		value func(s *cache.Stats) uint64
	}
	c.cacheIdx = []cm{
		{d("tandem_cache_shards", "Cache shards (each with its own lock, TinyLFU index and byte budget)."), gauge,
			func(s *cache.Stats) uint64 { return s.Shards }},
		{d("tandem_cache_index_capacity", "Sum of the shards' TinyLFU capacities, in items."), gauge,
			func(s *cache.Stats) uint64 { return s.IndexCapacity }},
		{d("tandem_cache_index_entries", "TinyLFU entries: live items plus tombstones."), gauge,
			func(s *cache.Stats) uint64 { return s.IndexEntries }},
		{d("tandem_cache_tombstones", "Deleted, expired or evicted entries still remembered by TinyLFU."), gauge,
			func(s *cache.Stats) uint64 { return s.Tombstones }},
		{d("tandem_cache_window_items", "Items in the shards' recency windows, not yet offered to TinyLFU (the rest are in the main space)."), gauge,
			func(s *cache.Stats) uint64 { return s.WindowItems }},
		{d("tandem_cache_rebuilds_total", "TinyLFU index rebuilds (grow, shrink, tombstone purge)."), counter,
			func(s *cache.Stats) uint64 { return s.Rebuilds }},
		{d("tandem_cache_byte_evictions_total", "Evictions of the items on a page taken for another size class or released for room, not by TinyLFU."), counter,
			func(s *cache.Stats) uint64 { return s.ByteEvictions }},
	}
	return c
}

// collect adds a scrape's samples to e.
func (c *statsCollector) collect(e *expo) {
	st := c.src.Handler.Stats()
	e.add(c.up, gaugeValue, 1)
	e.add(c.version, gaugeValue, 1, handler.Version)
	e.add(c.info, gaugeValue, 1, version, st.Server.Mode)
	for _, m := range c.general {
		e.add(m.desc, m.vt, m.value(&st))
	}
	c.collectCommands(e, &st)
	e.add(c.closed, counterValue, float64(st.Server.Counters[handler.ClosedOverflow]), "overflow")
	e.add(c.closed, counterValue, float64(st.Server.Counters[handler.ClosedIdle]), "idle")
	for _, s := range c.src.Cache.ShardStats(nil) {
		if s.CurrItems == 0 && s.CmdSet == 0 {
			continue // like "stats items": only shards in use
		}
		slab := strconv.Itoa(s.Shard + 1)
		for _, m := range c.shards {
			e.add(m.desc, m.vt, float64(m.value(&s)), slab)
		}
		for _, lru := range [...]string{"hot", "warm", "cold", "temporary"} {
			hits := uint64(0)
			if lru == "cold" {
				hits = s.GetHits
			}
			e.add(c.lruHits, counterValue, float64(hits), slab, lru)
		}
		c.collectSlabCommands(e, slab, &s.Stats)
	}
	c.collectSettings(e)
	cs := c.src.Cache.Stats()
	for _, m := range c.cacheIdx {
		e.add(m.desc, m.vt, float64(m.value(&cs)))
	}
}

// collectCommands emits memcached_commands_total as memcached_exporter
// derives it from the stats fields.
func (c *statsCollector) collectCommands(e *expo, st *handler.Stats) {
	cs := &st.Cache
	emit := func(v uint64, command, status string) {
		e.add(c.commands, counterValue, float64(v), command, status)
	}
	emit(cs.GetHits, "get", "hit")
	emit(cs.GetMisses, "get", "miss")
	emit(cs.DeleteHits, "delete", "hit")
	emit(cs.DeleteMisses, "delete", "miss")
	emit(cs.IncrHits, "incr", "hit")
	emit(cs.IncrMisses, "incr", "miss")
	emit(cs.DecrHits, "decr", "hit")
	emit(cs.DecrMisses, "decr", "miss")
	emit(cs.CasHits, "cas", "hit")
	emit(cs.CasMisses, "cas", "miss")
	emit(cs.TouchHits, "touch", "hit")
	emit(cs.TouchMisses, "touch", "miss")
	emit(cs.CasBadval, "cas", "badval")
	emit(cs.CmdFlush, "flush", "hit")
	// cmd_set counts cas commands too; the exporter subtracts them.
	emit(cs.CmdSet-min(cs.CmdSet, cs.CasMisses+cs.CasHits+cs.CasBadval), "set", "hit")
}

// b2f is 1 for true, 0 for false.
func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// collectSlabCommands emits memcached_slab_commands_total for one class as
// memcached_exporter derives it from "stats slabs".
func (c *statsCollector) collectSlabCommands(e *expo, slab string, s *cache.Stats) {
	emit := func(v uint64, command, status string) {
		e.add(c.slabCommands, counterValue, float64(v), slab, command, status)
	}
	emit(s.GetHits, "get", "hit")
	emit(s.DeleteHits, "delete", "hit")
	emit(s.IncrHits, "incr", "hit")
	emit(s.DecrHits, "decr", "hit")
	emit(s.CasHits, "cas", "hit")
	emit(s.TouchHits, "touch", "hit")
	emit(s.CasBadval, "cas", "badval")
	emit(s.CmdSet-min(s.CmdSet, s.CasHits+s.CasBadval), "set", "hit")
}

// collectSettings emits the LRU crawler gauges from "stats settings", as
// memcached_exporter reads them (yes/no as 1/0). The exporter emits them
// only while memcached's crawler is on; tandem always does, with its
// crawler reported off (lru_crawler no: tandem has none; its expiry sweep
// does that work).
func (c *statsCollector) collectSettings(e *expo) {
	if c.src.Settings == nil {
		return
	}
	values := map[string]string{}
	for _, s := range c.src.Settings() {
		values[s.Name] = s.Value
	}
	for _, m := range c.settings {
		v, ok := values[m.setting]
		if !ok {
			continue
		}
		var f float64
		switch v {
		case "yes":
			f = 1
		case "no":
			f = 0
		default:
			var err error
			if f, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		e.add(m.desc, gaugeValue, f)
	}
}
