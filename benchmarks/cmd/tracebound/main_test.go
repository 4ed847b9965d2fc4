package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	arc := filepath.Join(t.TempDir(), "t.lis")
	// Blocks 1-3, then 1-2 again, then 9: six accesses over four keys.
	if err := os.WriteFile(arc, []byte("1 3 0 0\n1 2 0 1\n9 1 0 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string // lines of the output
	}{
		{"arc file", []string{"--trace", arc, "--items", "2,4", "--policies", "lru,min"}, 0,
			[]string{"6 accesses, warm-up 0", "| 2 | lru | 0.0000 | 0.0000 |", "| 2 | min | 0.3333 | 0.3333 |", "| 4 | lru | 0.3333 | 0.3333 |"}},
		{"warm-up", []string{"--trace", arc, "--items", "4", "--policies", "arc", "--warmup", "3"}, 0,
			[]string{"| 4 | arc | 0.3333 | 0.6667 |"}},
		{"zipf", []string{"--trace", "zipf:0.99:100:1000", "--items", "10"}, 0, []string{"| 10 | arc |"}},
		{"no items", []string{"--trace", arc}, 2, nil},
		{"bad items", []string{"--trace", arc, "--items", "0"}, 2, nil},
		{"no trace", []string{"--items", "4"}, 2, nil},
		{"unknown policy", []string{"--trace", arc, "--items", "4", "--policies", "fifo"}, 2, nil},
		{"missing file", []string{"--trace", filepath.Join(t.TempDir(), "none"), "--items", "4"}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Fatalf("run %q: exit %d, want %d; stderr %s", tt.args, code, tt.code, errOut.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("run %q: output lacks %q:\n%s", tt.args, w, out.String())
				}
			}
		})
	}
}
