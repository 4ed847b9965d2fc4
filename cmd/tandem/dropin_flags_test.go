package main

import (
	"github.com/tandemcache/tandem/cmd/testenv"

	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The command line as a drop-in for memcached 1.6.18's: every flag of
// `memcached -h` is accepted, --help and the exit statuses are as
// documented, and flags tandem cannot honour stop it at start.

// runTandem runs the binary to completion (it must exit within 20 s) and
// returns its standard output, standard error and exit status.
func runTandem(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, binPath, args...)
}

func runCommand(t *testing.T, path string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(path, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s %q: %v", filepath.Base(path), args, err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s %q did not exit within 20s; stderr:\n%s", filepath.Base(path), args, e.String())
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// memcachedFlags lists the flags `memcached -h` prints: short ("-p") and
// long ("--port") forms. Long forms memcached itself refuses (its help
// spells --napi-ids as --napi_ids) are dropped.
func memcachedFlags(t *testing.T) (short, long []string) {
	t.Helper()
	mc := testenv.NeedTool(t, "memcached", "memcached")
	help, _, _ := runCommand(t, mc, "-h")
	re := regexp.MustCompile(`(?m)^(-[A-Za-z]),?\s+(--[a-z_-]+)?`)
	for _, m := range re.FindAllStringSubmatch(help, -1) {
		short = append(short, m[1])
		if m[2] == "" {
			continue
		}
		if _, stderr, _ := runCommand(t, mc, m[2]+"=1", "-V"); strings.Contains(stderr, "unrecognized option") {
			continue
		}
		long = append(long, m[2])
	}
	if len(short) < 35 {
		t.Fatalf("parsed only %d flags from memcached -h:\n%s", len(short), help)
	}
	return short, long
}

// TestEveryMemcachedFlagIsKnown checks that tandem knows every short and
// long flag memcached 1.6.18 prints in -h, and lists each in --help.
func TestEveryMemcachedFlagIsKnown(t *testing.T) {
	short, long := memcachedFlags(t)
	help, stderr, code := runTandem(t, "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit %d, stderr %q", code, stderr)
	}
	_, fs, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range short {
		if fs.ShorthandLookup(s[1:]) == nil {
			t.Errorf("memcached's %s is not a tandem flag", s)
		}
		if !regexp.MustCompile(`(?m)^\s+` + s + `, --`).MatchString(help) {
			t.Errorf("--help does not list %s", s)
		}
	}
	for _, l := range long {
		if fs.Lookup(l[2:]) == nil {
			t.Errorf("memcached's %s is not a tandem flag", l)
		}
		if !regexp.MustCompile(regexp.QuoteMeta(l) + `[ \[]`).MatchString(help) {
			t.Errorf("--help does not list %s", l)
		}
	}
}

// TestHelp checks --help: standard output, exit 0, every flag in one group,
// each default printed once, the exit statuses documented.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		out, stderr, code := runTandem(t, arg)
		if code != 0 || stderr != "" || !strings.HasPrefix(out, "tandem ") {
			t.Fatalf("%s: exit %d, stderr %q, stdout %.100q", arg, code, stderr, out)
		}
		if !strings.Contains(out, "Exit status: 0 ") || !strings.Contains(out, " 1 when") || !strings.Contains(out, " 2 for a wrong command line") {
			t.Errorf("%s does not document the exit statuses:\n%s", arg, out)
		}
		// A flag's entry runs from its line to the next flag's.
		entries := regexp.MustCompile(`(?m)^\s+(-[A-Za-z], )?--`).Split(out, -1)
		for _, e := range entries[1:] {
			if n := strings.Count(e, "default"); n > 1 {
				t.Errorf("%s: a default printed %d times in %q", arg, n, e)
			}
		}
	}
	_, fs, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	grouped := map[string]int{}
	for _, g := range helpGroups {
		for _, n := range groupFlags(g) {
			grouped[n]++
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if grouped[f.Name] != 1 {
			t.Errorf("flag --%s is in %d --help groups, want 1", f.Name, grouped[f.Name])
		}
		delete(grouped, f.Name)
	})
	for n := range grouped {
		t.Errorf("--help group lists --%s, which is not a flag", n)
	}
}

// TestExitStatus checks one exit status per kind of error: 2 for a wrong
// command line, 1 when the server cannot start.
func TestExitStatus(t *testing.T) {
	busy := startServer(t, "goroutine")
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		say  string // part of standard error
	}{
		{"unknown flag", []string{"--frobnicate"}, 2, "frobnicate"},
		{"bad log level", []string{"--log-level", "bogus"}, 2, "--log-level"},
		{"bad log format", []string{"--log-format", "text"}, 2, "--log-format"},
		{"bad value", []string{"-p", "x"}, 2, "port"},
		{"stray argument", []string{"extra"}, 2, "extra"},
		{"unknown -o key", []string{"-o", "bogus"}, 2, "bogus"},
		{"TLS without a certificate", []string{"-Z"}, 2, "-Z: needs the certificate chain file"},
		{"memory file in a missing directory", []string{"-p", "0", "-e", filepath.Join(dir, "no", "mem")}, 1, "memory file"},
		{"memory file key without a name", []string{"-o", "memory_file="}, 2, "-o memory_file: a file name is required"},
		{"extstore", []string{"-o", "ext_path=" + filepath.Join(dir, "ext") + ":64m"}, 2, "external storage (extstore) is not supported"},
		{"SASL without credentials", []string{"-S"}, 2, "-S: SASL needs credentials"},
		{"bad -D", []string{"-D", "ab"}, 2, "-D"},
		{"port in use", []string{"-p", busy.Addr[strings.LastIndexByte(busy.Addr, ':')+1:], "--log-format", "json"}, 1, "listen tcp " + busy.Addr + ": bind: address already in use"},
		{"missing auth file", []string{"-p", "0", "-Y", filepath.Join(dir, "none")}, 1, "auth file"},
		{"log file in a missing directory", []string{"-p", "0", "--log-file", filepath.Join(dir, "no", "log")}, 1, "--log-file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runTandem(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.say) {
				t.Fatalf("tandem %q: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.say)
			}
		})
	}
}

// TestLicenseAndVersion checks -i and -V, against memcached's.
func TestLicenseAndVersion(t *testing.T) {
	out, _, code := runTandem(t, "-i")
	if code != 0 || !strings.Contains(out, "MIT License") || !strings.Contains(out, "Permission is hereby granted") {
		t.Fatalf("-i: exit %d, %.200q", code, out)
	}
	out, _, code = runTandem(t, "--license")
	if code != 0 || !strings.Contains(out, "MIT License") {
		t.Fatalf("--license: exit %d, %.200q", code, out)
	}
	if out, _, code := runTandem(t, "-V"); code != 0 || !strings.HasPrefix(out, "tandem 0.1.0 (memcached protocol 1.6.18)") {
		t.Fatalf("-V: exit %d, %q", code, out)
	}
	mc := testenv.NeedTool(t, "memcached", "memcached")
	if out, _, code := runCommand(t, mc, "-i"); code != 0 || !strings.Contains(out, "Redistribution and use") {
		t.Errorf("memcached -i: exit %d, %.200q", code, out)
	}
}

// inertFlags are memcached flags tandem accepts without effect, with the
// warning each must log once.
var inertFlags = []struct {
	args    []string
	warning string
}{
	{[]string{"-U", "11311"}, "-U: UDP is not served"},
	{[]string{"-f", "1.5"}, "-f: "},
	{[]string{"-n", "64"}, "-n: "},
	{[]string{"-L"}, "-L: "},
	{[]string{"-N", "2"}, "-N: "},
	{[]string{"-a", "755"}, "-a: "},
}

// TestInertFlagsWarnOnce starts tandem with every memcached flag and -o key
// that has no effect in tandem: it must start, serve, and log one warning
// naming each. The same command line must be memcached's: memcached
// accepts it.
func TestInertFlagsWarnOnce(t *testing.T) {
	var args []string
	for _, f := range inertFlags {
		args = append(args, f.args...)
	}
	keys := make([]string, 0, len(memcachedKeys()))
	for k := range memcachedKeys() {
		if !strings.HasPrefix(k, "ext_") { // refused: TestExtstoreRefused
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var opts []string
	for _, k := range keys {
		opts = append(opts, k+"="+extendedSample(k))
	}
	args = append(args, "-o", strings.Join(opts, ","))

	s := startServer(t, "inline", args...)
	c := dial(t, s.Addr)
	if got := roundTrip(t, c, "version\r\n", len(sentinelReply)); got != sentinelReply {
		t.Fatalf("version: %q", got)
	}
	log := s.Log()
	count := func(sub string) int { return strings.Count(log, `"message":"`+sub) }
	for _, f := range inertFlags {
		if n := count(f.warning); n != 1 {
			t.Errorf("%v: %d warnings starting %q, want 1", f.args, n, f.warning)
		}
	}
	for _, k := range keys {
		n := count("-o " + k + "=")
		if want := map[bool]int{true: 0, false: 1}[memcachedKeys()[k] == ""]; n != want {
			t.Errorf("-o %s: %d warnings, want %d", k, n, want)
		}
	}
	if strings.Contains(log, `"level":"error"`) {
		t.Errorf("errors logged:\n%s", log)
	}

	mc := testenv.NeedTool(t, "memcached", "memcached")
	mcArgs := slices.Clone(args)
	if os.Getuid() == 0 {
		mcArgs = append(mcArgs, "-u", "root")
	}
	if out, stderr, code := runCommand(t, mc, append(mcArgs, "-V")...); code != 0 || !strings.HasPrefix(out, "memcached 1.6.18") {
		t.Errorf("memcached refuses the command line %q: exit %d, %s%s", mcArgs, code, out, stderr)
	}
	if _, _, code := runCommand(t, mc, "-o", "bogus", "-V"); code == 0 {
		t.Errorf("memcached accepts an unknown -o key, tandem refuses it")
	}
}

// extendedSample is a value memcached accepts for -o key.
func extendedSample(key string) string {
	switch key {
	case "hash_algorithm":
		return "murmur3"
	case "ext_path":
		return os.TempDir() + "/tandem-extstore:64m"
	case "slab_sizes":
		return "96-192"
	case "ssl_chain_cert", "ssl_key", "ssl_ca_cert", "ssl_ciphers":
		return "x"
	case "ssl_min_version", "ssl_verify_mode", "ssl_keyformat":
		return "0"
	case "hot_max_factor", "warm_max_factor", "slab_automove_ratio", "ext_max_frag", "slab_automove_freeratio":
		return "0.5"
	case "tail_repair_time":
		return "10"
	case "hashpower":
		return "16"
	case "slab_automove_window":
		return "30"
	case "idle_timeout":
		return "0"
	}
	return "1"
}

// TestFlagValues checks flags with an effect in-process: parsing and
// validation.
func TestFlagValues(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(c *Config) bool
	}{
		{"-l list and repeats", []string{"-l", "127.0.0.1,::1", "-l", "10.0.0.1:11212"}, func(c *Config) bool {
			addrs, err := c.ListenAddrs()
			return err == nil && slices.Equal(addrs, []string{"127.0.0.1:11211", "[::1]:11211", "10.0.0.1:11212"})
		}},
		{"-l bracketed with port", []string{"-l", "[::1]:5", "-p", "7"}, func(c *Config) bool {
			addrs, err := c.ListenAddrs()
			return err == nil && slices.Equal(addrs, []string{"[::1]:5"})
		}},
		{"-l notls", []string{"-l", "notls:127.0.0.1"}, func(c *Config) bool {
			addrs, err := c.ListenAddrs()
			return err == nil && slices.Equal(addrs, []string{"127.0.0.1:11211"}) && len(c.Warnings) == 0
		}},
		{"-s -a", []string{"-s", "/tmp/x.sock", "-a", "0755"}, func(c *Config) bool {
			return c.UnixSocket == "/tmp/x.sock" && c.UnixMask == 0o755
		}},
		{"-b", []string{"-b", "4096"}, func(c *Config) bool { return c.Backlog == 4096 }},
		{"-D", []string{"-D", "/"}, func(c *Config) bool { return c.PrefixDelimiter == '/' && c.DetailEnabled }},
		{"no -D", nil, func(c *Config) bool { return c.PrefixDelimiter == ':' && !c.DetailEnabled }},
		{"-X -k -r -d -u", []string{"-X", "-k", "-r", "-d", "-u", "nobody"}, func(c *Config) bool {
			return c.DisableDumps && c.LockMemory && c.CoreDumps && c.Daemon && c.User == "nobody"
		}},
		{"-vv", []string{"-vv"}, func(c *Config) bool { return c.Verbose == 2 }},
		{"-o idle_timeout", []string{"-o", "idle_timeout=7,maxconns_fast"}, func(c *Config) bool {
			return c.IdleTimeout == 7*time.Second && len(c.Warnings) == 0
		}},
		{"--worker-writes is ignored with a warning", []string{"--worker-writes"}, func(c *Config) bool {
			return len(c.Warnings) == 1 && strings.HasPrefix(c.Warnings[0], "--worker-writes: ignored")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := parseFlags(tc.args)
			if err != nil {
				t.Fatalf("%q: %v", tc.args, err)
			}
			if !tc.check(c) {
				t.Fatalf("%q: config %+v", tc.args, c)
			}
		})
	}
	if c, _, err := parseFlags([]string{"-a", "9"}); err == nil {
		t.Errorf("-a 9 accepted: %+v", c)
	}
	c, _, err := parseFlags([]string{"-l", "127.0.0.1:bad"})
	if err == nil {
		err = c.Validate()
	}
	if err == nil {
		t.Errorf("-l 127.0.0.1:bad accepted")
	}
}
