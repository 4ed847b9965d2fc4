package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// extendedKeys are the -o keys memcached 1.6.18 accepts (Debian's build,
// with TLS and extstore), with what tandem makes of each, but the ssl_*
// keys (TLSSettings.applySSLOption). Keys tandem acts on are handled in
// applyExtended; the extstore keys (ext_*) are refused (see
// Config.unservable); the others are accepted with the warning given here.
var extendedKeys = map[string]string{
	"maxconns_fast":           "",
	"no_maxconns_fast":        "tandem always answers a connection over -c with an error and closes it",
	"hashpower":               "tandem's cache has no hash table to presize",
	"no_hashexpand":           "tandem's cache has no hash table to expand",
	"slab_reassign":           "tandem's size classes are its own; its cache moves memory between them by itself",
	"no_slab_reassign":        "tandem's size classes are its own; its cache moves memory between them by itself",
	"slab_automove":           "tandem's size classes are its own; its cache moves memory between them by itself",
	"no_slab_automove":        "tandem's size classes are its own; its cache moves memory between them by itself",
	"slab_automove_ratio":     "tandem's size classes are its own; its cache moves memory between them by itself",
	"slab_automove_window":    "tandem's size classes are its own; its cache moves memory between them by itself",
	"slab_automove_freeratio": "tandem's size classes are its own; its cache moves memory between them by itself",
	"slab_sizes":              "tandem's size classes are its own; its cache moves memory between them by itself",
	"slab_chunk_max":          "tandem's size classes are its own; its cache moves memory between them by itself",
	"no_chunked_items":        "tandem's size classes are its own; its cache moves memory between them by itself",
	"tail_repair_time":        "tandem's eviction never waits on referenced items",
	"hash_algorithm":          "tandem hashes keys with Go's maphash",
	"lru_crawler":             "tandem has no LRU crawler (expired items are reclaimed as they are met and by a sweep)",
	"no_lru_crawler":          "tandem has no LRU crawler",
	"lru_crawler_sleep":       "tandem has no LRU crawler",
	"lru_crawler_tocrawl":     "tandem has no LRU crawler",
	"lru_maintainer":          "tandem's eviction is TinyLFU, without memcached's LRU maintainer",
	"no_lru_maintainer":       "tandem's eviction is TinyLFU, without memcached's LRU maintainer",
	"hot_lru_pct":             "tandem's eviction is TinyLFU, without memcached's segmented LRU",
	"warm_lru_pct":            "tandem's eviction is TinyLFU, without memcached's segmented LRU",
	"hot_max_factor":          "tandem's eviction is TinyLFU, without memcached's segmented LRU",
	"warm_max_factor":         "tandem's eviction is TinyLFU, without memcached's segmented LRU",
	"temporary_ttl":           "tandem's eviction is TinyLFU, without memcached's temporary LRU",
	"idle_timeout":            "",
	"watcher_logbuf_size":     "tandem's watch buffers 256 KiB per watcher",
	"worker_logbuf_size":      "tandem's watch has no per-worker log buffers",
	"track_sizes":             "tandem does not track item sizes (stats sizes reports disabled)",
	"no_inline_ascii_resp":    "a memcached memory layout option",
	"inline_ascii_resp":       "a memcached memory layout option",
	"modern":                  "a memcached defaults switch",
	"no_modern":               "a memcached defaults switch",
	"drop_privileges":         "tandem does not restrict its system calls",
	"no_drop_privileges":      "tandem does not restrict its system calls",
	"resp_obj_mem_limit":      "deprecated in memcached too",
	"read_buf_mem_limit":      "",
	"sock_cookie_id":          "tandem does not set socket cookies",
	"ext_path":                "tandem has no external storage; items stay within -m in memory",
	"ext_page_size":           "tandem has no external storage",
	"ext_wbuf_size":           "tandem has no external storage",
	"ext_threads":             "tandem has no external storage",
	"ext_io_depth":            "tandem has no external storage",
	"ext_item_size":           "tandem has no external storage",
	"ext_item_age":            "tandem has no external storage",
	"ext_low_ttl":             "tandem has no external storage",
	"ext_drop_unread":         "tandem has no external storage",
	"ext_recache_rate":        "tandem has no external storage",
	"ext_compact_under":       "tandem has no external storage",
	"ext_drop_under":          "tandem has no external storage",
	"ext_max_frag":            "tandem has no external storage",
	"ext_max_sleep":           "tandem has no external storage",
}

// applyExtended maps memcached's -o options onto tandem's settings: the
// keys tandem acts on are applied, the others are warned about, and a key
// memcached does not know is an error, as in memcached.
func (c *Config) applyExtended() error {
	for _, opt := range c.Options {
		for _, kv := range strings.Split(opt, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if ok, warn, err := c.TLS.applySSLOption(k, v); ok {
				if err != nil {
					return err
				}
				if warn != "" {
					c.Warnings = append(c.Warnings, warn)
				}
				continue
			}
			why, known := extendedKeys[k]
			switch {
			case k == "memory_file": // -e as an -o key; memcached 1.6.18 knows only -e
				if v == "" {
					return fmt.Errorf("-o memory_file: a file name is required")
				}
				c.MemoryFile = v
			case k == "":
			case !known:
				return fmt.Errorf("-o: unknown option %q (memcached 1.6.18 has no such key)", kv)
			case strings.HasPrefix(k, "ext_"):
				// Refused in Validate (see unservable), as -e is.
				c.Extstore = append(c.Extstore, kv)
			case k == "idle_timeout":
				secs, err := strconv.Atoi(v)
				if err != nil || secs < 0 {
					return fmt.Errorf("-o idle_timeout: bad seconds %q", v)
				}
				c.IdleTimeout = time.Duration(secs) * time.Second
			case k == "read_buf_mem_limit":
				mb, err := strconv.Atoi(v)
				if err != nil || mb < 0 {
					return fmt.Errorf("-o read_buf_mem_limit: bad megabytes %q", v)
				}
				c.BufferLimit = int64(mb) << 20 // --conn-buffer-limit
				if mb == 0 {
					c.BufferLimit = -1 // memcached: 0 means no limit
				}
			case why == "":
				// Already tandem's behaviour (maxconns_fast).
			default:
				c.Warnings = append(c.Warnings, "-o "+kv+": "+why+"; ignored")
			}
		}
	}
	return nil
}
