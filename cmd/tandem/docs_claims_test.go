package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docOption matches an -o key in the docs: "-o key=" or "-o key" with an
// underscore (so "go build -o tandem" is no key).
var docOption = regexp.MustCompile(`-o ([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z][a-z0-9]*=)`)

// docTLSKey matches a row of a table of ssl_* keys: "| `ssl_key=FILE` |".
var docTLSKey = regexp.MustCompile("(?m)^\\| `(ssl_[a-z_]+)(?:=[^`]*)?` \\|")

// TestDocsOptionKeys fails when a document names an -o key that tandem
// does not know (memcached's keys tandem accepts, the ssl_* keys, and
// memory_file).
func TestDocsOptionKeys(t *testing.T) {
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The TLS table's rows name ssl_* keys without "-o ".
		tlsRows := docTLSKey.FindAllStringSubmatch(string(b), -1)
		for _, m := range append(docOption.FindAllStringSubmatch(string(b), -1), tlsRows...) {
			k := strings.TrimSuffix(m[1], "=")
			if optionByKey[k] == nil {
				t.Errorf("%s names -o %s, which tandem does not know", strings.TrimPrefix(f, repoRoot+"/"), k)
			}
		}
	}
}

// TestDocsRefusedCommandsAreRefused sends every command docs/protocol.md
// marks as not served ("no") to tandem and wants ERROR.
func TestDocsRefusedCommandsAreRefused(t *testing.T) {
	b, err := os.ReadFile(repoRoot + "/docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (`[^|]*`) \\| no \\|")
	cmd := regexp.MustCompile("`([^`]+)`")
	var cmds []string
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		for _, c := range cmd.FindAllStringSubmatch(m[1], -1) {
			cmds = append(cmds, c[1])
		}
	}
	if len(cmds) == 0 {
		t.Fatal("docs/protocol.md marks no command as not served: the table's format changed?")
	}
	s := startServer(t, "pool")
	for _, c := range cmds {
		got, _, err := exchange(s.Addr, c+"\r\n")
		if err != nil {
			t.Fatal(err)
		}
		if got != "ERROR\r\n" {
			t.Errorf("docs/protocol.md says %q is not served; tandem answers %q", c, got)
		}
	}
}

// TestDocsRefusedFlagsAreRefused starts tandem with each setting of
// docs/migrating.md's "What tandem refuses" table and wants exit status 2.
func TestDocsRefusedFlagsAreRefused(t *testing.T) {
	b, err := os.ReadFile(repoRoot + "/docs/migrating.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "## What tandem refuses")
	if i < 0 {
		t.Fatal("no \"What tandem refuses\" section in docs/migrating.md")
	}
	text = text[i:]
	text = text[:strings.Index(text[3:], "\n## ")+3]
	first := regexp.MustCompile("(?m)^\\| [^|`]*`(-[^`]+)`")
	n := 0
	for _, m := range first.FindAllStringSubmatch(text, -1) {
		line := strings.ReplaceAll(m[1], "...", "/x:64m")
		args := strings.Fields(strings.Split(line, ",")[0])
		if args[0] == "-o" && len(args) == 1 {
			continue
		}
		n++
		if _, _, code := runTandem(t, append(args, "-p", "0", "-Z", "-o", "ssl_chain_cert=/nonexistent,ssl_key=/nonexistent")...); code != exitUsage {
			t.Errorf("docs/migrating.md says tandem refuses %q; exit status %d, want %d", line, code, exitUsage)
		}
	}
	if n < 3 {
		t.Errorf("found %d refused settings in docs/migrating.md, want the table's rows", n)
	}
}

// TestDocsWarmRestartDropIn checks that the drop-in docs/operations.md
// shows is the one shipped, docs/deploy/tandem-warm-restart.conf (its
// comment header aside).
func TestDocsWarmRestartDropIn(t *testing.T) {
	ops, err := os.ReadFile(repoRoot + "/docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(repoRoot + "/docs/deploy/tandem-warm-restart.conf")
	if err != nil {
		t.Fatal(err)
	}
	const head = "# /etc/systemd/system/tandem.service.d/warm-restart.conf (docs/deploy/tandem-warm-restart.conf)\n"
	i := strings.Index(string(ops), "```\n"+head)
	if i < 0 {
		t.Fatal("docs/operations.md shows no block starting " + head)
	}
	shown := string(ops)[i+4+len(head):]
	shown = shown[:strings.Index(shown, "```")]
	shipped := string(conf)[strings.Index(string(conf), "[Unit]"):]
	if shown != shipped {
		t.Errorf("docs/operations.md's drop-in:\n%s\ndiffers from docs/deploy/tandem-warm-restart.conf's:\n%s", shown, shipped)
	}
}
