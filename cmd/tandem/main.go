// Command tandem is a memcached-compatible cache server.
//
// It parses memcached-style flags, builds the cache, the command handler,
// the worker pool and the network front end for the chosen mode, and runs
// until SIGINT, SIGTERM or SIGUSR1 (or an allowed shutdown command), then
// shuts down gracefully. With -d it runs as a daemon (see daemon.go).
package main

import (
	"fmt"
	"os"

	"github.com/tandemcache/tandem"
)

// version is tandem's release (the release build can stamp it with
// -ldflags "-X main.version=..."); the protocol version it reports is
// handler.Version, and version.go adds the commit.
var version = "0.1.0"

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is main without the exit, returning the process status: exitOK,
// exitFailure when the server cannot start or stops on an error, exitUsage
// for a wrong command line.
func run(args []string) int {
	cfg, fs, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem: %v (see --help)\n", err)
		return exitUsage
	}
	switch {
	case cfg.ShowHelp:
		printUsage(os.Stdout, fs)
		return exitOK
	case cfg.ShowVersion:
		fmt.Println(versionLine())
		return exitOK
	case cfg.ShowLicense:
		fmt.Printf("tandem %s\n\n%s", version, tandem.License)
		return exitOK
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "tandem: %v\n", err)
		return exitUsage
	}
	if cfg.Daemon && !isDaemonChild() {
		return daemonize(cfg)
	}
	return serve(cfg)
}
