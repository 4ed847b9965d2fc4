package main

import (
	"strings"
	"testing"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestStatsConnsListening checks that "stats conns" has a conn_listening
// row for the listener in every mode, with its address, as memcached's
// has.
func TestStatsConnsListening(t *testing.T) {
	rows := func(t *testing.T, addr string) []string {
		got, _, err := exchange(addr, "stats conns\r\n")
		if err != nil {
			t.Fatal(err)
		}
		var listening []string
		lines := strings.Split(got, "\r\n")
		for i, l := range lines {
			if strings.HasSuffix(l, ":state conn_listening") {
				fd := strings.TrimSuffix(strings.TrimPrefix(l, "STAT "), ":state conn_listening")
				for _, a := range lines[:i] {
					if strings.HasPrefix(a, "STAT "+fd+":addr ") {
						listening = append(listening, strings.TrimPrefix(a, "STAT "+fd+":addr "))
					}
				}
			}
		}
		return listening
	}
	mc := testenv.StartMemcached(t)
	if got := rows(t, mc.Addr); len(got) != 1 || got[0] != "tcp:"+mc.Addr {
		t.Fatalf("memcached's listening rows: %q", got)
	}
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2")
		if got := rows(t, s.Addr); len(got) != 1 || got[0] != "tcp:"+s.Addr {
			t.Errorf("listening rows %q, want one for tcp:%s", got, s.Addr)
		}
	})
}
