package loadgen

import (
	"bytes"
	"slices"
	"testing"
)

func TestValuesDeterministicAndVerifiable(t *testing.T) {
	sizes := []int{0, 2, 81, 6561}
	v1, err := NewValues(sizes, 1)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := NewValues(sizes, 1)
	other, _ := NewValues(sizes, 2)
	used := map[int]bool{}
	for i := range uint64(1000) {
		a := v1.AppendValue(nil, i)
		if !bytes.Equal(a, v2.AppendValue(nil, i)) {
			t.Fatalf("key %d: same seed, different values", i)
		}
		if !slices.Contains(sizes, len(a)) || len(a) != v1.Size(i) {
			t.Fatalf("key %d: size %d not in %v or != Size %d", i, len(a), sizes, v1.Size(i))
		}
		used[len(a)] = true
		if !v1.Verify(i, a) {
			t.Fatalf("key %d: own value does not verify", i)
		}
		if len(a) > 0 {
			bad := bytes.Clone(a)
			bad[len(bad)/2] ^= 1
			if v1.Verify(i, bad) {
				t.Fatalf("key %d: flipped byte verifies", i)
			}
			if v1.Verify(i, a[:len(a)-1]) {
				t.Fatalf("key %d: truncated value verifies", i)
			}
		}
		if len(a) >= 81 && bytes.Equal(a, other.AppendValue(nil, i)) {
			t.Fatalf("key %d: different seeds give the same value", i)
		}
	}
	if len(used) != len(sizes) {
		t.Errorf("sizes used %v, want all of %v", used, sizes)
	}
}

func TestValuesDifferAcrossKeys(t *testing.T) {
	v, _ := NewValues([]int{8}, 1)
	seen := map[string]uint64{}
	for i := range uint64(200000) {
		s := string(v.AppendValue(nil, i))
		if j, ok := seen[s]; ok {
			t.Fatalf("keys %d and %d share a value", j, i)
		}
		seen[s] = i
	}
}

func TestNewValuesErrors(t *testing.T) {
	if _, err := NewValues(nil, 1); err == nil {
		t.Error("no sizes: want error")
	}
	if _, err := NewValues([]int{-1}, 1); err == nil {
		t.Error("negative size: want error")
	}
}

func TestAppendValueAppends(t *testing.T) {
	v, _ := NewValues([]int{16}, 1)
	got := v.AppendValue([]byte("prefix"), 3)
	if string(got[:6]) != "prefix" || !v.Verify(3, got[6:]) {
		t.Errorf("AppendValue did not append a verifiable value: %q", got)
	}
}

func BenchmarkVerify(b *testing.B) {
	v, _ := NewValues([]int{32}, 1)
	val := v.AppendValue(nil, 5)
	b.ReportAllocs()
	for b.Loop() {
		if !v.Verify(5, val) {
			b.Fatal("does not verify")
		}
	}
}
