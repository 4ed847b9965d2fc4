package main

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	"github.com/tandemcache/tandem/protocol/handler"
	"github.com/tandemcache/tandem/reactor"
)

// settings lists "stats settings": every field memcached 1.6.18 prints, in
// its order, then tandem's own. Switches of memcached features tandem does
// not have (slab rebalancing, the LRU crawler and maintainer, TLS, external
// storage) are off; their tuning values, inert as in a memcached with the
// feature off, are memcached's defaults. live holds what commands change at
// run time.
func settings(cfg *Config, live handler.Live) []handler.Setting {
	yesNo := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	orNULL := func(v string) string {
		if v == "" {
			return "NULL"
		}
		return v
	}
	orCNull := func(v string) string { // C's printf of a NULL string
		if v == "" {
			return "(null)"
		}
		return v
	}
	evictions := "on"
	if cfg.DisableEvictions {
		evictions = "off"
	}
	proto := map[string]string{"auto": "auto-negotiate", "ascii": "ascii", "binary": "binary"}[cfg.Protocol]
	auth := cfg.AuthFile != ""
	list := [][2]string{
		{"maxbytes", strconv.FormatInt(cmp.Or(live.MaxBytes, cfg.MemoryMB<<20), 10)},
		{"maxconns", strconv.Itoa(cfg.MaxConns)},
		{"tcpport", strconv.Itoa(cfg.Port)},
		{"udpport", "0"}, // UDP is not served, whatever -U says
		{"inter", strings.Join(cfg.Listen, ",")},
		{"verbosity", strconv.Itoa(live.Verbosity)},
		{"oldest", "0"},
		{"evictions", evictions},
		{"domain_socket", orNULL(cfg.UnixSocket)},
		{"umask", strconv.FormatUint(uint64(cfg.UnixMask), 8)},
		{"shutdown_command", yesNo(cfg.EnableShutdown)},
		{"growth_factor", strconv.FormatFloat(cfg.GrowthFactor, 'f', 2, 64)},
		{"chunk_size", strconv.Itoa(cfg.SlabMinSize)},
		{"num_threads", strconv.Itoa(cfg.Threads)},
		{"num_threads_per_udp", strconv.Itoa(cfg.Threads)},
		{"stat_key_prefix", string(live.PrefixDelimiter)},
		{"detail_enabled", yesNo(live.DetailEnabled)},
		{"reqs_per_event", strconv.Itoa(cfg.ReqsPerEvent)},
		{"cas_enabled", yesNo(!cfg.DisableCAS)},
		{"tcp_backlog", strconv.Itoa(cfg.Backlog)},
		{"binding_protocol", proto},
		{"auth_enabled_sasl", yesNo(auth)},
		{"auth_enabled_ascii", yesNo(auth)},
		{"item_size_max", strconv.Itoa(cfg.MaxItemSize)},
		{"maxconns_fast", "yes"}, // a connection over -c is answered and closed
		{"hashpower_init", "0"},
		// slabs reassign and automove are accepted (tandem moves memory
		// between its classes by itself): see protocol/handler/admin.go.
		{"slab_reassign", "yes"},
		{"slab_automove", strconv.Itoa(live.SlabAutomove)},
		{"slab_automove_ratio", strconv.FormatFloat(live.SlabAutomoveRatio, 'f', 2, 64)},
		{"slab_automove_window", "30"},
		{"slab_chunk_max", "524288"},
		// The expiry sweep is tandem's crawler (protocol/handler/crawler.go).
		{"lru_crawler", yesNo(live.LRUCrawler)},
		{"lru_crawler_sleep", strconv.FormatUint(uint64(live.LRUCrawlerSleep), 10)},
		{"lru_crawler_tocrawl", strconv.FormatUint(uint64(live.LRUCrawlerToCrawl), 10)},
		{"tail_repair_time", "0"},
		{"flush_enabled", yesNo(!cfg.DisableFlushAll)},
		{"dump_enabled", yesNo(!cfg.DisableDumps)},
		{"hash_algorithm", "maphash"},
		{"lru_maintainer_thread", "no"},
		{"lru_segmented", "no"},
		{"hot_lru_pct", "20"},
		{"warm_lru_pct", "40"},
		{"hot_max_factor", "0.20"},
		{"warm_max_factor", "2.00"},
		{"temp_lru", "no"},
		{"temporary_ttl", "61"},
		{"idle_timeout", strconv.Itoa(int(cfg.IdleTimeout / time.Second))},
		{"watcher_logbuf_size", "262144"},
		{"worker_logbuf_size", "65536"},
		// --conn-buffer-limit (memcached's -o read_buf_mem_limit), bytes; 0: none.
		{"read_buf_mem_limit", strconv.FormatInt(max(cfg.BufferLimit, 0), 10)},
		{"track_sizes", "no"},
		{"inline_ascii_response", "no"},
		{"ext_item_size", "512"},
		{"ext_item_age", "4294967295"},
		{"ext_low_ttl", "0"},
		{"ext_recache_rate", "2000"},
		{"ext_wbuf_size", "4194304"},
		{"ext_compact_under", "0"},
		{"ext_drop_under", "0"},
		{"ext_max_sleep", "1000000"},
		{"ext_max_frag", "0.80"},
		{"slab_automove_freeratio", "0.010"},
		{"ext_drop_unread", "no"},
		// TLS, as memcached prints it (ssl_verify_mode as OpenSSL's bits).
		{"ssl_enabled", yesNo(cfg.TLS.Enabled)},
		{"ssl_chain_cert", orCNull(cfg.TLS.ChainCert)},
		{"ssl_key", orCNull(cfg.TLS.Key)},
		{"ssl_verify_mode", sslVerifyModeSetting(cfg.TLS.VerifyMode)},
		{"ssl_keyformat", strconv.Itoa(cfg.TLS.KeyFormat)},
		{"ssl_ciphers", orNULL(cfg.TLS.Ciphers)},
		{"ssl_ca_cert", orNULL(cfg.TLS.CACert)},
		{"ssl_wbuf_size", strconv.Itoa(cfg.TLS.WbufSize)},
		{"ssl_session_cache", yesNo(cfg.TLS.SessionCache)},
		{"ssl_kernel_tls", yesNo(cfg.TLS.KernelTLS)},
		{"ssl_min_version", cfg.TLS.MinVersion},
		{"num_napi_ids", "(null)"},
		{"memory_file", orCNull(cfg.MemoryFile)},
		{"tandem_mode", string(cfg.Mode)},
		{"tandem_workers", strconv.Itoa(workersOf(cfg))},
		{"tandem_reuseport", yesNo(cfg.ReusePort)},
	}
	out := make([]handler.Setting, len(list))
	for i, kv := range list {
		out[i] = handler.Setting{Name: kv[0], Value: kv[1]}
	}
	return out
}

func workersOf(cfg *Config) int {
	if cfg.Mode == reactor.ModePool {
		return cfg.Workers
	}
	return 0
}
