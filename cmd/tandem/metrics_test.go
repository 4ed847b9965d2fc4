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
