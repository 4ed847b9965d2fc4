package harness

import "testing"

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
