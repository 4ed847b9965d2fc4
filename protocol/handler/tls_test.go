package handler

import (
	"strings"
	"testing"
	"time"
)

// TestRefreshCerts answers refresh_certs as memcached 1.6.18 does (checked
// against Debian's build, which has TLS).
func TestRefreshCerts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refresh func() string
		input   string
		want    string
	}{
		{"tls off", nil, "refresh_certs\r\n", "Error TLS not enabled\r\n"},
		{"tls off noreply", nil, "refresh_certs noreply\r\n", "Error TLS not enabled\r\n"},
		{"ok", func() string { return "" }, "refresh_certs\r\n", "OK\r\n"},
		{"ok noreply", func() string { return "" }, "refresh_certs noreply\r\nmn\r\n", "MN\r\n"},
		{"failed", func() string { return "Error loading the key: /k.pem" }, "refresh_certs\r\n", "Error loading the key: /k.pem\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			h, _ := newTestHandler(t, func(c *Config) {
				if tc.refresh != nil {
					c.RefreshCerts = func() string { calls++; return tc.refresh() }
				}
			})
			got, _ := run(h.NewSession(""), tc.input)
			if got != tc.want {
				t.Errorf("%q: got %q, want %q", tc.input, got, tc.want)
			}
			if tc.refresh != nil && calls != 1 {
				t.Errorf("RefreshCerts called %d times, want 1", calls)
			}
		})
	}
}

// TestSSLStats prints memcached's ssl_* fields of "stats" only with TLS on,
// ssl_new_sessions only with the session cache, and resets the counters.
func TestSSLStats(t *testing.T) {
	si := ServerInfo{}
	now := time.Unix(1_800_000_000, 0)
	h, _ := newTestHandler(t, func(c *Config) {
		c.Server = func() ServerInfo { return si }
		c.Now = func() time.Time { return now }
	})
	got, _ := run(h.NewSession(""), "stats\r\n")
	if strings.Contains(got, "ssl_") || strings.Contains(got, "cert_refresh") {
		t.Fatalf("TLS off, stats has TLS fields:\n%s", got)
	}
	si.SSLEnabled = true
	si.SSLCertRefreshed = now.Add(-42 * time.Second)
	si.Counters[SSLHandshakeErrors] = 3
	si.Counters[SSLProtoErrors] = 2
	si.Counters[SSLNewSessions] = 7
	got, _ = run(h.NewSession(""), "stats\r\n")
	for _, want := range []string{"STAT ssl_handshake_errors 3\r\n", "STAT ssl_proto_errors 2\r\n", "STAT time_since_server_cert_refresh 42\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("stats lacks %q", want)
		}
	}
	if strings.Contains(got, "ssl_new_sessions") {
		t.Errorf("ssl_new_sessions without the session cache")
	}
	si.SSLSessionCache = true
	run(h.NewSession(""), "stats reset\r\n")
	got, _ = run(h.NewSession(""), "stats\r\n")
	for _, want := range []string{"STAT ssl_new_sessions 0\r\n", "STAT ssl_handshake_errors 0\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("after stats reset, stats lacks %q", want)
		}
	}
}
