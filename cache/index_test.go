package cache

import (
	"math/rand/v2"
	"testing"
)

func TestIndexModel(t *testing.T) {
	var x index
	m := map[uint64]uint32{}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 200000 {
		h := rng.Uint64N(3000) * 0x9E3779B97F4A7C15
		if _, ok := m[h]; ok && rng.IntN(2) == 0 {
			x.remove(h, m[h])
			delete(m, h)
		} else if !ok {
			v := uint32(rng.IntN(1 << 20))
			x.insert(h, v)
			m[h] = v
		}
		if step%1000 == 0 {
			if x.n != len(m) {
				t.Fatalf("n %d vs %d", x.n, len(m))
			}
			for k, v := range m {
				found := false
				for i, j := x.find(k, -1); i >= 0; i, j = x.find(k, i) {
					if j == v {
						found = true
					}
				}
				if !found {
					t.Fatalf("step %d: lost %x", step, k)
				}
			}
		}
	}
}
