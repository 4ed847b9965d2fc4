package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestMetricsListenAllInterfacesWarns checks that --metrics-listen without
// a host (or with a wildcard one) says that /metrics is served on every
// interface, and that a loopback address does not.
func TestMetricsListenAllInterfacesWarns(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{{":9150", true}, {"0.0.0.0:9150", true}, {"[::]:9150", true}, {"127.0.0.1:9150", false}} {
		c, _, err := parseFlags([]string{"--metrics-listen", tc.addr})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(strings.Join(c.Warnings, "\n"), "every interface")
		if got != tc.warn {
			t.Errorf("--metrics-listen %s: warnings %q, want a warning: %v", tc.addr, c.Warnings, tc.warn)
		}
	}
}

// TestHangupLogWithTLS checks that SIGHUP without --log-file but with -Z
// does not log "signal ignored" (the certificates are reloaded), and does
// without either.
func TestHangupLogWithTLS(t *testing.T) {
	for _, tls := range []bool{true, false} {
		var buf bytes.Buffer
		reopenLog(zerolog.New(&buf), &logSink{}, tls)
		if ignored := strings.Contains(buf.String(), "signal ignored"); ignored == tls {
			t.Errorf("TLS %v: logged %q", tls, buf.String())
		}
	}
}
