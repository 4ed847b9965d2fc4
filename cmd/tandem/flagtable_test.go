package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tandemcache/tandem/protocol/handler"
)

// TestFlagTable checks that the lists rendered from the flag set agree
// with it: every flag is in exactly one --help group (the man page is
// generated from the same groups), the inert flags' group and warnings are
// one list, every -o key tandem acts on is named in some flag's help, and
// "stats settings" follows the flags it reports.
func TestFlagTable(t *testing.T) {
	_, fs, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, g := range flagGroups {
		for _, n := range g.names {
			if fs.Lookup(n) == nil {
				t.Errorf("--help group %q names --%s, which is not a flag", g.title, n)
			}
			seen[n]++
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if seen[f.Name] != 1 {
			t.Errorf("--%s is in %d --help groups, want 1", f.Name, seen[f.Name])
		}
	})

	if got := slices.Sorted(maps.Keys(inertFlagWarnings)); !slices.Equal(got, slices.Sorted(slices.Values(inertFlagNames))) {
		t.Errorf("inert flags %q, warnings for %q", inertFlagNames, got)
	}
	for _, n := range inertFlagNames {
		if f := fs.Lookup(n); f == nil || !strings.HasPrefix(inertFlagWarnings[n], "-"+f.Shorthand+": ") {
			t.Errorf("the warning of --%s does not start with its short flag: %q", n, inertFlagWarnings[n])
		}
	}

	var usage strings.Builder
	fs.VisitAll(func(f *pflag.Flag) { usage.WriteString(f.Usage + "\n") })
	for k, why := range extendedKeys {
		if why == "" && !strings.Contains(usage.String(), k) {
			t.Errorf("-o %s is acted on, but no flag's help names it", k)
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
	} {
		if got := settingOf(tc.args, tc.setting); got != tc.want {
			t.Errorf("%s: stats settings %s %q, want %q", tc.name, tc.setting, got, tc.want)
		}
	}
}
