package harness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// resultsDir is where the harness writes inside the repository; changes
// there do not make a tree dirty (a run writes them before it is committed).
const resultsDir = "benchmarks/results"

// Source says which code a run measured: the commit tandem was built from,
// the commit the harness itself ran from when that is another checkout, and
// any uncommitted change in either. A report belongs to one commit only
// when Dirty and HarnessDirty are empty and TandemBin is not set.
type Source struct {
	Commit string   `json:"commit,omitempty"` // of --repo, where ./cmd/tandem is built
	Dirty  []string `json:"dirty,omitempty"`  // `git status --porcelain` lines of --repo outside benchmarks/results
	// TandemBin is a prebuilt binary that was measured instead of a build
	// of Commit: what it was built from is not known.
	TandemBin     string   `json:"tandem_bin,omitempty"`
	HarnessCommit string   `json:"harness_commit,omitempty"` // set when the harness runs from another checkout
	HarnessDirty  []string `json:"harness_dirty,omitempty"`
}

// ErrDirtyTree refuses a measurement of uncommitted code.
var ErrDirtyTree = errors.New("harness: uncommitted changes")

// IsDirty reports whether the measured code differs from every commit.
func (s Source) IsDirty() bool { return len(s.Dirty) > 0 || len(s.HarnessDirty) > 0 }

// Describe renders the source for a report: "commit `abc`", with what makes
// it belong to no commit spelled out.
func (s Source) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "commit `%s`", orDash(s.Commit))
	if s.TandemBin != "" {
		fmt.Fprintf(&b, " (tandem: the prebuilt `%s`, built from an unrecorded commit)", s.TandemBin)
	}
	if s.HarnessCommit != "" {
		fmt.Fprintf(&b, ", harness at commit `%s`", s.HarnessCommit)
	}
	return b.String()
}

// dirtyWarning is the report's loud line for a dirty tree ("" when clean).
func (s Source) dirtyWarning() string {
	if !s.IsDirty() {
		return ""
	}
	files := append(append([]string{}, s.Dirty...), s.HarnessDirty...)
	const most = 8
	more := ""
	if len(files) > most {
		more = fmt.Sprintf(" and %d more", len(files)-most)
		files = files[:most]
	}
	return fmt.Sprintf("**DIRTY TREE: measured with uncommitted changes** (`%s`%s). These numbers belong to no "+
		"commit; do not publish them.", strings.Join(files, "`, `"), more)
}

// ReadSource records the commits and uncommitted changes of repo (where
// tandem is built) and of harnessDir (where the harness runs; "" = same).
func ReadSource(ctx context.Context, repo, harnessDir, tandemBin string) Source {
	s := Source{TandemBin: tandemBin}
	if repo != "" {
		s.Commit, s.Dirty = treeState(ctx, repo)
	}
	if harnessDir == "" {
		return s
	}
	top := commandOutput(ctx, harnessDir, "git", "rev-parse", "--show-toplevel")
	if top == "" || repo != "" && sameDir(top, repo) {
		return s
	}
	s.HarnessCommit, s.HarnessDirty = treeState(ctx, top)
	return s
}

// treeState returns dir's commit and its uncommitted changes (git status
// lines, untracked files included) outside benchmarks/results.
func treeState(ctx context.Context, dir string) (commit string, dirty []string) {
	commit = commandOutput(ctx, dir, "git", "describe", "--always", "--abbrev=12")
	out := commandOutput(ctx, dir, "git", "status", "--porcelain", "--untracked-files=normal",
		"--", ".", ":(exclude)"+resultsDir)
	for line := range strings.Lines(out) {
		if line = strings.TrimSpace(line); line != "" {
			dirty = append(dirty, line)
		}
	}
	return commit, dirty
}

func sameDir(a, b string) bool {
	ea, err1 := filepath.EvalSymlinks(a)
	eb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ea == eb
}
