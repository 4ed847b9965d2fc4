package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/benchmarks/internal/mctest"
)

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unbounded", []string{"-n", "0"}, 1, "bounded"},
		{"bad ratio", []string{"-ratio", "x"}, 1, "ratio"},
		{"bad size", []string{"-size", "a"}, 1, "value size"},
		{"bad dist", []string{"-dist", "x"}, 1, "distribution"},
		{"extra args", []string{"foo"}, 2, "unexpected"},
		{"unknown flag", []string{"-nope"}, 2, "not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tc.args, &out, &errb); code != tc.code || !strings.Contains(errb.String(), tc.msg) {
				t.Errorf("run(%q) = %d, stderr %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.msg)
			}
		})
	}
}

// TestAgainstMemcached runs mcbench end to end against the real memcached.
func TestAgainstMemcached(t *testing.T) {
	addr := mctest.Memcached(t)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var out, errb bytes.Buffer
	code := run([]string{"-addr", addr, "-c", "2", "-d", "4", "-n", "2000", "-keys", "500", "-preload", "-flush",
		"-workload", "lookaside", "-dist", "zipf", "-key-seed", "3", "-json", jsonPath, "-strict", "-progress=false"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "hit ratio 1.0000") || !strings.Contains(errb.String(), "preloaded 500 keys") {
		t.Errorf("preloaded look-aside run should hit every time:\n%s\n%s", out.String(), errb.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil || !strings.Contains(string(b), `"req_per_sec"`) || !strings.Contains(string(b), `"key_seed": 3`) {
		t.Errorf("json: %v\n%s", err, b)
	}
}
