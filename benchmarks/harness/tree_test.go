package harness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a repository with one commit holding go.mod.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	write(t, filepath.Join(dir, "go.mod"), "module github.com/tandemcache/tandem\n")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	return dir
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadSourceDirtyTree(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t)
	s := ReadSource(ctx, repo, repo, "")
	if s.Commit == "" || s.IsDirty() || s.HarnessCommit != "" {
		t.Fatalf("fresh commit: %+v", s)
	}
	// Results written by a run do not make the tree dirty.
	write(t, filepath.Join(repo, "benchmarks", "results", "x.json"), "{}")
	if s := ReadSource(ctx, repo, repo, ""); s.IsDirty() {
		t.Errorf("results only: dirty %v", s.Dirty)
	}
	// A changed file and an untracked source file do.
	write(t, filepath.Join(repo, "go.mod"), "module github.com/tandemcache/tandem\n\ngo 1.26\n")
	write(t, filepath.Join(repo, "cmd", "tandem", "new.go"), "package main\n")
	s = ReadSource(ctx, repo, repo, "")
	if len(s.Dirty) != 2 || !strings.Contains(strings.Join(s.Dirty, " "), "go.mod") {
		t.Errorf("dirty = %q, want go.mod and cmd/", s.Dirty)
	}
	// The harness running from another checkout is recorded apart.
	other := gitRepo(t)
	s = ReadSource(ctx, repo, other, "")
	if s.HarnessCommit == "" || len(s.HarnessDirty) != 0 {
		t.Errorf("harness checkout: %+v", s)
	}
}

func TestCheckSourceRefusesDirtyTree(t *testing.T) {
	dirty := Source{Commit: "abc", Dirty: []string{" M cmd/tandem/main.go"}}
	tests := []struct {
		name    string
		o       Options
		s       Source
		refused bool
	}{
		{"clean", Options{Profile: Default}, Source{Commit: "abc"}, false},
		{"dirty default", Options{Profile: Default}, dirty, true},
		{"dirty allowed", Options{Profile: Default, AllowDirty: true}, dirty, false},
		{"dirty quick", Options{Profile: Quick}, dirty, false},
	}
	for _, tc := range tests {
		var log bytes.Buffer
		tc.o.Log = &log
		err := tc.o.checkSource(tc.s)
		if got := errors.Is(err, ErrDirtyTree); got != tc.refused {
			t.Errorf("%s: err %v, want refused %v", tc.name, err, tc.refused)
		}
		if tc.s.IsDirty() && !strings.Contains(log.String()+errString(err), "cmd/tandem/main.go") {
			t.Errorf("%s: the dirty file is not named:\n%s%v", tc.name, log.String(), err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDirtyReportIsMarked(t *testing.T) {
	sc := Scenarios(Quick)[0]
	var r Report
	r.Machine.Source = Source{Commit: "abc", Dirty: []string{" M reactor/x.go"}, TandemBin: "/tmp/tandem"}
	md := renderMarkdown(&r, &sc, nil)
	for _, want := range []string{"DIRTY TREE", "reactor/x.go", "commit `abc`", "prebuilt `/tmp/tandem`"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md[:min(len(md), 600)])
		}
	}
	r.Machine.Source = Source{Commit: "abc"}
	if md := renderMarkdown(&r, &sc, nil); strings.Contains(md, "DIRTY") {
		t.Error("a clean run marked dirty")
	}
}
