package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Report is everything one scenario run produced; it is written as
// <scenario>.json (aggregates and metadata) and <scenario>-runs.csv (raw
// measurements), rendered as <scenario>.md, and plotted.
type Report struct {
	Scenario    string         `json:"scenario"`
	Title       string         `json:"title"`
	Reproduces  string         `json:"reproduces"`
	Source      string         `json:"source,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
	Profile     Profile        `json:"profile"`
	Reps        int            `json:"repetitions"`
	Started     time.Time      `json:"started"`
	DurationSec float64        `json:"duration_sec"`
	Machine     Machine        `json:"machine"`
	Limits      ServerLimits   `json:"server_limits"`
	ServerCPUs  string         `json:"server_cpus,omitempty"`
	ClientCPUs  string         `json:"client_cpus,omitempty"`
	Targets     []TargetStatus `json:"targets"`
	Points      []Point        `json:"points"`
	Rows        []*Row         `json:"rows"`
	Runs        []Measurement  `json:"-"` // written to <scenario>-runs.csv
	Plots       []string       `json:"plots,omitempty"`
	// EqualRSS is how an equal-RSS target's -m was found (or given).
	EqualRSS *EqualRSSResult `json:"equal_rss,omitempty"`
}

func newReport(sc *Scenario, o *Options, m Machine, targets []TargetStatus, runs []Measurement, start time.Time) *Report {
	measured := make([]Target, 0, len(targets))
	for _, t := range targets {
		if t.Measured {
			measured = append(measured, t.Target)
		}
	}
	lim := o.Limits
	if sc.MemoryMB > 0 {
		lim.MemoryMB = sc.MemoryMB
	}
	if sc.MaxConns > 0 {
		lim.MaxConns = sc.MaxConns
	}
	return &Report{
		Scenario:    sc.Name,
		Title:       sc.Title,
		Reproduces:  sc.Reproduces,
		Source:      sc.Source,
		Notes:       sc.Notes,
		Profile:     o.Profile,
		Reps:        o.reps(),
		Started:     start.UTC(),
		DurationSec: time.Since(start).Seconds(),
		Machine:     m,
		Limits:      lim,
		ServerCPUs:  o.ServerCPUs,
		ClientCPUs:  o.ClientCPUs,
		Targets:     targets,
		Points:      sc.Points,
		Rows:        Aggregate(sc, measured, runs),
		Runs:        runs,
	}
}

// Measured returns the names of the targets that were measured.
func (r *Report) Measured() []string {
	var n []string
	for _, t := range r.Targets {
		if t.Measured {
			n = append(n, t.Name)
		}
	}
	return n
}

// Write writes <dir>/<scenario>.json and .md, <scenario>-runs.csv when r has
// raw runs (a re-rendered report has none and leaves the file alone), and
// the plots when asked. Plot failures are reported in the Markdown, not
// fatal.
func (r *Report) Write(dir string, sc *Scenario, plots bool) error {
	var plotErr error
	if plots && len(r.Rows) > 0 {
		r.Plots, plotErr = writePlots(dir, sc, r.Rows)
	}
	b, err := json.Marshal(r) // compact: the .md is the human view

	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, sc.Name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if len(r.Runs) > 0 {
		if err := writeRunsCSV(filepath.Join(dir, sc.Name+"-runs.csv"), r.Runs); err != nil {
			return err
		}
	}
	md := renderMarkdown(r, sc, plotErr)
	return os.WriteFile(filepath.Join(dir, sc.Name+".md"), []byte(md), 0o644)
}

// fmtDuration renders seconds as "1m23s".
func fmtDuration(sec float64) string {
	return (time.Duration(sec) * time.Second).Round(time.Second).String()
}

// Rerender rewrites the Markdown and plots of the scenarios in names (all
// when empty) from the JSON files already in dir, without measuring again.
func Rerender(dir string, names []string, plots bool) error {
	if len(names) == 0 {
		names = ScenarioNames()
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if errors.Is(err, os.ErrNotExist) && len(names) == len(ScenarioNames()) {
			continue // rendering "all": skip the ones never run
		}
		if err != nil {
			return err
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("harness: %s.json: %w", name, err)
		}
		scs, err := selectScenarios(r.Profile, []string{name})
		if err != nil {
			return err
		}
		// The heading and the source follow the scenario's definition (the
		// heading is built from the profile's counts); what was measured
		// and how (Reproduces, Notes) stays as recorded.
		if topt, ok := traceOptionsOf(r.Points); ok && name == traceName {
			scs[0] = traceScenario(r.Profile, topt)
		}
		r.Title, r.Source = scs[0].Title, scs[0].Source
		r.Plots = nil
		if err := r.Write(dir, &scs[0], plots); err != nil {
			return err
		}
	}
	return nil
}
