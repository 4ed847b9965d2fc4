// Package freeport finds a free TCP port on 127.0.0.1 for a server that is
// told its port on the command line (memcached and tandem both are). It is
// the one copy in the benchmarks module: the harness starts its servers
// with it and package mctest its test servers.
package freeport

import (
	"fmt"
	"net"
)

// Get asks the kernel for a TCP port that is free on 127.0.0.1 at the time
// of the call. Another process may take it before the caller's server binds
// it, so callers retry a failed start on a new port.
func Get() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("freeport: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
