// Command harness runs the benchmark scenarios against tandem (pool, inline
// and goroutine modes) and the real memcached side by side, and writes
// benchmarks/results/<scenario>.{json,md,png}.
//
// benchmarks/ is a module of its own; from the repository root:
//
//	go run -C benchmarks ./cmd/harness            # all scenarios, default profile (minutes)
//	go run -C benchmarks ./cmd/harness --quick    # seconds, results in a temp dir
//	go run -C benchmarks ./cmd/harness --scenario fairness --targets memcached,pool
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tandemcache/tandem/benchmarks/harness"
)

// pinnedEnv marks a harness process that already runs under taskset.
const pinnedEnv = "TANDEM_HARNESS_PINNED"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		quick     = fs.Bool("quick", false, "quick profile: a few seconds per scenario (CI); results go to a temp dir unless -out is given")
		full      = fs.Bool("full", false, "full profile: the published benchmarks' request counts (long)")
		scenarios = fs.String("scenario", "", "comma-separated scenarios to run (default all: "+strings.Join(harness.ScenarioNames(), ",")+")")
		targets   = fs.String("targets", "", "keep only targets whose name contains one of these comma-separated strings (e.g. memcached,pool-t2)")
		reps      = fs.Int("reps", 0, "repetitions per target (default: 1 quick, 3 default, 5 full)")
		out       = fs.String("out", "", "results directory (default <repo>/benchmarks/results)")
		repo      = fs.String("repo", "", "module root holding cmd/tandem (default: found from the working directory)")
		tandemBin = fs.String("tandem-bin", "", "use this tandem binary instead of building ./cmd/tandem")
		mcBin     = fs.String("memcached-bin", "", "memcached binary (default: from PATH)")
		noInstall = fs.Bool("no-install", false, "do not apt-get install memcached when it is missing")
		memMB     = fs.Int("memory-mb", 1024, "-m given to every server, in MB (a scenario with its own -m, hitratio, keeps it)")
		maxConns  = fs.Int("max-conns", 4096, "-c given to every server")
		srvCPUs   = fs.String("server-cpus", "", "pin servers to these CPUs (taskset -c list, e.g. 0)")
		cliCPUs   = fs.String("client-cpus", "", "pin the harness and its load generator to these CPUs (re-executes under taskset -c)")
		phaseCap  = fs.Duration("phase-cap", 0, "hard time cap of each load phase (default: 20s quick, 3m default, 10m full)")
		maxTime   = fs.Duration("max-time", 0, "stop the whole run after this long (default: 2m quick, 3h otherwise)")
		progress  = fs.Bool("progress", false, "print the load generator's per-second progress lines")
		noPlots   = fs.Bool("no-plots", false, "skip the PNG plots")
		strict    = fs.Bool("strict", false, "exit 1 when any request failed or did not verify")
		eqRSS     = fs.Int("equal-rss-m", 0, "hitratio-rss: run the equal-RSS tandem at this -m instead of searching it")
		trSpec    = fs.String("trace", "", "trace scenario: an ARC trace file (.zst read compressed; cite Megiddo and Modha, "+
			"\"ARC\", FAST 2003 with its results) or zipf:theta:keys:requests[:seed] (default: zipf:0.99:1000000:4000000, scaled by the profile)")
		trValue  = fs.Int("trace-value", 0, "trace scenario: value size in bytes (default 1000 for a trace file, 100 for zipf)")
		trVMin   = fs.Int("trace-value-min", 0, "trace scenario: vary the value sizes from this to --trace-value bytes, a fixed size per key (0: every value --trace-value bytes)")
		trBatch  = fs.Int("trace-batch", 100, "trace scenario: keys per multi-get")
		trWarmup = fs.Float64("trace-warmup", 0.25, "trace scenario: fraction of the accesses before the measured part ('hit after warm-up'); 0 = none")
		trMem    = fs.String("trace-m", "", "trace scenario: comma-separated -m values in MB, one fresh server per target and value "+
			"(default: 16,256 for zipf, 16,32,64,128 for a file; quick: 2,4 and 8,16)")
		dirty    = fs.Bool("allow-dirty", false, "measure uncommitted changes (refused otherwise, except with --quick); the reports say so")
		rerender = fs.Bool("rerender", false, "only rewrite the .md files and plots in -out from its .json files (no measuring)")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: harness [flags]\n\nRuns the benchmark scenarios against tandem and memcached side by side.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // asked for: usage printed, not an error
		}
		return 2
	}
	if *quick && *full {
		fmt.Fprintln(stderr, "harness: --quick and --full exclude each other")
		return 2
	}
	if *cliCPUs != "" && os.Getenv(pinnedEnv) == "" {
		return reexecPinned(*cliCPUs, stderr)
	}

	o := harness.Options{
		Profile:          harness.Default,
		Reps:             *reps,
		TandemBin:        *tandemBin,
		MemcachedBin:     *mcBin,
		InstallMemcached: !*noInstall,
		AllowDirty:       *dirty,
		EqualRSSMB:       *eqRSS,
		Limits:           harness.ServerLimits{MemoryMB: *memMB, MaxConns: *maxConns},
		ServerCPUs:       *srvCPUs,
		ClientCPUs:       *cliCPUs,
		PhaseCap:         *phaseCap,
		Progress:         *progress,
		NoPlots:          *noPlots,
		Log:              stderr,
	}
	switch {
	case *quick:
		o.Profile = harness.Quick
	case *full:
		o.Profile = harness.Full
	}
	o.Scenarios = splitList(*scenarios)
	to := harness.TraceOptions{Spec: *trSpec, ValueSize: *trValue, MinValueSize: *trVMin, Batch: *trBatch, Warmup: *trWarmup}
	for _, s := range splitList(*trMem) {
		m, err := strconv.Atoi(s)
		if err != nil || m < 1 {
			fmt.Fprintf(stderr, "harness: --trace-m: %q is not a positive number of MB\n", s)
			return 2
		}
		to.MemoryMB = append(to.MemoryMB, m)
	}
	o.Trace = &to
	o.TargetFilter = splitList(*targets)

	var err error
	if o.Repo = *repo; o.Repo == "" {
		wd, _ := os.Getwd()
		if o.Repo, err = harness.FindRepo(wd); err != nil && o.TandemBin == "" {
			fmt.Fprintf(stderr, "harness: %v\n", err)
		}
	}
	switch {
	case *out != "":
		o.OutDir = *out
	case *quick:
		o.OutDir = filepath.Join(os.TempDir(), "tandem-bench-quick")
	case o.Repo != "":
		o.OutDir = filepath.Join(o.Repo, "benchmarks", "results")
	default:
		o.OutDir = "results"
	}
	if *rerender {
		if err := harness.Rerender(o.OutDir, o.Scenarios, !o.NoPlots); err != nil {
			fmt.Fprintf(stderr, "harness: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "re-rendered %s\n", o.OutDir)
		return 0
	}
	limit := *maxTime
	if limit == 0 {
		limit = 3 * time.Hour
		if *quick {
			limit = 2 * time.Minute
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	reports, err := harness.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "harness: %v\n", err)
		return 1
	}
	status := 0
	for _, r := range reports {
		measured := r.Measured()
		fmt.Fprintf(stderr, "%-9s measured: %s\n", r.Scenario, strings.Join(measured, ", "))
		if len(measured) == 0 {
			fmt.Fprintf(stderr, "harness: %s: no target could be measured\n", r.Scenario)
			status = 1
		}
		if *strict {
			for _, m := range r.Runs {
				if m.Errors > 0 {
					fmt.Fprintf(stderr, "harness: %s %s %s %s: %d errors\n", r.Scenario, m.Target, m.Point, m.Phase, m.Errors)
					status = 1
				}
			}
		}
	}
	fmt.Fprintf(stderr, "results in %s\n", o.OutDir)
	return status
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// reexecPinned runs this same command again under `taskset -c cpus`, so
// every thread of the load generator stays on those CPUs.
func reexecPinned(cpus string, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "harness: --client-cpus: %v\n", err)
		return 1
	}
	cmd := exec.Command("taskset", append([]string{"-c", cpus, self}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), pinnedEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	signal.Ignore(os.Interrupt) // the child gets the terminal's interrupt itself
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "harness: taskset: %v\n", err)
		return 1
	}
	return 0
}
