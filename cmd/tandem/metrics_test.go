package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsAddr returns the address the server logged for its metrics endpoint.
func metricsAddr(t *testing.T, s *server) string {
	t.Helper()
	for line := range strings.SplitSeq(s.Log(), "\n") {
		var e struct {
			Message string `json:"message"`
			Addr    string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Message == "metrics listening" {
			return e.Addr
		}
	}
	t.Fatalf("no \"metrics listening\" log line:\n%s", s.Log())
	return ""
}

// scrape fetches url and returns the body and status code.
func scrape(t *testing.T, url string) (string, int) {
	t.Helper()
	cl := &http.Client{Timeout: time.Minute} // a hang guard
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(body), resp.StatusCode
}

// promSamples parses the text exposition format into "name{labels}" -> value.
func promSamples(t *testing.T, body string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("bad exposition line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad value in %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// checkExposition parses body with the Prometheus project's own text parser
// (bad escapes, values or types), checks that each family's samples follow
// its own TYPE line, once (the parser lets a split family through), and
// checks the types of a few families.
func checkExposition(t *testing.T, body string) {
	t.Helper()
	typed, cur := map[string]bool{}, ""
	for line := range strings.SplitSeq(body, "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			cur, _, _ = strings.Cut(f, " ")
			if typed[cur] {
				t.Errorf("second TYPE line for %s", cur)
			}
			typed[cur] = true
		} else if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, cur) {
			t.Errorf("sample %q outside its family (after TYPE %s)", line, cur)
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	for name, want := range map[string]dto.MetricType{
		"memcached_commands_total":       dto.MetricType_COUNTER,
		"memcached_current_items":        dto.MetricType_GAUGE,
		"memcached_slab_current_items":   dto.MetricType_GAUGE,
		"tandem_request_latency_seconds": dto.MetricType_HISTOGRAM,
		"process_resident_memory_bytes":  dto.MetricType_GAUGE,
		"go_goroutines":                  dto.MetricType_GAUGE,
	} {
		f, ok := fams[name]
		if !ok {
			t.Errorf("family %s missing", name)
			continue
		}
		if f.GetType() != want {
			t.Errorf("family %s: type %v, want %v", name, f.GetType(), want)
		}
	}
}

// TestMetricsEndpoint scrapes /metrics after known traffic in every mode and
// checks memcached_exporter's names and tandem's own.
func TestMetricsEndpoint(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2", "--metrics-listen", "127.0.0.1:0", "--pprof")
		base := "http://" + metricsAddr(t, s)
		c := dial(t, s.Addr)
		r := bufio.NewReader(c)
		for i := range 3 {
			fmt.Fprintf(c, "set key%d 0 0 5\r\nhello\r\n", i)
			if line, _ := r.ReadString('\n'); line != "STORED\r\n" {
				t.Fatalf("set: %q", line)
			}
		}
		// Enough sequential round trips for the 1-in-64 latency sampling.
		const gets = 4 * 64
		hits := 0
		for i := range gets {
			fmt.Fprintf(c, "get key%d\r\n", i%6)
			want := 1
			if i%6 < 3 {
				want = 3
				hits++
			}
			for range want {
				if _, err := r.ReadString('\n'); err != nil {
					t.Fatalf("get %d: %v", i, err)
				}
			}
		}
		body, code := scrape(t, base+"/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics status %d:\n%s", code, body)
		}
		checkExposition(t, body)
		m := promSamples(t, body)
		want := []struct {
			name  string
			value float64 // -1: present, any value
		}{
			{"memcached_up", 1},
			{`memcached_version{version="1.6.18"}`, 1},
			{"memcached_current_items", 3},
			{"memcached_items_total", 3},
			{`memcached_commands_total{command="get",status="hit"}`, float64(hits)},
			{`memcached_commands_total{command="get",status="miss"}`, float64(gets - hits)},
			{`memcached_commands_total{command="set",status="hit"}`, 3},
			{`memcached_commands_total{command="cas",status="badval"}`, 0},
			{"memcached_current_connections", -1},
			{"memcached_connections_total", -1},
			{"memcached_max_connections", 1024},
			{"memcached_limit_bytes", 64 << 20},
			{"memcached_current_bytes", 3 * (4 + 5 + 48)},
			{"memcached_items_evicted_total", 0},
			{"memcached_read_bytes_total", -1},
			{"memcached_written_bytes_total", -1},
			{"memcached_uptime_seconds", -1},
			{"memcached_accepting_connections", 1},
			{"tandem_event_loops", 2},
			{"tandem_pool_running", -1},
			{"tandem_pool_parked", -1},
			{"tandem_pool_overloads_total", -1},
			{"tandem_cache_shards", -1},
			{"tandem_cache_window_items", 3}, // new items enter the window
			{`tandem_connections_closed_total{reason="idle"}`, 0},
			{fmt.Sprintf(`tandem_info{mode=%q,version="0.1.0"}`, mode), 1},
			{"go_goroutines", -1},
			{"process_resident_memory_bytes", -1},
		}
		for _, w := range want {
			got, ok := m[w.name]
			switch {
			case !ok:
				t.Errorf("metric %s missing", w.name)
			case w.value >= 0 && got != w.value:
				t.Errorf("metric %s = %v, want %v", w.name, got, w.value)
			}
		}
		var slabItems float64
		for k, v := range m {
			if strings.HasPrefix(k, "memcached_slab_current_items{") {
				slabItems += v
			}
		}
		if slabItems != 3 {
			t.Errorf("memcached_slab_current_items sum to %v, want 3", slabItems)
		}
		if n := m["tandem_request_latency_seconds_count"]; n < 2 {
			t.Errorf("tandem_request_latency_seconds_count = %v after %d round trips, want >= 2", n, gets)
		}
		if _, code := scrape(t, base+"/debug/pprof/"); code != http.StatusOK {
			t.Errorf("/debug/pprof/ with --pprof: status %d", code)
		}
		// The contention profiles are switched on with --pprof: their text
		// form names the sampling period, 0 when off.
		if body, _ := scrape(t, base+"/debug/pprof/mutex?debug=1"); !strings.Contains(body, "sampling period=100\n") {
			t.Errorf("/debug/pprof/mutex does not sample 1 in 100:\n%.300s", body)
		}
	})
}

func TestMetricsOffByDefault(t *testing.T) {
	s := startServer(t, "pool", "--metrics-listen", "127.0.0.1:0")
	if _, code := scrape(t, "http://"+metricsAddr(t, s)+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without --pprof: status %d, want 404", code)
	}
	plain := startServer(t, "pool")
	if strings.Contains(plain.Log(), "metrics listening") {
		t.Errorf("metrics endpoint started without --metrics-listen:\n%s", plain.Log())
	}
}

func TestMetricsFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // substring of the validation error, "" for valid
	}{
		{"off", nil, ""},
		{"on", []string{"--metrics-listen", "127.0.0.1:9150"}, ""},
		{"pprof", []string{"--metrics-listen", "127.0.0.1:9150", "--pprof"}, ""},
		{"pprof alone", []string{"--pprof"}, "--pprof: needs --metrics-listen"},
		{"not host:port", []string{"--metrics-listen", "9150"}, "--metrics-listen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseFlags(tc.args)
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tc.args, err)
			}
			err = cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate(%q) = %v, want nil", tc.args, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate(%q) = %v, want error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// exporterFamilies are the metric families of the Prometheus project's
// memcached_exporter (pkg/exporter/exporter.go), without the "memcached_"
// prefix. Left out: its extstore_* and proxy_* families, which it emits only
// for a memcached running external storage or the proxy; tandem refuses
// extstore (-o ext_*) and has no proxy (docs/operations.md).
var exporterFamilies = []string{
	"up", "uptime_seconds", "time_seconds", "version", "process_user_cpu_seconds_total",
	"process_system_cpu_seconds_total", "read_bytes_total", "written_bytes_total", "current_connections",
	"max_connections", "connections_total", "connections_rejected_total", "connections_yielded_total",
	"connections_listener_disabled_total", "current_bytes", "limit_bytes", "commands_total", "current_items",
	"items_total", "items_evicted_total", "items_reclaimed_total", "item_too_large_total", "item_no_memory_total",
	"lru_crawler_enabled", "lru_crawler_sleep", "lru_crawler_to_crawl", "lru_crawler_maintainer_thread",
	"lru_crawler_hot_percent", "lru_crawler_warm_percent", "lru_crawler_hot_max_factor",
	"lru_crawler_warm_max_factor", "lru_crawler_starts_total", "lru_crawler_reclaimed_total",
	"lru_crawler_items_checked_total", "lru_crawler_moves_to_cold_total", "lru_crawler_moves_to_warm_total",
	"lru_crawler_moves_within_lru_total", "direct_reclaims_total", "malloced_bytes", "accepting_connections",
	"round_robin_fallback_total", "unexpected_napi_ids_total",
	"slab_current_items", "slab_items_age_seconds", "slab_items_crawler_reclaimed_total", "slab_items_evicted_total",
	"slab_items_evicted_nonzero_total", "slab_items_evicted_time_seconds", "slab_items_evicted_unfetched_total",
	"slab_items_expired_unfetched_total", "slab_items_outofmemory_total", "slab_items_reclaimed_total",
	"slab_items_tailrepairs_total", "slab_items_moves_to_cold", "slab_items_moves_to_warm",
	"slab_items_moves_within_lru", "slab_hot_items", "slab_warm_items", "slab_cold_items", "slab_temporary_items",
	"slab_hot_age_seconds", "slab_warm_age_seconds", "slab_lru_hits_total", "slab_chunk_size_bytes",
	"slab_chunks_per_page", "slab_current_pages", "slab_current_chunks", "slab_chunks_used", "slab_chunks_free",
	"slab_chunks_free_end", "slab_mem_requested_bytes", "slab_commands_total",
}

// TestMetricsHaveExporterFamilies checks that /metrics has every family of
// memcached_exporter (but extstore's and the proxy's), with values that
// agree with "stats" and "stats slabs".
func TestMetricsHaveExporterFamilies(t *testing.T) {
	s := startServer(t, "pool", "--metrics-listen", "127.0.0.1:0")
	if _, _, err := exchange(s.Addr, "set a 0 0 5\r\nhello\r\nget a\r\nlru_crawler metadump all\r\n"); err != nil {
		t.Fatal(err)
	}
	body, code := scrape(t, "http://"+metricsAddr(t, s)+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, f := range exporterFamilies {
		if !strings.Contains(body, "\n# TYPE memcached_"+f+" ") {
			t.Errorf("/metrics lacks memcached_exporter's memcached_%s", f)
		}
	}
	m := promSamples(t, body)
	slabs, err := serverStats(s.Addr, "slabs")
	if err != nil {
		t.Fatal(err)
	}
	// The scrape and "stats slabs" may see the index grow in between; the
	// item's own figures do not move.
	if m["memcached_malloced_bytes"] <= 0 || slabs["total_malloced"] == "0" {
		t.Errorf("memcached_malloced_bytes %v, total_malloced %q", m["memcached_malloced_bytes"], slabs["total_malloced"])
	}
	var class string
	for k := range slabs {
		if c, ok := strings.CutSuffix(k, ":used_chunks"); ok {
			class = c
		}
	}
	for metric, field := range map[string]string{
		"memcached_slab_chunk_size_bytes": "chunk_size", "memcached_slab_current_pages": "total_pages",
		"memcached_slab_chunks_used": "used_chunks", "memcached_slab_chunks_per_page": "chunks_per_page",
	} {
		want, _ := strconv.ParseFloat(slabs[class+":"+field], 64)
		if got := m[metric+`{slab="`+class+`"}`]; got != want || got == 0 {
			t.Errorf("%s{slab=%q} = %v, stats slabs %s = %v", metric, class, got, field, want)
		}
	}
	for name, want := range map[string]float64{
		"memcached_lru_crawler_starts_total": 1, "memcached_lru_crawler_items_checked_total": 1,
		"memcached_lru_crawler_enabled": 1, "memcached_lru_crawler_sleep": 100,
		`memcached_slab_lru_hits_total{lru="cold",slab="` + class + `"}`:                 1,
		`memcached_slab_commands_total{command="set",slab="` + class + `",status="hit"}`: 1,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}
