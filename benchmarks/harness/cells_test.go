package harness

import (
	"strings"
	"testing"
)

func TestCells(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"thousands 0", thousands(0), "0"},
		{"thousands 999", thousands(999), "999"},
		{"thousands 1000", thousands(1000), "1,000"},
		{"thousands big", thousands(1234567.4), "1,234,567"},
		{"thousands negative", thousands(-1234), "-1,234"},
		{"rate none", rate(Stat{}), "–"},
		{"rate one", rate(Stat{Median: 5000, Min: 5000, Max: 5000, N: 1}), "5,000"},
		{"rate spread", rate(Stat{Median: 100, Min: 90, Max: 110, N: 3}), "100 ±10%"},
		{"ratio", ratio(1.234), "1.23x"},
		{"ratio none", ratio(0), "–"},
		{"us small", us(12.34), "12.3"},
		{"us big", us(1234.5), "1,235"},
		{"pct", pct(Stat{Median: 99.6, N: 1}), "100%"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestIntList(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []int
		want string
	}{
		{"empty", nil, ""},
		{"one", []int{4}, "4"},
		{"two", []int{1, 2}, "1 and 2"},
		{"gaps", []int{1, 2, 4, 6, 8, 10}, "1, 2, 4, 6, 8 and 10"},
		{"run", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, "1 to 10"},
		{"thousands", []int{50, 1000}, "50 and 1,000"},
	} {
		if got := intList(tc.in); got != tc.want {
			t.Errorf("%s: intList(%v) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestTitlesSayWhatRuns: a --quick heading names what --quick runs, not the
// default profile's counts.
func TestTitlesSayWhatRuns(t *testing.T) {
	want := map[string]string{
		"threads":  "2,000 sets then 2,000 gets over 1 and 2 client threads",
		"sizes":    "200 values stored then fetched at 3 sizes",
		"single":   "2,000 requests",
		"many":     "50 and 100 connections",
		"fairness": "1 and 200 connections",
		"hitratio": "100,000 keys at `-m 2`",
		"memory":   "50,000 items",
	}
	for _, sc := range Scenarios(Quick) {
		if w, ok := want[sc.Name]; ok && !strings.Contains(sc.Title, w) {
			t.Errorf("%s: quick title %q, want it to say %q", sc.Name, sc.Title, w)
		}
	}
	for _, sc := range Scenarios(Default) {
		if sc.Name == "threads" && !strings.Contains(sc.Title, "1, 2, 4, 6, 8 and 10 client threads") {
			t.Errorf("threads: default title %q", sc.Title)
		}
	}
}
