package handler

import (
	"strconv"
	"syscall"
	"time"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// This file is the single source of the general statistics: Stats is their
// typed snapshot, which "stats" renders (appendGeneralStats), the metrics
// endpoint reads (cmd/tandem), and "stats reset" zeroes at their owners
// (resetStats). A counter lives in one place: the cache's in cache.Stats,
// the network side's in ServerInfo.Counters, the handler's in
// Handler.counters.

// Counter indexes the counters the handler keeps itself (Stats.Counters).
type Counter int

// The handler's counters, with memcached's names.
const (
	CmdMeta             Counter = iota // cmd_meta: as memcached 1.6.18 counts it, "me" commands only
	BytesRead                          // bytes_read
	BytesWritten                       // bytes_written
	AuthCmds                           // auth_cmds: authentication attempts, text or SASL
	AuthErrors                         // auth_errors: failed ones
	CrawlerStarts                      // lru_crawler_starts: lru_crawler metadumps started (memcached counts each as a crawl)
	CrawlerItemsChecked                // crawler_items_checked: items those dumps listed
	NumCounters
)

// ServerCounter indexes ServerInfo.Counters: the network side's counters.
// "stats reset" zeroes them as memcached does, by remembering their values
// (the network side keeps counting).
type ServerCounter int

// The network side's counters.
const (
	TotalConns             ServerCounter = iota // total_connections
	RejectedConns                               // rejected_connections
	ListenDisabled                              // listen_disabled_num
	TimeInListenDisabledUS                      // time_in_listen_disabled_us
	ConnYields                                  // conn_yields
	ReadBufOOM                                  // read_buf_oom
	ResponseObjOOM                              // response_obj_oom
	PoolOverloads                               // tandem_pool_overloads
	Panics                                      // tandem_panics
	ClosedOverflow                              // tandem_closed_overflow: over --max-conn-input/output
	ClosedIdle                                  // tandem_closed_idle: by --idle-timeout
	ReadPauses                                  // tandem_read_pauses: reads paused for a connection over its buffer marks
	SSLHandshakeErrors                          // ssl_handshake_errors: TLS handshakes failed or timed out
	SSLProtoErrors                              // ssl_proto_errors: TLS connections closed on a protocol error
	SSLNewSessions                              // ssl_new_sessions: full TLS handshakes (not resumed)
	NumServerCounters
)

// ServerInfo is the network side's view for "stats". Gauges are named
// fields; counters are in Counters.
type ServerInfo struct {
	Mode     string
	Threads  int
	Workers  int
	MaxConns int

	CurrConns      int64
	ConnStructures int64 // connection_structures: connection states allocated (clients and listeners)
	// ReservedFDs is reserved_fds: the descriptors memcached keeps for
	// itself out of the -c budget (5 per thread), so that fewer clients
	// than -c get in. tandem serves -c clients, whatever else it has open.
	ReservedFDs int64
	// NotAccepting reports that the server stopped accepting connections
	// (memcached: accepting_conns 0 while the -c limit disables the listener).
	NotAccepting     bool
	ReadBufCount     int64 // read_buf_count: read buffers allocated
	ReadBufBytes     int64 // read_buf_bytes
	ReadBufBytesFree int64 // read_buf_bytes_free
	ResponseObjCount int64 // response_obj_count: reply buffers allocated
	ResponseObjBytes int64 // response_obj_bytes

	PoolRunning int
	PoolParked  int64

	// SSLEnabled is -Z: the ssl_* fields are printed only then, as in
	// memcached; ssl_new_sessions only with SSLSessionCache too.
	SSLEnabled      bool
	SSLSessionCache bool
	// SSLCertRefreshed is when the certificate was last loaded
	// (time_since_server_cert_refresh).
	SSLCertRefreshed time.Time

	Counters [NumServerCounters]uint64
}

// Stats is a snapshot of the general statistics. Counters are net of the
// last "stats reset".
type Stats struct {
	PID          int
	Started      time.Time
	Now          time.Time
	RusageUser   time.Duration
	RusageSystem time.Duration
	Server       ServerInfo
	Cache        cache.Stats
	Counters     [NumCounters]uint64
	// DumpsRunning is the lru_crawler metadumps unfinished now
	// (lru_crawler_running is 1 while there is one).
	DumpsRunning int64
	// The watch command's log (watch.go): watchers now, lines formatted,
	// lines sent to watchers, lines a watcher lost for not keeping up.
	LogWatchers       int64
	LogWorkerWritten  uint64
	LogWatcherSent    uint64
	LogWatcherSkipped uint64
}

// Uptime is the whole seconds since the handler started.
func (s *Stats) Uptime() int64 { return int64(s.Now.Sub(s.Started) / time.Second) }

// Stats returns a snapshot of the general statistics. It takes the cache's
// shard locks one at a time and calls Config.Server; it allocates nothing on
// the heap, but is meant for "stats" and scrapes, not for a hot path.
func (h *Handler) Stats() Stats {
	st := Stats{PID: h.pid, Started: h.started, Now: h.cfg.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		st.RusageUser = time.Duration(ru.Utime.Nano())
		st.RusageSystem = time.Duration(ru.Stime.Nano())
	}
	if h.cfg.Server != nil {
		st.Server = h.cfg.Server()
		h.resetMu.Lock()
		for i, base := range h.serverBase {
			st.Server.Counters[i] -= min(base, st.Server.Counters[i])
		}
		h.resetMu.Unlock()
	}
	st.Cache = h.cfg.Cache.Stats()
	st.Cache.CmdSet += h.badChunkSets.Load()
	for i := range h.counters {
		st.Counters[i] = h.counters[i].Load()
	}
	st.DumpsRunning = h.dumpsRunning.Load()
	st.LogWatchers = int64(h.watch.count())
	st.LogWorkerWritten = h.watch.written.Load()
	st.LogWatcherSent = h.watch.sent.Load()
	st.LogWatcherSkipped = h.watch.skipped.Load()
	return st
}

// count adds n to one of the handler's counters.
func (h *Handler) count(c Counter, n uint64) { h.counters[c].Add(n) }

// resetStats zeroes what memcached's "stats reset" zeroes: every counter
// (the cache's, the handler's, the network side's and the per-prefix
// stats), not the gauges (items, bytes, connections).
func (h *Handler) resetStats() {
	h.cfg.Cache.ResetStats()
	for i := range h.counters {
		h.counters[i].Store(0)
	}
	h.badChunkSets.Store(0)
	h.prefixes.reset()
	h.watch.written.Store(0)
	h.watch.sent.Store(0)
	h.watch.skipped.Store(0)
	if h.cfg.Server == nil {
		return
	}
	si := h.cfg.Server()
	h.resetMu.Lock()
	h.serverBase = si.Counters
	h.resetMu.Unlock()
}

// appendGeneralStats writes "stats": every field memcached 1.6.18 prints, in
// its order, then tandem's own. Fields of memcached features tandem does not
// have (slab rebalancing, the LRU maintainer, NAPI ids) are 0,
// as memcached reports them when they are off. The LRU crawler's fields
// count lru_crawler metadumps, which memcached runs as crawls.
func appendGeneralStats(out []byte, st *Stats, eventLib, tandemVersion string) []byte {
	u := func(name string, v uint64) { out = protocol.AppendStatUint(out, name, v) }
	i := func(name string, v int64) { out = protocol.AppendStatInt(out, name, v) }
	s := func(name, v string) { out = protocol.AppendStatString(out, name, v) }
	zero := func(names ...string) {
		for _, n := range names {
			out = protocol.AppendStatUint(out, n, 0)
		}
	}
	si, cs, hc, sc := &st.Server, &st.Cache, &st.Counters, &st.Server.Counters
	accepting := int64(1)
	if si.NotAccepting {
		accepting = 0
	}
	crawling := int64(0)
	if st.DumpsRunning > 0 {
		crawling = 1
	}

	i("pid", int64(st.PID))
	i("uptime", st.Uptime())
	i("time", st.Now.Unix())
	s("version", Version)
	s("libevent", eventLib)
	i("pointer_size", strconv.IntSize)
	s("rusage_user", rusageSeconds(st.RusageUser))
	s("rusage_system", rusageSeconds(st.RusageSystem))
	i("max_connections", int64(si.MaxConns))
	i("curr_connections", si.CurrConns)
	u("total_connections", sc[TotalConns])
	u("rejected_connections", sc[RejectedConns])
	i("connection_structures", si.ConnStructures)
	u("response_obj_oom", sc[ResponseObjOOM])
	i("response_obj_count", si.ResponseObjCount)
	i("response_obj_bytes", si.ResponseObjBytes)
	i("read_buf_count", si.ReadBufCount)
	i("read_buf_bytes", si.ReadBufBytes)
	i("read_buf_bytes_free", si.ReadBufBytesFree)
	u("read_buf_oom", sc[ReadBufOOM])
	i("reserved_fds", si.ReservedFDs)
	u("cmd_get", cs.CmdGet)
	u("cmd_set", cs.CmdSet)
	u("cmd_flush", cs.CmdFlush)
	u("cmd_touch", cs.CmdTouch)
	u("cmd_meta", hc[CmdMeta])
	u("get_hits", cs.GetHits)
	u("get_misses", cs.GetMisses)
	u("get_expired", cs.GetExpired)
	u("get_flushed", cs.GetFlushed)
	u("delete_misses", cs.DeleteMisses)
	u("delete_hits", cs.DeleteHits)
	u("incr_misses", cs.IncrMisses)
	u("incr_hits", cs.IncrHits)
	u("decr_misses", cs.DecrMisses)
	u("decr_hits", cs.DecrHits)
	u("cas_misses", cs.CasMisses)
	u("cas_hits", cs.CasHits)
	u("cas_badval", cs.CasBadval)
	u("touch_hits", cs.TouchHits)
	u("touch_misses", cs.TouchMisses)
	u("store_too_large", cs.StoreTooLarge)
	u("store_no_memory", cs.StoreNoMemory)
	u("auth_cmds", hc[AuthCmds])
	u("auth_errors", hc[AuthErrors])
	u("bytes_read", hc[BytesRead])
	u("bytes_written", hc[BytesWritten])
	u("limit_maxbytes", cs.LimitMaxbytes)
	i("accepting_conns", accepting)
	u("listen_disabled_num", sc[ListenDisabled])
	u("time_in_listen_disabled_us", sc[TimeInListenDisabledUS])
	i("threads", int64(si.Threads))
	u("conn_yields", sc[ConnYields])
	// tandem's cache has no hash table that memcached's hash_* describe.
	zero("hash_power_level", "hash_bytes", "hash_is_expanding",
		"slab_reassign_rescues", "slab_reassign_chunk_rescues", "slab_reassign_evictions_nomem",
		"slab_reassign_inline_reclaim", "slab_reassign_busy_items", "slab_reassign_busy_deletes",
		"slab_reassign_running", "slabs_moved")
	i("lru_crawler_running", crawling)
	u("lru_crawler_starts", hc[CrawlerStarts])
	zero("lru_maintainer_juggles", "malloc_fails", "log_worker_dropped")
	u("log_worker_written", st.LogWorkerWritten)
	u("log_watcher_skipped", st.LogWatcherSkipped)
	u("log_watcher_sent", st.LogWatcherSent)
	i("log_watchers", st.LogWatchers)
	zero("unexpected_napi_ids", "round_robin_fallback")
	u("bytes", cs.Bytes)
	u("curr_items", cs.CurrItems)
	u("total_items", cs.TotalItems)
	zero("slab_global_page_pool")
	u("expired_unfetched", cs.ExpiredUnfetched)
	u("evicted_unfetched", cs.EvictedUnfetched)
	zero("evicted_active")
	u("evictions", cs.Evictions)
	u("reclaimed", cs.Reclaimed)
	// The expiry sweep's reclaims are in reclaimed: tandem has no crawler
	// of that kind.
	zero("crawler_reclaimed")
	u("crawler_items_checked", hc[CrawlerItemsChecked])
	zero("lrutail_reflocked",
		"moves_to_cold", "moves_to_warm", "moves_within_lru", "direct_reclaims", "lru_bumps_dropped")

	if si.SSLEnabled {
		// memcached prints these last, when TLS is on; ssl_proto_errors
		// is from memcached releases newer than 1.6.18.
		if si.SSLSessionCache {
			u("ssl_new_sessions", sc[SSLNewSessions])
		}
		u("ssl_handshake_errors", sc[SSLHandshakeErrors])
		u("ssl_proto_errors", sc[SSLProtoErrors])
		i("time_since_server_cert_refresh", max(int64(st.Now.Sub(si.SSLCertRefreshed)/time.Second), 0))
	}

	// tandem's own fields.
	s("tandem_version", orNULL(tandemVersion))
	s("tandem_mode", orNULL(si.Mode))
	i("tandem_event_loops", int64(si.Threads))
	i("tandem_workers", int64(si.Workers))
	i("tandem_pool_running", int64(si.PoolRunning))
	i("tandem_pool_parked", si.PoolParked)
	u("tandem_pool_overloads", sc[PoolOverloads])
	u("tandem_panics", sc[Panics])
	u("tandem_closed_overflow", sc[ClosedOverflow])
	u("tandem_closed_idle", sc[ClosedIdle])
	u("tandem_read_pauses", sc[ReadPauses])
	return out
}

// orNULL is v, or memcached's "NULL" for an unset string.
func orNULL(v string) string {
	if v == "" {
		return "NULL"
	}
	return v
}

// rusageSeconds formats a CPU time like memcached ("%ld.%06ld").
func rusageSeconds(d time.Duration) string {
	us := d.Microseconds()
	frac := strconv.FormatInt(us%1e6, 10)
	return strconv.FormatInt(us/1e6, 10) + "." + "000000"[len(frac):] + frac
}
