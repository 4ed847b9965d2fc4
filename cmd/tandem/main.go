// Command tandem is a memcached-compatible cache server.
//
// It parses memcached-style flags, builds the cache, the command handler,
// the worker pool and the network front end for the chosen mode, and runs
// until SIGINT or SIGTERM, then shuts down gracefully.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

// version is tandem's release; the protocol version it reports is
// handler.Version.
var version = "0.1.0"

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is main without the exit, returning the process status.
func run(args []string) int {
	cfg, fs, err := parseFlags(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem: %v (see --help)\n", err)
		return 2
	}
	_ = fs
	if cfg.ShowVersion {
		fmt.Printf("tandem %s (memcached protocol %s)\n", version, protocolVersion)
		return 0
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "tandem: %v\n", err)
		return 2
	}
	return serve(cfg)
}
