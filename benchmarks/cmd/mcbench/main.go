// Command mcbench is a closed-loop load generator for memcached text-protocol
// servers (tandem, memcached). It prints a progress line on stderr, a table
// on stdout, and optionally the full result as JSON.
//
//	go run -C benchmarks ./cmd/mcbench -addr 127.0.0.1:11211 -c 50 -d 4 -duration 10s -ratio 1:10
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg := loadgen.DefaultConfig()
	fs := flag.NewFlagSet("mcbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dist     = fs.String("dist", string(cfg.Dist), "key distribution: uniform, zipf or seq")
		workload = fs.String("workload", string(cfg.Workload), "mixed (set:get mix) or lookaside (get; on miss set)")
		ratio    = fs.String("ratio", "1:10", "mixed workload set:get ratio")
		sizes    = fs.String("size", "32", "value size in bytes, or a comma-separated list (each key gets one, e.g. 2,81,6561); k/m suffixes allowed")
		keys     = fs.Uint64("keys", cfg.Keys, "key space size")
		jsonOut  = fs.String("json", "", "write the result as JSON to this file (- for stdout)")
		progress = fs.Bool("progress", true, "print a progress line on stderr every second (rewritten in place on a terminal)")
		preload  = fs.Bool("preload", false, "set every key once (sequentially, unmeasured) before the run")
		flushAll = fs.Bool("flush", false, "send flush_all before the run")
		strict   = fs.Bool("strict", false, "exit with status 1 if any request failed or did not verify")
	)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "server host:port")
	fs.IntVar(&cfg.Conns, "c", cfg.Conns, "connections (one goroutine each)")
	fs.IntVar(&cfg.Depth, "d", cfg.Depth, "pipeline depth: requests written per batch on each connection")
	fs.Int64Var(&cfg.Requests, "n", cfg.Requests, "total requests (0 = bounded by -duration only; given -duration alone, -n is 0)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "run time (0 = bounded by -n only)")
	fs.DurationVar(&cfg.HardCap, "hard-cap", cfg.HardCap, "absolute time limit: the run is cut off here whatever -n says")
	fs.StringVar(&cfg.KeyPrefix, "key-prefix", cfg.KeyPrefix, "key prefix (keys are prefix + decimal index)")
	fs.Float64Var(&cfg.ZipfS, "zipf-s", cfg.ZipfS, "Zipf exponent s (> 0) for -dist zipf")
	fs.BoolVar(&cfg.Verify, "verify", cfg.Verify, "verify every value read (content is a function of the key)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed (keys and value contents)")
	fs.Uint64Var(&cfg.KeySeed, "key-seed", 0, "seed of the key streams only (0 = -seed): a second run over data stored by a first draws fresh keys and still verifies")
	fs.DurationVar(&cfg.IOTimeout, "io-timeout", cfg.IOTimeout, "bound on each write and reply read")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mcbench [flags]\n\nA closed-loop memcached text-protocol load generator.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // asked for: usage printed, not an error
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcbench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if given(fs, "duration") && !given(fs, "n") {
		cfg.Requests = 0 // a duration alone bounds the run, not the default -n
	}
	var err error
	cfg.Dist, cfg.Workload, cfg.Keys = loadgen.Dist(*dist), loadgen.Workload(*workload), *keys
	if cfg.SetRatio, cfg.GetRatio, err = loadgen.ParseRatio(*ratio); err != nil {
		return fail(stderr, err)
	}
	if cfg.ValueSizes, err = loadgen.ParseSizes(*sizes); err != nil {
		return fail(stderr, err)
	}
	if cfg.Requests == 0 && cfg.Duration == 0 {
		return fail(stderr, fmt.Errorf("set -n and/or -duration: every run is bounded"))
	}
	if err := cfg.Validate(); err != nil {
		return fail(stderr, err)
	}
	if *progress {
		cfg.Progress = stderr
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *flushAll {
		if err := flush(cfg); err != nil {
			return fail(stderr, err)
		}
	}
	if *preload {
		if err := doPreload(ctx, cfg, stderr); err != nil {
			return fail(stderr, err)
		}
	}
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return fail(stderr, err)
	}
	if err := res.WriteTable(stdout); err != nil {
		return fail(stderr, err)
	}
	if *jsonOut != "" {
		if err := writeJSON(*jsonOut, res, stdout); err != nil {
			return fail(stderr, err)
		}
	}
	if *strict && (res.Errors.Total() > 0 || res.HitHardCap || res.ConnsLost > 0) {
		return 1
	}
	return 0
}

// given reports whether the flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func fail(w io.Writer, err error) int {
	fmt.Fprintf(w, "mcbench: %v\n", err)
	return 1
}

func flush(cfg loadgen.Config) error {
	c, err := loadgen.Dial(cfg.Addr, cfg.DialTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.FlushAll()
}

// doPreload sets every key once with a sequential, unmeasured pass.
func doPreload(ctx context.Context, cfg loadgen.Config, stderr io.Writer) error {
	pre := cfg
	pre.Workload, pre.Dist = loadgen.Mixed, loadgen.Sequential
	pre.SetRatio, pre.GetRatio = 1, 0
	pre.Requests, pre.Duration = int64(cfg.Keys), 0
	pre.Depth = max(cfg.Depth, 16)
	pre.Progress = nil
	start := time.Now()
	res, err := loadgen.Run(ctx, pre)
	if err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	fmt.Fprintf(stderr, "preloaded %d keys in %.2fs (%d errors)\n",
		res.Sets, time.Since(start).Seconds(), res.Errors.Total())
	return nil
}

func writeJSON(path string, res *loadgen.Result, stdout io.Writer) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
