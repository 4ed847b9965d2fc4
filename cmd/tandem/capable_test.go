package main

import (
	"net"
	"os/exec"
	"strings"
	"testing"
)

// needTool returns the path of a Debian tool the test needs, or skips loudly.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("SKIPPED: %s not installed (Debian package %s); the README's test command installs it", name, pkg)
	}
	return p
}

// TestMemcapableASCII runs libmemcached's conformance checker (ascii) against every mode.
func TestMemcapableASCII(t *testing.T) {
	tool := needTool(t, "memccapable", "libmemcached-tools")
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		host, port, _ := net.SplitHostPort(s.Addr)
		out, err := exec.Command(tool, "-h", host, "-p", port, "-a", "-t", "10").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "All tests passed") {
			t.Fatalf("memccapable -a failed (%v):\n%s", err, out)
		}
	})
}
