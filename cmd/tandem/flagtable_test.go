package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol/handler"
)

// memcachedKeys returns memcached's -o keys in the flag table, but the
// ssl_* keys (TLSSettings.applySSLOption) and tandem's memory_file, each
// with the warning it logs ("" for a key tandem acts on or refuses).
func memcachedKeys() map[string]string {
	keys := map[string]string{}
	for _, o := range options {
		for _, k := range o.oKeys {
			if !strings.HasPrefix(k, "ssl_") && k != "memory_file" {
				keys[k] = o.inert
			}
		}
	}
	return keys
}

// TestFlagTable checks what the flag table (options.go) cannot guarantee
// by its form: every flag is in a --help group, the inert ones in the
// inert group with a short name for their warning; no -o key or "stats
// settings" row is declared twice; every row of settingsOrder (memcached
// 1.6.18's, checked against the installed memcached, then tandem's) is
// rendered by exactly one entry; and the rows follow the flags and keys
// they report.
func TestFlagTable(t *testing.T) {
	_, fs, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range helpGroups {
		names := groupFlags(g)
		if len(names) == 0 {
			t.Errorf("--help group %q has no flag", g)
		}
		n += len(names)
	}
	count := 0
	fs.VisitAll(func(*pflag.Flag) { count++ })
	if n != count {
		t.Errorf("%d flags in --help groups, %d in the flag set: a flag's group is not in helpGroups", n, count)
	}

	keyCount := map[string]int{}
	rowCount := map[string]int{}
	for _, o := range options {
		switch {
		case o.name == "" && (o.group != "" || o.help != "" || o.field != nil || o.set != nil || o.warn != nil):
			t.Errorf("-o %v: an entry without a flag has only keys, inert, oSet and settings", o.oKeys)
		case o.name == "" && len(o.oKeys) == 0:
			t.Errorf("an entry has neither a flag nor -o keys")
		case o.name != "" && o.inert != "" && (o.short == "" || o.group != gInert):
			t.Errorf("--%s is inert: it needs a short name (its warning starts -x:) and the group %q", o.name, gInert)
		case o.name != "" && o.inert == "" && o.group == gInert && o.name != "extended":
			t.Errorf("--%s is in the group of flags without effect, but has no inert warning", o.name)
		case o.inert != "" && o.oSet != nil:
			t.Errorf("--%s -o %v: both inert and applied", o.name, o.oKeys)
		}
		for _, k := range o.oKeys {
			keyCount[k]++
		}
		for _, r := range o.settings {
			rowCount[r.name]++
		}
	}
	for _, r := range fixedSettings {
		rowCount[r.name]++
	}
	for k, n := range keyCount {
		if n != 1 {
			t.Errorf("-o %s is declared by %d entries", k, n)
		}
	}
	for i, name := range settingsOrder {
		if rowCount[name] != 1 {
			t.Errorf("stats settings %s is rendered by %d entries, want 1", name, rowCount[name])
		}
		if slices.Index(settingsOrder, name) != i {
			t.Errorf("stats settings %s is twice in settingsOrder", name)
		}
		delete(rowCount, name)
	}
	for name := range rowCount {
		t.Errorf("the table renders stats settings %s, which settingsOrder does not print", name)
	}

	// Every flag given logs its inert warning once; acted-on flags none.
	for _, o := range options {
		if o.name == "" || o.inert == "" {
			continue
		}
		args := []string{"--" + o.name}
		if f := fs.Lookup(o.name); f.NoOptDefVal == "" {
			args = append(args, "2")
		}
		c, _, err := parseFlags(args)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if want := "-" + o.short + ": " + o.inert + "; ignored"; !slices.Contains(c.Warnings, want) {
			t.Errorf("%q: warnings %q, want %q", args, c.Warnings, want)
		}
	}

	settingOf := func(args []string, name string) string {
		c, _, err := parseFlags(args)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		for _, s := range settings(c, handler.Live{}) {
			if s.Name == name {
				return s.Value
			}
		}
		t.Fatalf("no %s in stats settings", name)
		return ""
	}
	for _, tc := range []struct {
		name    string
		args    []string
		setting string
		want    string
	}{
		{"default buffer limit", nil, "read_buf_mem_limit", "16777216"},
		{"--conn-buffer-limit", []string{"--conn-buffer-limit", "8m"}, "read_buf_mem_limit", "8388608"},
		{"no buffer limit", []string{"--conn-buffer-limit", "0"}, "read_buf_mem_limit", "0"},
		{"-o read_buf_mem_limit", []string{"-o", "read_buf_mem_limit=4"}, "read_buf_mem_limit", "4194304"},
		{"-c", []string{"-c", "77"}, "maxconns", "77"},
		{"-t", []string{"-t", "3"}, "num_threads", "3"},
		{"-I", []string{"-I", "2m"}, "item_size_max", "2097152"},
		{"-R", []string{"-R", "7"}, "reqs_per_event", "7"},
		{"-b", []string{"-b", "9"}, "tcp_backlog", "9"},
		{"--idle-timeout", []string{"--idle-timeout", "4s"}, "idle_timeout", "4"},
		{"-o idle_timeout", []string{"-o", "idle_timeout=5"}, "idle_timeout", "5"},
		{"-f", []string{"-f", "1.5"}, "growth_factor", "1.50"},
		{"-n", []string{"-n", "64"}, "chunk_size", "64"},
		{"-e", []string{"-e", "/dev/shm/x"}, "memory_file", "/dev/shm/x"},
		{"-o memory_file", []string{"-o", "memory_file=/dev/shm/y"}, "memory_file", "/dev/shm/y"},
		{"--mode", []string{"--mode", "inline"}, "tandem_mode", "inline"},
		{"-M", []string{"-M"}, "evictions", "off"},
		{"-F", []string{"-F"}, "flush_enabled", "no"},
		{"-X", []string{"-X"}, "dump_enabled", "no"},
		{"-C", []string{"-C"}, "cas_enabled", "no"},
		{"-A", []string{"-A"}, "shutdown_command", "yes"},
		{"-o ssl_min_version", []string{"-o", "ssl_min_version=3"}, "ssl_min_version", "tlsv1.3"},
		{"-a", []string{"-a", "755"}, "umask", "755"},
		{"-l", []string{"-l", "127.0.0.1,::1"}, "inter", "127.0.0.1,::1"},
	} {
		if got := settingOf(tc.args, tc.setting); got != tc.want {
			t.Errorf("%s: stats settings %s %q, want %q", tc.name, tc.setting, got, tc.want)
		}
	}

	// The rows memcached 1.6.18 prints, in its order, are settingsOrder's
	// before tandem's own.
	mc := testenv.StartMemcached(t)
	var names []string
	for _, kv := range opsStats(t, mc.Addr, "settings") {
		names = append(names, kv[0])
	}
	ours := slices.DeleteFunc(slices.Clone(settingsOrder), func(n string) bool { return strings.HasPrefix(n, "tandem_") })
	if !slices.Equal(names, ours) {
		t.Errorf("memcached 1.6.18's stats settings rows:\n%q\nsettingsOrder's (but tandem_*):\n%q", names, ours)
	}
}
