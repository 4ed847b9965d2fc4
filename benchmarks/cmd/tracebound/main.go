// Command tracebound replays a trace offline through models of a cache of
// same-size items (LRU, ARC, Belady's MIN) at several item counts and
// prints their hit ratios: what a policy, any policy for MIN, can reach at
// an item count, independent of a server's memory (issue #24).
//
//	go run -C benchmarks ./cmd/tracebound --trace ../../shared/traces/OLTP.lis.zst --items 7456,14160
//	go run -C benchmarks ./cmd/tracebound --trace zipf:0.99:1000000:4000000 --warmup 1000000 --items 60000,150000
//
// Every access is replayed one after the other and every miss is offered
// to the cache; the harness's trace scenario asks a server in batches of
// 100, where a key missed twice in a batch misses twice (its "repeat
// misses" column), so compare these figures with its hit ratio plus repeat
// misses.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tandemcache/tandem/benchmarks/trace"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tracebound", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		spec     = fs.String("trace", "", "an ARC trace file (plain or .zst) or zipf:theta:keys:requests[:seed]")
		items    = fs.String("items", "", "comma-separated cache sizes, in items")
		policies = fs.String("policies", "lru,arc,min", "comma-separated policies: lru, arc, min")
		warmup   = fs.Int("warmup", 0, "accesses before the measured part (the hit ratio after warm-up)")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sizes, err := parseSizes(*items)
	if err != nil || *spec == "" || *warmup < 0 {
		fmt.Fprintf(stderr, "tracebound: want --trace, --items N[,N...] and --warmup >= 0 (%v)\n", err)
		return 2
	}
	sp, err := trace.ParseSpec(*spec)
	if err != nil {
		fmt.Fprintln(stderr, "tracebound:", err)
		return 2
	}
	st, err := sp.Open()
	if err != nil {
		fmt.Fprintln(stderr, "tracebound:", err)
		return 1
	}
	keys, err := trace.Load(st)
	st.Close()
	if err != nil {
		fmt.Fprintln(stderr, "tracebound:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d accesses, warm-up %d\n\n| items | policy | hit ratio | after warm-up |\n|---:|---|---:|---:|\n", sp, len(keys), *warmup)
	for _, n := range sizes {
		for _, p := range strings.Split(*policies, ",") {
			hit, err := trace.Simulate(keys, n, trace.Policy(p))
			if err != nil {
				fmt.Fprintln(stderr, "tracebound:", err)
				return 2
			}
			fmt.Fprintf(stdout, "| %d | %s | %.4f | %.4f |\n", n, p, share(hit), share(hit[min(*warmup, len(hit)):]))
		}
	}
	return 0
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad item count %q", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func share(hit []bool) float64 {
	if len(hit) == 0 {
		return 0
	}
	n := 0
	for _, h := range hit {
		if h {
			n++
		}
	}
	return float64(n) / float64(len(hit))
}
