package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Options configure Run.
type Options struct {
	Profile   Profile
	Scenarios []string // names to run; empty = all
	// Targets is the matrix for scenarios that do not fix their own
	// (nil = DefaultTargets). TargetFilter keeps only targets whose name
	// contains one of its strings (empty = all).
	Targets      []Target
	TargetFilter []string
	Reps         int // repetitions per target; 0 = profile default (1, 3, 5)

	OutDir string // results directory
	Repo   string // module root, for go build ./cmd/tandem
	// AllowDirty measures uncommitted code (the reports say so loudly);
	// without it Run refuses a dirty tree, except in the Quick profile.
	AllowDirty       bool
	TandemBin        string // prebuilt tandem binary; empty = build it
	MemcachedBin     string // memcached binary; empty = look it up
	InstallMemcached bool   // apt-get install memcached when missing (root only)

	Limits     ServerLimits
	ServerCPUs string        // taskset -c list for the servers ("" = no pinning)
	ClientCPUs string        // recorded only: the caller pins the harness itself
	PhaseCap   time.Duration // hard cap of each loadgen run
	// EqualRSSMB, when > 0, is the -m of an equal-RSS target (see
	// EqualRSS) instead of searching it.
	EqualRSSMB int
	// Trace configures the trace scenario (nil = the profile's defaults).
	Trace    *TraceOptions
	Progress bool // loadgen progress lines on Log
	NoPlots  bool
	Log      io.Writer // progress and warnings (default os.Stderr)
}

func (o *Options) reps() int {
	if o.Reps > 0 {
		return o.Reps
	}
	return pick(o.Profile, 1, 3, 5)
}

func (o *Options) fill() {
	if o.Profile == "" {
		o.Profile = Default
	}
	if o.Targets == nil {
		o.Targets = DefaultTargets()
	}
	if o.Limits.MemoryMB == 0 {
		o.Limits.MemoryMB = 1024
	}
	if o.Limits.MaxConns == 0 {
		o.Limits.MaxConns = 4096
	}
	if o.PhaseCap == 0 {
		o.PhaseCap = pick(o.Profile, 20*time.Second, 3*time.Minute, 10*time.Minute)
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
}

// ErrNoScenario is returned for an unknown scenario name.
var ErrNoScenario = errors.New("harness: unknown scenario")

// Run runs the selected scenarios and writes their reports to OutDir. A
// target whose server cannot be built, installed or started is skipped with
// a message (in the log and in the reports), never fatal.
func Run(ctx context.Context, o Options) ([]*Report, error) {
	o.fill()
	scs, err := selectScenarios(o.Profile, o.Scenarios)
	if err != nil {
		return nil, err
	}
	if o.Trace != nil {
		if err := o.Trace.fill(o.Profile).Validate(); err != nil {
			return nil, err
		}
		for i := range scs {
			if scs[i].Name == traceName {
				scs[i] = traceScenario(o.Profile, *o.Trace)
			}
		}
	}
	machine := ReadMachine(ctx)
	wd, _ := os.Getwd()
	machine.Source = ReadSource(ctx, o.Repo, wd, o.TandemBin)
	if err := o.checkSource(machine.Source); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	raiseFileLimit()

	needed := map[string]bool{}
	for i := range scs {
		for _, t := range o.targetsFor(&scs[i]) {
			needed[t.Kind] = true
		}
		needed[clientMemcslap] = needed[clientMemcslap] || usesMemcslap(&scs[i])
	}
	bins, unavailable := o.prepare(ctx, needed)

	r := &runner{opts: &o, bins: bins, log: o.Log}
	var reports []*Report
	for i := range scs {
		sc := &scs[i]
		var targets []TargetStatus
		for _, t := range o.targetsFor(sc) {
			skip := unavailable[t.Kind]
			if skip == "" && usesMemcslap(sc) {
				skip = unavailable[clientMemcslap]
			}
			targets = append(targets, TargetStatus{Target: t, Skipped: skip})
		}
		fmt.Fprintf(o.Log, "=== %s (%s profile, %d repetition(s), %d targets)\n", sc.Title, o.Profile, o.reps(), len(targets))
		start := time.Now()
		var eq *EqualRSSResult
		if sc.EqualRSS != nil {
			eq = r.resolveEqualRSS(ctx, sc, targets)
		}
		runs := r.run(ctx, sc, targets)
		rep := newReport(sc, &o, machine, targets, runs, start)
		rep.EqualRSS = eq
		if err := rep.Write(o.OutDir, sc, !o.NoPlots); err != nil {
			return reports, err
		}
		fmt.Fprintf(o.Log, "=== %s: wrote %s\n", sc.Name, filepath.Join(o.OutDir, sc.Name+".{json,md}"))
		reports = append(reports, rep)
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
	}
	return reports, nil
}

// checkSource refuses a dirty tree unless allowed, and says loudly when it
// measures one.
func (o *Options) checkSource(s Source) error {
	fmt.Fprintf(o.Log, "harness: measuring %s\n", s.Describe())
	if !s.IsDirty() {
		return nil
	}
	files := strings.Join(append(append([]string{}, s.Dirty...), s.HarnessDirty...), "\n    ")
	if !o.AllowDirty && o.Profile != Quick {
		return fmt.Errorf("%w (outside %s):\n    %s\ncommit them, measure a clean clone "+
			"(git clone . /tmp/tandem-head; --repo /tmp/tandem-head), or pass --allow-dirty to measure them "+
			"anyway (the reports are marked)", ErrDirtyTree, resultsDir, files)
	}
	fmt.Fprintf(o.Log, "\n!!! DIRTY TREE: measuring uncommitted changes; every report is marked as belonging to no commit:\n    %s\n\n", files)
	return nil
}

// targetsFor returns sc's targets after the filter, with the scenario's
// memory limit applied.
func (o *Options) targetsFor(sc *Scenario) []Target {
	ts := sc.Targets
	if ts == nil {
		ts = o.Targets
	}
	var out []Target
	for _, t := range ts {
		if len(o.TargetFilter) > 0 &&
			!slices.ContainsFunc(o.TargetFilter, func(f string) bool { return strings.Contains(t.Name, f) }) {
			continue
		}
		if sc.MemoryMB > 0 && t.MemoryMB == 0 {
			t.MemoryMB = sc.MemoryMB
		}
		if sc.MaxConns > 0 && t.MaxConns == 0 {
			t.MaxConns = sc.MaxConns
		}
		out = append(out, t)
	}
	return out
}

// prepare obtains the server binaries of the needed kinds. unavailable maps
// a kind to the reason it is skipped.
func (o *Options) prepare(ctx context.Context, needed map[string]bool) (bins, unavailable map[string]string) {
	bins, unavailable = map[string]string{}, map[string]string{}
	loud := func(kind string, err error) {
		unavailable[kind] = err.Error()
		fmt.Fprintf(o.Log, "\n!!! SKIPPING every %s target: %v\n\n", kind, err)
	}
	if needed[KindTandem] {
		switch {
		case o.TandemBin != "":
			bins[KindTandem] = o.TandemBin
		default:
			dir, err := os.MkdirTemp("", "tandem-bench-")
			if err == nil {
				fmt.Fprintln(o.Log, "harness: go build ./cmd/tandem")
				var p string
				if p, err = BuildTandem(ctx, o.Repo, dir); err == nil {
					bins[KindTandem] = p
				}
			}
			if err != nil {
				loud(KindTandem, err)
			}
		}
	}
	if needed[KindMemcached] {
		p := o.MemcachedBin
		var err error
		if p == "" {
			p, err = FindMemcached(ctx, o.InstallMemcached, o.Log)
		}
		if err != nil {
			loud(KindMemcached, err)
		} else {
			bins[KindMemcached] = p
		}
	}
	if needed[clientMemcslap] {
		if p, err := FindMemcslap(ctx, o.InstallMemcached, o.Log); err != nil {
			loud(clientMemcslap, err)
		} else {
			bins[clientMemcslap] = p
		}
	}
	return bins, unavailable
}

func selectScenarios(p Profile, names []string) ([]Scenario, error) {
	all := Scenarios(p)
	if len(names) == 0 {
		return all, nil
	}
	var out []Scenario
	for _, n := range names {
		i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("%w %q (have %s)", ErrNoScenario, n, strings.Join(ScenarioNames(), ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// raiseFileLimit lifts RLIMIT_NOFILE to its hard limit: 1,000 client
// connections plus the server's side of them need more than the usual 1,024.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}
