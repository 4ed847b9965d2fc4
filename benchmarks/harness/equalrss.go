package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
)

// EqualRSS asks the runner to find, before the repetitions, the -m at which
// the Target's peak RSS equals the Reference's (issue #18: the hit ratio at
// equal RAM, not at equal -m). The reference runs at its own -m.
type EqualRSS struct {
	Reference string `json:"reference"` // target whose peak RSS is the budget, e.g. memcached-t1
	Target    string `json:"target"`    // target whose -m is searched
	// StartMB is where the search starts (the reference's -m); MaxMB
	// bounds it.
	StartMB int `json:"start_mb"`
	MaxMB   int `json:"max_mb"`
}

// EqualRSSResult records the search, or the -m given by flag.
type EqualRSSResult struct {
	Reference   string     `json:"reference"`
	Target      string     `json:"target"`
	BudgetMB    float64    `json:"budget_peak_rss_mb"` // the reference's peak RSS
	ChosenMB    int        `json:"chosen_mb"`          // the largest -m whose peak RSS stayed within the budget
	Given       bool       `json:"given,omitempty"`    // ChosenMB came from --equal-rss-m, not a search
	WithinReach bool       `json:"within_reach"`       // false: even -m 1 exceeds the budget (ChosenMB is 1)
	Trials      []RSSTrial `json:"trials,omitempty"`
	Error       string     `json:"error,omitempty"` // why no search happened or it stopped
}

// RSSTrial is one run of the search: the target at -m MemoryMB peaked at
// PeakMB.
type RSSTrial struct {
	MemoryMB int     `json:"memory_mb"`
	PeakMB   float64 `json:"peak_rss_mb"`
}

// errSearchBudget stops a search that would need more trials than allowed.
var errSearchBudget = errors.New("harness: equal-RSS search: too many trials")

// maxRSSTrials bounds a search (each trial is a full run of the scenario on
// one server): doubling or halving from StartMB, then bisecting, needs
// about 2 log2(range) trials.
const maxRSSTrials = 12

// searchEqualRSS finds the largest integer m in [1, maxMB] with
// peak(m) <= budget, assuming peak grows with m: it doubles or halves from
// start until the budget is crossed, then bisects. Each m is measured once.
// It returns the chosen m (1 with reached false when even 1 is over the
// budget, maxMB when even maxMB is within it), the trials in the order they
// ran, and the first measuring error.
func searchEqualRSS(budget float64, start, maxMB int, peak func(m int) (float64, error)) (m int, reached bool, trials []RSSTrial, err error) {
	seen := map[int]float64{}
	within := func(m int) (bool, error) {
		p, ok := seen[m]
		if !ok {
			if len(trials) == maxRSSTrials {
				return false, errSearchBudget
			}
			var perr error
			if p, perr = peak(m); perr != nil {
				return false, fmt.Errorf("-m %d: %w", m, perr)
			}
			seen[m] = p
			trials = append(trials, RSSTrial{MemoryMB: m, PeakMB: round1(p)})
		}
		return p <= budget, nil
	}
	start = min(max(start, 1), maxMB)
	lo, hi := 0, 0 // lo: largest m known within (0 = none); hi: smallest known over (0 = none)
	for m := start; ; {
		ok, err := within(m)
		if err != nil {
			return max(lo, 1), lo > 0, trials, err
		}
		if ok {
			lo = m
		} else {
			hi = m
		}
		switch {
		case lo > 0 && hi > 0: // bracketed: bisect after the loop
		case lo == maxMB:
			return maxMB, true, trials, nil
		case hi == 1:
			return 1, false, trials, nil
		case lo > 0:
			m = min(2*lo, maxMB) // within: double
			continue
		default:
			m = max(hi/2, 1) // over: halve
			continue
		}
		break
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, err := within(mid)
		if err != nil {
			return lo, true, trials, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true, trials, nil
}

// sortedTrials returns the trials ordered by -m, for the report.
func (r *EqualRSSResult) sortedTrials() []RSSTrial {
	ts := slices.Clone(r.Trials)
	slices.SortFunc(ts, func(a, b RSSTrial) int { return a.MemoryMB - b.MemoryMB })
	return ts
}

// resolveEqualRSS sets the -m of sc.EqualRSS's target before the
// repetitions: --equal-rss-m when given, else the search, run on fresh
// servers against the reference's peak RSS. It returns nil when the
// scenario has no such target in this run (filtered out or unavailable).
// A target whose -m cannot be found is skipped, with the reason.
func (r *runner) resolveEqualRSS(ctx context.Context, sc *Scenario, targets []TargetStatus) *EqualRSSResult {
	spec := sc.EqualRSS
	find := func(name string) *TargetStatus {
		for i := range targets {
			if targets[i].Name == name && r.bins[targets[i].Kind] != "" {
				return &targets[i]
			}
		}
		return nil
	}
	t := find(spec.Target)
	if t == nil {
		return nil
	}
	res := &EqualRSSResult{Reference: spec.Reference, Target: spec.Target}
	if mb := r.opts.EqualRSSMB; mb > 0 {
		t.Target.MemoryMB, res.ChosenMB, res.Given, res.WithinReach = mb, mb, true, true
		fmt.Fprintf(r.log, "%s: %s at -m %d (--equal-rss-m)\n", sc.Name, t.Name, mb)
		return res
	}
	give := func(why string) *EqualRSSResult {
		res.Error = why
		t.Skipped, t.off = "equal-RSS search: "+why, true
		fmt.Fprintf(r.log, "!!! %s: %s: no equal-RSS -m: %s\n", sc.Name, t.Name, why)
		return res
	}
	ref := find(spec.Reference)
	if ref == nil {
		return give(spec.Reference + " is not measured in this run (pass --equal-rss-m to give the -m)")
	}
	budget, err := r.peakRSS(ctx, sc, ref.Target)
	if err != nil {
		return give(fmt.Sprintf("%s: %v", spec.Reference, err))
	}
	res.BudgetMB = round1(budget)
	fmt.Fprintf(r.log, "%s: equal-RSS search: %s peaks at %.1f MB; searching %s's -m\n", sc.Name, spec.Reference, budget, t.Name)
	m, reached, trials, err := searchEqualRSS(budget, spec.StartMB, spec.MaxMB, func(m int) (float64, error) {
		tt := t.Target
		tt.MemoryMB = m
		p, err := r.peakRSS(ctx, sc, tt)
		if err == nil {
			fmt.Fprintf(r.log, "%s: equal-RSS search: %s at -m %d peaks at %.1f MB (budget %.1f)\n", sc.Name, t.Name, m, p, budget)
		}
		return p, err
	})
	res.ChosenMB, res.WithinReach, res.Trials = m, reached, trials
	if err != nil {
		if len(trials) == 0 {
			return give(err.Error())
		}
		res.Error = err.Error()
	}
	t.Target.MemoryMB = m
	fmt.Fprintf(r.log, "%s: equal-RSS search: %s runs at -m %d\n", sc.Name, t.Name, m)
	return res
}

// peakRSS runs every point of sc on a fresh server of t and returns the
// server's peak RSS in MB (VmHWM after the last phase).
func (r *runner) peakRSS(ctx context.Context, sc *Scenario, t Target) (float64, error) {
	srv, err := StartServer(ctx, r.bins[t.Kind], t, r.opts.Limits, r.opts.ServerCPUs)
	if err != nil {
		return 0, err
	}
	defer srv.Stop()
	quiet := *r
	quiet.log = io.Discard
	ms, err := quiet.runTarget(ctx, sc, sc.Points, srv, 0)
	if err != nil {
		return 0, err
	}
	var peak int64
	for _, m := range ms {
		peak = max(peak, m.ServerHWMKB)
	}
	if peak == 0 {
		return 0, errors.New("no peak RSS measured")
	}
	return float64(peak) / 1024, nil
}
