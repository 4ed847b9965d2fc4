package main

import (
	"github.com/tandemcache/tandem/protocol/handler"
	"github.com/tandemcache/tandem/reactor"
)

// settingsOrder is the order of "stats settings": every row memcached
// 1.6.18 prints, in its order, then tandem's own. The flag table
// (options.go) renders each row, but those in fixedSettings.
var settingsOrder = []string{
	"maxbytes", "maxconns", "tcpport", "udpport", "inter", "verbosity", "oldest", "evictions",
	"domain_socket", "umask", "shutdown_command", "growth_factor", "chunk_size", "num_threads",
	"num_threads_per_udp", "stat_key_prefix", "detail_enabled", "reqs_per_event", "cas_enabled",
	"tcp_backlog", "binding_protocol", "auth_enabled_sasl", "auth_enabled_ascii", "item_size_max",
	"maxconns_fast", "hashpower_init", "slab_reassign", "slab_automove", "slab_automove_ratio",
	"slab_automove_window", "slab_chunk_max", "lru_crawler", "lru_crawler_sleep", "lru_crawler_tocrawl",
	"tail_repair_time", "flush_enabled", "dump_enabled", "hash_algorithm", "lru_maintainer_thread",
	"lru_segmented", "hot_lru_pct", "warm_lru_pct", "hot_max_factor", "warm_max_factor", "temp_lru",
	"temporary_ttl", "idle_timeout", "watcher_logbuf_size", "worker_logbuf_size", "read_buf_mem_limit",
	"track_sizes", "inline_ascii_response", "ext_item_size", "ext_item_age", "ext_low_ttl",
	"ext_recache_rate", "ext_wbuf_size", "ext_compact_under", "ext_drop_under", "ext_max_sleep",
	"ext_max_frag", "slab_automove_freeratio", "ext_drop_unread", "ssl_enabled", "ssl_chain_cert",
	"ssl_key", "ssl_verify_mode", "ssl_keyformat", "ssl_ciphers", "ssl_ca_cert", "ssl_wbuf_size",
	"ssl_session_cache", "ssl_kernel_tls", "ssl_min_version", "num_napi_ids", "memory_file",
	"tandem_mode", "tandem_workers", "tandem_reuseport",
}

// fixedSettings are the rows of memcached's "stats settings" that no
// option sets, with their value in tandem.
var fixedSettings = []settingRow{
	{"oldest", fixed("0")},
}

// settingRows maps each row of "stats settings" to how it is rendered.
var settingRows = map[string]func(*Config, handler.Live) string{}

func init() {
	for _, o := range options {
		for _, r := range o.settings {
			settingRows[r.name] = r.value
		}
	}
	for _, r := range fixedSettings {
		settingRows[r.name] = r.value
	}
}

// settings lists "stats settings" in settingsOrder, from the configuration
// and live, what commands change at run time.
func settings(cfg *Config, live handler.Live) []handler.Setting {
	out := make([]handler.Setting, 0, len(settingsOrder))
	for _, name := range settingsOrder {
		if value := settingRows[name]; value != nil { // TestFlagTable: every one has a row
			out = append(out, handler.Setting{Name: name, Value: value(cfg, live)})
		}
	}
	return out
}

func workersOf(cfg *Config) int {
	if cfg.Mode == reactor.ModePool {
		return cfg.Workers
	}
	return 0
}
