package loadgen

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestAppendKey(t *testing.T) {
	if got := string(AppendKey([]byte("x"), "key:", 42)); got != "xkey:42" {
		t.Errorf("AppendKey = %q, want %q", got, "xkey:42")
	}
}

func TestUniformRange(t *testing.T) {
	g := NewUniform(10, rand.New(rand.NewPCG(1, 2)))
	var seen [10]int
	for range 10000 {
		k := g.Next()
		if k >= 10 {
			t.Fatalf("key %d out of [0,10)", k)
		}
		seen[k]++
	}
	for i, n := range seen {
		if n < 800 || n > 1200 {
			t.Errorf("key %d drawn %d times of 10000, want ~1000", i, n)
		}
	}
}

func TestSequentialCoversEveryKeyOnce(t *testing.T) {
	tests := []struct {
		name     string
		keys     uint64
		workers  int
		requests int64
	}{
		{"even", 1000, 4, 1000},
		{"uneven", 1001, 7, 1001},
		{"one worker", 10, 1, 10},
		{"more workers than keys", 3, 5, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			count := make(map[uint64]int)
			var total int64
			for w := range tc.workers {
				share := SeqShare(tc.requests, w, tc.workers)
				total += share
				g := NewSequential(tc.keys, w, tc.workers)
				for range share {
					count[g.Next()]++
				}
			}
			if total != tc.requests {
				t.Errorf("shares sum to %d, want %d", total, tc.requests)
			}
			for k := range tc.keys {
				if count[k] != 1 {
					t.Errorf("key %d used %d times, want 1", k, count[k])
				}
			}
		})
	}
}

func TestSequentialWraps(t *testing.T) {
	g := NewSequential(4, 1, 2) // share [2,4)
	var got []uint64
	for range 5 {
		got = append(got, g.Next())
	}
	want := []uint64{2, 3, 2, 3, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sequence = %v, want %v", got, want)
		}
	}
}

// zipfFreq samples g and returns the observed frequency of each rank.
func zipfFreq(t *testing.T, z *Zipf, n uint64, draws int) []float64 {
	t.Helper()
	g := z.Gen(rand.New(rand.NewPCG(7, 7)))
	f := make([]float64, n)
	for range draws {
		k := g.Next()
		if k >= n {
			t.Fatalf("key %d out of [0,%d)", k, n)
		}
		f[k]++
	}
	for i := range f {
		f[i] /= float64(draws)
	}
	return f
}

func TestZipf(t *testing.T) {
	for _, s := range []float64{0.5, 0.99, 1, 1.2} {
		const n, draws = 1000, 200000
		z, err := NewZipf(n, s)
		if err != nil {
			t.Fatal(err)
		}
		f := zipfFreq(t, z, n, draws)
		var zeta float64
		for i := 1; i <= n; i++ {
			zeta += math.Pow(float64(i), -s)
		}
		// The head ranks must follow 1/(i+1)^s / zeta closely.
		for i := range 5 {
			want := math.Pow(float64(i+1), -s) / zeta
			if math.Abs(f[i]-want) > 0.03*want+0.001 {
				t.Errorf("s=%v: P(rank %d) = %.4f, want %.4f", s, i, f[i], want)
			}
		}
		if !(f[0] > f[1] && f[1] > f[9] && f[9] > f[500]) {
			t.Errorf("s=%v: frequencies not decreasing: %v %v %v %v", s, f[0], f[1], f[9], f[500])
		}
	}
}

func TestZipfParams(t *testing.T) {
	for _, s := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := NewZipf(100, s); !errors.Is(err, ErrZipfParam) {
			t.Errorf("NewZipf(100, %v) error = %v, want ErrZipfParam", s, err)
		}
	}
	if _, err := NewZipf(0, 0.9); err == nil {
		t.Error("NewZipf over 0 keys: want an error")
	}
	z, err := NewZipf(1, 0.99) // a single key is always key 0
	if err != nil {
		t.Fatal(err)
	}
	g := z.Gen(rand.New(rand.NewPCG(1, 1)))
	for range 100 {
		if k := g.Next(); k != 0 {
			t.Fatalf("single-key zipf gave %d", k)
		}
	}
}

func BenchmarkZipfNext(b *testing.B) {
	z, err := NewZipf(1_000_000, 0.99)
	if err != nil {
		b.Fatal(err)
	}
	g := z.Gen(rand.New(rand.NewPCG(1, 1)))
	b.ReportAllocs()
	for b.Loop() {
		g.Next()
	}
}
