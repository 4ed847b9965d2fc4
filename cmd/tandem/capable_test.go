package main

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestMemcapableASCII runs libmemcached's conformance checker (ascii) against every mode.
func TestMemcapableASCII(t *testing.T) {
	tool := testenv.NeedTool(t, "memccapable", "libmemcached-tools")
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		host, port, _ := net.SplitHostPort(s.Addr)
		out, err := exec.Command(tool, "-h", host, "-p", port, "-a", "-t", "10").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "All tests passed") {
			t.Fatalf("memccapable -a failed (%v):\n%s", err, out)
		}
	})
}
