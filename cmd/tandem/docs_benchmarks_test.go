package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// benchmarksPageMaxLines bounds docs/benchmarks.md: it is the page a user
// reads to choose a mode or size -m, with the current figures only.
// Experiments, superseded runs and their history go to
// docs/benchmarks-appendix.md (issue #43: the page had grown into a
// 1,845-line lab notebook).
const benchmarksPageMaxLines = 320

// TestBenchmarksPage fails when the results page outgrows a page, or when a
// plot of the latest committed run (benchmarks/results/*.png) is not shown
// on it: a scenario's plots are its figures at a glance.
func TestBenchmarksPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, "\n"); n > benchmarksPageMaxLines {
		t.Errorf("docs/benchmarks.md has %d lines, more than %d: move what is not a current figure to docs/benchmarks-appendix.md", n, benchmarksPageMaxLines)
	}
	plots, err := filepath.Glob(filepath.Join(repoRoot, "benchmarks", "results", "*.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(plots) == 0 {
		t.Fatal("no plots under benchmarks/results: has the directory moved?")
	}
	for _, p := range plots {
		link := "(../benchmarks/results/" + filepath.Base(p) + ")"
		if !strings.Contains(page, link) {
			t.Errorf("docs/benchmarks.md does not show %s", strings.TrimPrefix(p, repoRoot+"/"))
		}
	}
}

var (
	// benchQuoted matches a reference to a benchmarks page's heading by its
	// title: docs/benchmarks-appendix.md, "The worker hand-off".
	benchQuoted = regexp.MustCompile(`(benchmarks(?:-appendix)?\.md)\)?,? \(?"([^"]+)"`)
	// benchTag matches a reference to the appendix by an old section
	// number, which its headings carry: docs/benchmarks-appendix.md, 12c.
	benchTag = regexp.MustCompile(`benchmarks-appendix\.md,? (?:section )?(12[a-d]?)\b`)
	// benchNumber matches a reference to a scenario of the results page by
	// its number: docs/benchmarks.md, section 8 (or scenario 8).
	benchNumber = regexp.MustCompile(`benchmarks\.md,? (?:section|scenario) (\d+[a-d]?)\b`)
)

// headingTitles returns the headings of a Markdown text without their
// leading #s and code spans' backquotes. Headings inside code fences do not
// count.
func headingTitles(text string) []string {
	var titles []string
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if !fence && strings.HasPrefix(line, "#") {
			titles = append(titles, strings.ReplaceAll(strings.TrimSpace(strings.TrimLeft(line, "#")), "`", ""))
		}
	}
	return titles
}

// TestDocsBenchmarkReferences fails when the documentation cites a section
// of docs/benchmarks.md or docs/benchmarks-appendix.md in prose (by title,
// by old section number, or by scenario number) that the page does not
// have. TestDocsLinks checks links; these are the citations that are not
// links, and they rotted when the pages were split.
func TestDocsBenchmarkReferences(t *testing.T) {
	titles := map[string][]string{}
	for _, name := range []string{"benchmarks.md", "benchmarks-appendix.md"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		titles[name] = headingTitles(string(b))
	}
	has := func(page string, ok func(title string) bool) bool {
		for _, title := range titles[page] {
			if ok(title) {
				return true
			}
		}
		return false
	}
	files := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "CHANGELOG.md")}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	space := regexp.MustCompile(`\s+`)
	refs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(f, repoRoot+"/")
		// A citation may wrap: read the file as one line.
		text := space.ReplaceAllString(string(b), " ")
		for _, m := range benchQuoted.FindAllStringSubmatch(text, -1) {
			refs++
			want := strings.ToLower(strings.ReplaceAll(m[2], "`", ""))
			if !has(m[1], func(title string) bool { return strings.HasPrefix(strings.ToLower(title), want) }) {
				t.Errorf("%s cites %s, %q: no heading of %s starts so", rel, m[1], m[2], m[1])
			}
		}
		for _, m := range benchTag.FindAllStringSubmatch(text, -1) {
			refs++
			tag := m[1]
			if !has("benchmarks-appendix.md", func(title string) bool {
				return strings.Contains(title, "("+tag+")") || strings.Contains(title, "("+tag+";")
			}) {
				t.Errorf("%s cites benchmarks-appendix.md, %s: no heading carries that number", rel, tag)
			}
		}
		for _, m := range benchNumber.FindAllStringSubmatch(text, -1) {
			refs++
			n := m[1]
			if !has("benchmarks.md", func(title string) bool {
				lead, _, ok := strings.Cut(title, ". ")
				if !ok {
					return false
				}
				for _, f := range strings.Fields(strings.ReplaceAll(lead, ",", " ")) {
					if f == n {
						return true
					}
				}
				return false
			}) {
				t.Errorf("%s cites benchmarks.md, section %s: the page has no scenario %s (the old sections 12a-12d are in benchmarks-appendix.md)", rel, n, n)
			}
		}
	}
	if refs < 5 {
		t.Fatalf("found only %d citations of the benchmarks pages: is a pattern broken?", refs)
	}
}
