package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/benchmarks/internal/mctest"
	"github.com/tandemcache/tandem/benchmarks/loadgen"
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
		{"help", []string{"--help"}, 0, "-duration"},
		{"short help", []string{"-h"}, 0, "usage: mcbench"},
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

// TestDurationAloneBoundsTheRun: -duration without -n runs for the
// duration, not until the default request count.
func TestDurationAloneBoundsTheRun(t *testing.T) {
	addr := mctest.Memcached(t)
	for _, tc := range []struct {
		name     string
		args     []string
		requests int64
	}{
		{"duration alone", []string{"-duration", "300ms"}, 0},
		{"duration and n", []string{"-duration", "300ms", "-n", "50"}, 50},
		{"neither", nil, 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jsonPath := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"-addr", addr, "-c", "1", "-keys", "100", "-json", jsonPath, "-progress=false"}, tc.args...)
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			b, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			var res loadgen.Result
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			if res.Config.Requests != tc.requests {
				t.Errorf("%q: request bound %d, want %d", tc.args, res.Config.Requests, tc.requests)
			}
			if tc.requests == 0 && res.ElapsedSec < 0.3 {
				t.Errorf("%q: stopped after %.3fs, before the duration", tc.args, res.ElapsedSec)
			}
		})
	}
}
