package harness

import (
	"fmt"
	"slices"
	"strings"
)

// renderMarkdown renders a report as a self-contained Markdown page.
func renderMarkdown(r *Report, sc *Scenario, plotErr error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	if w := r.Machine.dirtyWarning(); w != "" {
		fmt.Fprintf(&b, "> %s\n\n", w)
	}
	fmt.Fprintf(&b, "Reproduces %s\n\n", r.Reproduces)
	if r.Source != "" {
		fmt.Fprintf(&b, "Source: %s\n\n", r.Source)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	m := r.Machine
	fmt.Fprintf(&b, "Run %s, profile `%s`, %d repetition(s) per target, targets alternating A B A B; "+
		"took %s.\n", m.Date, r.Profile, r.Reps, fmtDuration(r.DurationSec))
	fmt.Fprintf(&b, "Machine: %s, %d CPUs (GOMAXPROCS %d), %s RAM, Linux %s; harness %s; toolchain `%s`; %s.\n",
		orDash(m.CPUModel), m.NumCPU, m.GOMAXPROCS, orDash(m.MemTotal), orDash(m.Kernel), m.GoVersion,
		orDash(m.GoToolchain), m.Describe())
	fmt.Fprintf(&b, "Servers: `-m %d -c %d`, listening on 127.0.0.1.", r.Limits.MemoryMB, r.Limits.MaxConns)
	if r.ServerCPUs != "" || r.ClientCPUs != "" {
		fmt.Fprintf(&b, " Pinned with taskset: servers on CPUs %s, load generator on CPUs %s.",
			orDash(r.ServerCPUs), orDash(r.ClientCPUs))
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "> The load generator runs on the same %d CPUs as the server: its own CPU use "+
		"(client CPU) is taken from the server, so absolute numbers are lower than on separate machines, "+
		"and a faster server also leaves less CPU to the client. Compare targets with each other, "+
		"not with numbers published elsewhere.\n\n", m.NumCPU)

	b.WriteString("## Targets\n\n| target | status | version | command |\n|---|---|---|---|\n")
	var reasons []string // distinct skip reasons, numbered in order
	for _, t := range r.Targets {
		status := "measured"
		if t.Skipped != "" {
			i := slices.Index(reasons, t.Skipped)
			if i < 0 {
				reasons = append(reasons, t.Skipped)
				i = len(reasons) - 1
			}
			status = fmt.Sprintf("**not measured** (reason %d)", i+1)
			if t.Measured {
				status = fmt.Sprintf("measured, with failures (reason %d)", i+1)
			}
		}
		cmd := "–"
		if len(t.Command) > 0 {
			cmd = "`" + strings.Join(t.Command, " ") + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name, status, orDash(t.Version), cmd)
	}
	for i, why := range reasons {
		fmt.Fprintf(&b, "\nReason %d:\n\n```\n%s\n```\n", i+1, strings.TrimSpace(why))
	}
	b.WriteString("\n## Results\n\n")
	if len(r.Rows) == 0 {
		b.WriteString("No target was measured.\n")
	} else {
		writeTable(&b, sc, r.Rows)
		base := "memcached's median at the same `-t`"
		if sc.Baseline != "" {
			base = sc.Baseline + "'s median"
		}
		fmt.Fprintf(&b, "\nThroughput cells are medians over the repetitions, ± half the range (max-min) in percent; "+
			"\"vs mc\" is the median over %s; latencies in µs are medians "+
			"of the per-repetition percentiles.\n", base)
	}
	if r.EqualRSS != nil {
		writeEqualRSS(&b, r.EqualRSS)
	}
	fmt.Fprintf(&b, "\nRaw measurements, one line per repetition, target, point and phase: [%s-runs.csv](%s-runs.csv).\n",
		r.Scenario, r.Scenario)
	if len(r.Plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range r.Plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n", p, p)
		}
	}
	if plotErr != nil {
		fmt.Fprintf(&b, "\nPlotting failed: %v\n", plotErr)
	}
	fmt.Fprintf(&b, "\n## Reproduce\n\n```\ngo run -C benchmarks ./cmd/harness --scenario %s", r.Scenario)
	if r.Profile != Default {
		fmt.Fprintf(&b, " --%s", r.Profile)
	}
	if sc.ReproduceArgs != "" {
		fmt.Fprintf(&b, " %s", sc.ReproduceArgs)
	}
	b.WriteString("\n```\n")
	return b.String()
}

// writeTable writes the scenario's columns, one row per target and point,
// or one table per entry of sc.Tables.
func writeTable(b *strings.Builder, sc *Scenario, rows []*Row) {
	if len(sc.Tables) == 0 {
		writeColumns(b, sc.Points, sc.Columns, rows)
		return
	}
	for i, t := range sc.Tables {
		var pts []Point
		for _, p := range sc.Points {
			if p.Group == t.Group {
				pts = append(pts, p)
			}
		}
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "### %s\n\n", t.Heading)
		writeColumns(b, pts, t.Columns, rows)
	}
}

// writeColumns writes one table: columns, one row per target and point.
func writeColumns(b *strings.Builder, points []Point, columns []Column, rows []*Row) {
	b.WriteString("| target |")
	for _, c := range columns {
		fmt.Fprintf(b, " %s |", c.Header)
	}
	b.WriteString("\n|---|")
	for range columns {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	// Point-major order: the targets measured at one point sit together.
	for _, p := range points {
		for _, r := range rows {
			if r.Point != p.Label {
				continue
			}
			fmt.Fprintf(b, "| %s |", r.Target.Name)
			for _, c := range columns {
				fmt.Fprintf(b, " %s |", c.Cell(r))
			}
			b.WriteString("\n")
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// writeEqualRSS says how the equal-RSS target's -m was found.
func writeEqualRSS(b *strings.Builder, e *EqualRSSResult) {
	b.WriteString("\n## Equal RSS\n\n")
	switch {
	case e.Given:
		fmt.Fprintf(b, "`%s` ran at `-m %d`, given with `--equal-rss-m` (no search).\n", e.Target, e.ChosenMB)
	case len(e.Trials) == 0:
		fmt.Fprintf(b, "No `-m` was found for `%s`: %s\n", e.Target, orDash(e.Error))
		return
	case !e.WithinReach:
		fmt.Fprintf(b, "`%s` ran at `-m %d`, but even that peaked above %s's %.1f MB: no `-m` reaches equal RSS.\n",
			e.Target, e.ChosenMB, e.Reference, e.BudgetMB)
	default:
		fmt.Fprintf(b, "`%s` ran at `-m %d`: the largest `-m` whose run peaked within %s's peak RSS of %.1f MB "+
			"(one search run of each `-m` on a fresh server; peak RSS grows with `-m`).\n",
			e.Target, e.ChosenMB, e.Reference, e.BudgetMB)
	}
	if e.Error != "" && len(e.Trials) > 0 {
		fmt.Fprintf(b, "\nThe search stopped early: %s\n", e.Error)
	}
	if len(e.Trials) > 0 {
		b.WriteString("\n| -m | peak RSS MB | within the budget |\n|---:|---:|---|\n")
		for _, t := range e.sortedTrials() {
			fmt.Fprintf(b, "| %d | %.1f | %v |\n", t.MemoryMB, t.PeakMB, t.PeakMB <= e.BudgetMB)
		}
	}
}
