package main

// The man page, docs/tandem.1, is generated from the flag table (flags.go:
// options.go, the same source as --help) by this file, and
// TestManPage fails when the committed page differs from what the table
// gives. After changing a flag, regenerate it with
//
//	go generate ./cmd/tandem
//
// which runs this test with -update-man.

//go:generate go test -count=1 -run ^TestManPage$ . -update-man

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

var updateMan = flag.Bool("update-man", false, "rewrite docs/tandem.1 from the flag table")

const manPath = "../../docs/tandem.1"

func TestManPage(t *testing.T) {
	_, fs, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeManPage(&b, fs)
	if *updateMan {
		if err := os.WriteFile(manPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(manPath)
	if err != nil {
		t.Fatalf("%v: generate it with `go generate ./cmd/tandem`", err)
	}
	if !bytes.Equal(old, b.Bytes()) {
		oldLines, newLines := strings.Split(string(old), "\n"), strings.Split(b.String(), "\n")
		for i := 0; i < max(len(oldLines), len(newLines)); i++ {
			var o, n string
			if i < len(oldLines) {
				o = oldLines[i]
			}
			if i < len(newLines) {
				n = newLines[i]
			}
			if o != n {
				t.Fatalf("docs/tandem.1 is out of date with the flag table (first difference at line %d:\n committed: %q\n generated: %q)\nregenerate it with `go generate ./cmd/tandem` and commit it", i+1, o, n)
			}
		}
	}
	for _, want := range []string{"\\-\\-listen", "\\-\\-memory\\-limit", "EXIT STATUS"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("generated man page lacks %q", want)
		}
	}
}

// hereN is the machine-dependent part of a default ("GOMAXPROCS, here 2"):
// the page says what the default is, not what it was where it was generated.
var hereN = regexp.MustCompile(`, here \d+$`)

// writeManPage writes tandem(1) in man(7) roff: the flags by --help group,
// then exit status, signals, environment and pointers to the docs.
func writeManPage(w io.Writer, fs *pflag.FlagSet) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p(`.\" Generated from the flag table in cmd/tandem/options.go by cmd/tandem/manpage_test.go.`)
	p(`.\" Do not edit: run "go generate ./cmd/tandem" after changing a flag.`)
	p(`.TH TANDEM 1 "" "tandem %s" "User Commands"`, roff(version))
	p(`.SH NAME`)
	p(`tandem \- a memcached\-compatible cache server`)
	p(`.SH SYNOPSIS`)
	p(`.B tandem`)
	p(`.RI [ flags ]`)
	p(`.SH DESCRIPTION`)
	p(`%s`, roff("tandem serves memcached's text and binary protocols (memcached "+protocolVersion+") from a "+
		"sharded, memory-bounded cache with TinyLFU admission. It takes every flag of memcached "+protocolVersion+
		": a flag does what it does in memcached where that maps onto tandem, logs one warning where it has no "+
		"effect, and is refused (exit status 2) where tandem would serve clients differently."))
	p(`.PP`)
	p(`%s`, roff("Without -l, tandem listens on 127.0.0.1 only; memcached listens on every interface. "+
		"Give -l 0.0.0.0 (or an address) to serve other hosts."))
	p(`.SH OPTIONS`)
	for _, g := range helpGroups {
		p(`.SS %s`, roff(g))
		for _, name := range groupFlags(g) {
			writeManFlag(w, fs.Lookup(name))
		}
	}
	p(`.SH EXIT STATUS`)
	p(`.TP`)
	p(`.B %d`, exitOK)
	p(`%s`, roff("clean stop (SIGTERM, SIGINT, SIGUSR1 or the shutdown command); --help, --version, --license."))
	p(`.TP`)
	p(`.B %d`, exitFailure)
	p(`%s`, roff("the server could not start or stopped on an error."))
	p(`.TP`)
	p(`.B %d`, exitUsage)
	p(`%s`, roff("the command line is wrong, or names a feature tandem refuses; nothing was started."))
	p(`.SH SIGNALS`)
	p(`%s`, roff("SIGTERM, SIGINT and SIGUSR1 stop tandem gracefully: it stops accepting, lets requests already "+
		"read finish, and closes connections within 10 seconds; with -e it then saves the memory file, so that "+
		"the next start with the same settings finds the items again (a warm restart). SIGHUP does not stop it."))
	p(`.SH ENVIRONMENT`)
	p(`.TP`)
	p(`.B GOMEMLIMIT`)
	p(`%s`, roff("Go heap soft limit; when unset tandem sets it, every 100 ms, to what the cache holds on the heap plus -m/8 + 4 MiB. Item records live outside the Go heap."))
	p(`.TP`)
	p(`.B GOGC`)
	p(`%s`, roff("Go collector target; when unset tandem sets 50."))
	p(`.TP`)
	p(`.B GOMAXPROCS`)
	p(`%s`, roff("processors for Go code; when set, tandem does not raise it to -t + 1."))
	p(`.SH SEE ALSO`)
	p(`.BR memcached (1),`)
	p(`.BR memcached\-tool (1),`)
	p(`.BR memcstat (1)`)
	p(`.PP`)
	p(`%s`, roff("docs/operations.md (every flag, memory sizing, stats, metrics) and docs/migrating.md "+
		"(coming from memcached) in tandem's source."))
}

// writeManFlag writes one flag as a tagged paragraph: its names and value
// name, then its usage and default, as --help gives them.
func writeManFlag(w io.Writer, f *pflag.Flag) {
	varname, usage := pflag.UnquoteUsage(f)
	switch varname {
	case "stringArray":
		varname = "string"
	case "count":
		varname = ""
	}
	var names string
	if f.Shorthand != "" {
		names = `\fB\-` + f.Shorthand + `\fR, `
	}
	names += `\fB\-\-` + roffWord(f.Name) + `\fR`
	if varname != "" {
		names += ` \fI` + varname + `\fR`
	}
	fmt.Fprintf(w, ".TP\n%s\n%s", names, roff(usage))
	def := hereN.ReplaceAllString(f.DefValue, "")
	if f.Value.Type() == "stringArray" {
		def = strings.Trim(def, "[]")
	}
	switch def {
	case "", "0", "0s", "false", "[]":
	default:
		fmt.Fprintf(w, " (default: %s)", roff(def))
	}
	fmt.Fprintln(w)
}

// roff escapes text for a man(7) paragraph: backslashes, hyphens (so that
// flags copy as ASCII hyphen-minus) and a control character at a line start.
func roff(s string) string {
	s = roffWord(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

func roffWord(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}
