package harness

import (
	"errors"
	"testing"
)

// linearPeak models a server whose peak RSS is base + perMB x -m.
func linearPeak(base, perMB float64, calls *[]int) func(int) (float64, error) {
	return func(m int) (float64, error) {
		*calls = append(*calls, m)
		return base + perMB*float64(m), nil
	}
}

func TestSearchEqualRSS(t *testing.T) {
	tests := []struct {
		name         string
		budget       float64
		start, maxMB int
		base, perMB  float64
		want         int
		reached      bool
		maxTrials    int
	}{
		// tandem-like: 13 MB idle + 4.2 MB per -m MB against memcached's
		// 21.7 MB at -m 16: the largest -m within is 2.
		{"below start", 21.7, 16, 1024, 13, 4.2, 2, true, 6},
		{"exactly at a trial", 30, 16, 1024, 10, 2, 10, true, 8},
		{"above start", 100, 16, 1024, 5, 1, 95, true, 10},
		{"capped by max", 1e9, 16, 64, 5, 1, 64, true, 4},
		{"out of reach", 10, 16, 1024, 13, 4.2, 1, false, 6},
		{"start beyond max", 100, 4096, 256, 5, 1, 95, true, 10},
	}
	for _, tc := range tests {
		var calls []int
		m, reached, trials, err := searchEqualRSS(tc.budget, tc.start, tc.maxMB, linearPeak(tc.base, tc.perMB, &calls))
		if err != nil || m != tc.want || reached != tc.reached {
			t.Errorf("%s: m %d reached %v err %v; want %d %v (trials %v)", tc.name, m, reached, err, tc.want, tc.reached, trials)
		}
		if len(trials) != len(calls) || len(trials) > tc.maxTrials {
			t.Errorf("%s: %d trials (%v), want at most %d, each -m once", tc.name, len(trials), calls, tc.maxTrials)
		}
		seen := map[int]bool{}
		for _, c := range calls {
			if seen[c] {
				t.Errorf("%s: -m %d measured twice: %v", tc.name, c, calls)
			}
			seen[c] = true
		}
		// The answer is right: within at m, over at m+1 (when m+1 is allowed).
		if tc.reached && m < tc.maxMB && tc.base+tc.perMB*float64(m+1) <= tc.budget {
			t.Errorf("%s: m+1 = %d is still within the budget", tc.name, m+1)
		}
	}
}

func TestSearchEqualRSSErrors(t *testing.T) {
	boom := errors.New("server died")
	n := 0
	_, _, trials, err := searchEqualRSS(20, 16, 1024, func(m int) (float64, error) {
		if n++; n == 3 {
			return 0, boom
		}
		return float64(m) * 4, nil
	})
	if !errors.Is(err, boom) || len(trials) != 2 {
		t.Errorf("err %v after %d trials, want the measuring error after 2", err, len(trials))
	}
	// A peak that does not grow with -m cannot run away: the trial budget stops it.
	_, _, trials, err = searchEqualRSS(20, 16, 1<<30, func(int) (float64, error) { return 1, nil })
	if !errors.Is(err, errSearchBudget) || len(trials) != maxRSSTrials {
		t.Errorf("flat peak: err %v after %d trials", err, len(trials))
	}
}
