package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// docFlag matches a long flag in prose or code: "--name" not glued to a
// word before it (so the anchor "#tuning--t-and---workers" is no flag).
var docFlag = regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)`)

// otherTools are the long flags of programs other than tandem and the
// project's own commands that the docs show on a command line.
var otherTools = map[string]string{
	"servers":    "libmemcached's memcstat and memcdump",
	"branch":     "git clone",
	"config":     "mcrouter",
	"now":        "systemctl enable",
	"build-arg":  "podman/docker build",
	"entrypoint": "podman/docker run",
	"memory":     "podman/docker run",
	"name":       "podman/docker run",
	"pull":       "podman/docker build",
	"from":       "COPY in a Containerfile",
	"short":      "git rev-parse",

	"enable-large-client-flags": "memcached's configure script",
}

// projectFlags returns the flags of the project's other commands: the
// benchmark harness and load generator (Go flag definitions in
// benchmarks/cmd/*/main.go) and the scripts in docs/deploy (their
// `--name)` case arms), each mapped to where it was found.
func projectFlags(t *testing.T) map[string]string {
	t.Helper()
	flags := map[string]string{}
	goDef := regexp.MustCompile(`fs\.\w+\((?:&[\w.]+, )?"([a-z][a-z0-9-]*)"`)
	shDef := regexp.MustCompile(`(?m)^\s*(?:-\w \| )?--([a-z][a-z0-9-]*)(?: \| [^)]*)?\)`)
	for pattern, re := range map[string]*regexp.Regexp{
		"benchmarks/cmd/*/main.go": goDef,
		"docs/deploy/*.sh":         shDef,
	} {
		files, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s (%v)", pattern, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				flags[m[1]] = strings.TrimPrefix(f, repoRoot+"/")
			}
		}
	}
	return flags
}

// docFiles are the documents whose flags are checked: every Markdown page
// under docs/, the README, and the deployment files.
func docFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".service") || filepath.Base(p) == "Containerfile") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return append(files, filepath.Join(repoRoot, "README.md"))
}

// TestDocsFlags fails when a document names a long flag that neither
// tandem's --help nor one of the project's other commands has (a flag
// renamed or removed, a typo), and when a flag of --help is missing from
// docs/operations.md, the flag reference.
func TestDocsFlags(t *testing.T) {
	_, fs, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	help, _, code := runTandem(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	tandem := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		tandem[f.Name] = true
		if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `([ \[\n]|$)`).MatchString(help) {
			t.Errorf("--help does not show --%s", f.Name)
		}
	})
	others := projectFlags(t)
	for _, need := range []string{"scenario", "quick", "arch", "offline"} {
		if others[need] == "" {
			t.Fatalf("the harness's and scripts' flags were not found (no --%s): fix projectFlags", need)
		}
	}

	for _, path := range docFiles(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(path, repoRoot+"/")
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range docFlag.FindAllStringSubmatch(line, -1) {
				name := m[1]
				if tandem[name] || others[name] != "" || otherTools[name] != "" {
					continue
				}
				t.Errorf("%s:%d names --%s, which is not in tandem --help, nor a flag of the harness, mcbench or docs/deploy's scripts:\n\t%s", rel, i+1, name, strings.TrimSpace(line))
			}
		}
	}

	ops, err := os.ReadFile(filepath.Join(repoRoot, "docs/operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for name := range tandem {
		if !regexp.MustCompile(`(^|[^\w-])--` + regexp.QuoteMeta(name) + `($|[^\w-])`).Match(ops) {
			missing = append(missing, "--"+name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/operations.md, the flag reference, does not name %s (tandem --help has them)", strings.Join(missing, ", "))
	}
}

// docShort matches a short flag in a code span: "`-m`", "`-m 64`",
// "`-S, --enable-sasl`", "`-o key=value`".
var docShort = regexp.MustCompile("`-([A-Za-z])(?:[ ,=/`]|$)")

// docTandemArgs matches a tandem command line in a document: the program
// (tandem, or a path ending in /tandem) and what follows it on the line.
var docTandemArgs = regexp.MustCompile(`(?:^|[\s(` + "`" + `])(?:\S*/)?tandem((?: +-[^\s` + "`" + `]*(?: +[^-\s` + "`" + `][^\s` + "`" + `]*)?)+)`)

// TestDocsShortFlags fails when a document names a short flag tandem does
// not have: one in a code span ("`-x`"), or one on a tandem command line
// (each letter of "-vv" or "-dvv").
func TestDocsShortFlags(t *testing.T) {
	_, fs, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	has := func(s string) bool { return fs.ShorthandLookup(s) != nil }
	checked := 0
	for _, path := range docFiles(t) {
		if !strings.HasSuffix(path, ".md") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(path, repoRoot+"/")
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range docShort.FindAllStringSubmatch(line, -1) {
				checked++
				if !has(m[1]) {
					t.Errorf("%s:%d names -%s, which tandem does not have:\n\t%s", rel, i+1, m[1], strings.TrimSpace(line))
				}
			}
			for _, m := range docTandemArgs.FindAllStringSubmatch(line, -1) {
				for _, arg := range strings.Fields(m[1]) {
					if !regexp.MustCompile(`^-[A-Za-z]+$`).MatchString(arg) {
						continue
					}
					for _, r := range arg[1:] {
						checked++
						if !has(string(r)) {
							t.Errorf("%s:%d runs tandem with -%c, which tandem does not have:\n\t%s", rel, i+1, r, strings.TrimSpace(line))
						}
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d short flags found in the docs: the patterns no longer match them", checked)
	}
}
