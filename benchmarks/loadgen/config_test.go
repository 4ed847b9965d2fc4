package loadgen

import (
	"errors"
	"slices"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		ok     bool
	}{
		{"default", func(*Config) {}, true},
		{"duration only", func(c *Config) { c.Requests, c.Duration = 0, 1e9 }, true},
		{"unbounded", func(c *Config) { c.Requests, c.Duration = 0, 0 }, false},
		{"no hard cap", func(c *Config) { c.HardCap = 0 }, false},
		{"no conns", func(c *Config) { c.Conns = 0 }, false},
		{"no depth", func(c *Config) { c.Depth = 0 }, false},
		{"no keys", func(c *Config) { c.Keys = 0 }, false},
		{"no sizes", func(c *Config) { c.ValueSizes = nil }, false},
		{"negative size", func(c *Config) { c.ValueSizes = []int{-1} }, false},
		{"space in prefix", func(c *Config) { c.KeyPrefix = "a b" }, false},
		{"zero ratio", func(c *Config) { c.SetRatio, c.GetRatio = 0, 0 }, false},
		{"lookaside ignores ratio", func(c *Config) { c.Workload, c.SetRatio, c.GetRatio = LookAside, 0, 0 }, true},
		{"bad workload", func(c *Config) { c.Workload = "x" }, false},
		{"bad dist", func(c *Config) { c.Dist = "x" }, false},
		{"zipf", func(c *Config) { c.Dist = Zipfian }, true},
		{"zipf bad s", func(c *Config) { c.Dist, c.ZipfS = Zipfian, 0 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.modify(&c)
			err := c.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
		})
	}
}

func TestParseRatio(t *testing.T) {
	tests := []struct {
		in       string
		set, get int
		ok       bool
	}{
		{"1:10", 1, 10, true},
		{" 1 : 0 ", 1, 0, true},
		{"0:1", 0, 1, true},
		{"0:0", 0, 0, false},
		{"1", 0, 0, false},
		{"a:b", 0, 0, false},
		{"-1:2", 0, 0, false},
	}
	for _, tc := range tests {
		s, g, err := ParseRatio(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (s != tc.set || g != tc.get)) {
			t.Errorf("ParseRatio(%q) = %d, %d, %v; want %d, %d, ok=%v", tc.in, s, g, err, tc.set, tc.get, tc.ok)
		}
	}
}

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"32", []int{32}},
		{"2, 4,9", []int{2, 4, 9}},
		{"1k,1m", []int{1024, 1 << 20}},
		{"0", []int{0}},
		{"", nil},
		{"x", nil},
		{"-3", nil},
	}
	for _, tc := range tests {
		got, err := ParseSizes(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("ParseSizes(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
