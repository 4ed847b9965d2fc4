package loadgen

import (
	"math"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestSummarize(t *testing.T) {
	h := hdrhistogram.New(1, histMax, histSig)
	for i := int64(1); i <= 1000; i++ {
		if err := h.RecordValue(i * 1000); err != nil { // 1..1000 us
			t.Fatal(err)
		}
	}
	s := Summarize(h)
	tests := []struct {
		name      string
		got, want float64
	}{
		{"count", float64(s.Count), 1000},
		{"mean", s.MeanUs, 500.5},
		{"p50", s.P50Us, 500},
		{"p90", s.P90Us, 900},
		{"p99", s.P99Us, 990},
		{"p99.9", s.P999Us, 999},
		{"max", s.MaxUs, 1000},
	}
	for _, tc := range tests {
		// 3 significant digits: values are exact to within 0.1%.
		if math.Abs(tc.got-tc.want) > tc.want*0.002 {
			t.Errorf("%s = %v, want %v (+-0.2%%)", tc.name, tc.got, tc.want)
		}
	}
	if got := Summarize(hdrhistogram.New(1, histMax, histSig)); got != (Summary{}) {
		t.Errorf("empty histogram summary = %+v, want zero", got)
	}
}

func TestRecorderSamples(t *testing.T) {
	r := NewRecorder()
	a, b := r.Samples(), r.Samples()
	for i := range 3 * localCap { // forces automatic flushes
		a.Add(OpGet, time.Duration(i+1)*time.Microsecond)
	}
	b.Add(OpSet, 2*time.Hour) // clamped to histMax, not dropped
	b.Add(OpSet, 0)           // clamped to 1 ns
	a.Flush()
	b.Flush()
	if got := r.Summary(OpGet).Count; got != 3*localCap {
		t.Errorf("get count = %d, want %d", got, 3*localCap)
	}
	set := r.Summary(OpSet)
	if set.Count != 2 {
		t.Errorf("set count = %d, want 2", set.Count)
	}
	if want := float64(histMax) / 1e3; math.Abs(set.MaxUs-want) > want*0.001 {
		t.Errorf("set max = %v us, want ~%v (clamped)", set.MaxUs, want)
	}
	if h := r.Histogram(OpGet); h.TotalCount() != 3*localCap {
		t.Errorf("histogram copy count = %d", h.TotalCount())
	}
}

func BenchmarkSamplesAdd(b *testing.B) {
	s := NewRecorder().Samples()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Add(OpGet, time.Duration(i&0xffff)*time.Microsecond)
	}
}
