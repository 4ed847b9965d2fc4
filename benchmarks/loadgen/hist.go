package loadgen

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Op is a kind of request.
type Op uint8

// Request kinds.
const (
	OpGet Op = iota
	OpSet
	numOps
)

var opNames = [numOps]string{"get", "set"}

// String returns "get" or "set".
func (o Op) String() string { return opNames[o] }

// Latencies are recorded in nanoseconds from 1 ns to histMax with 3
// significant digits (0.1% resolution); slower replies are clamped to histMax.
const (
	histMax  = int64(60 * time.Second)
	histSig  = 3
	localCap = 512 // samples a worker buffers before taking the lock
)

// Recorder collects latencies from many workers into one histogram per Op.
// A histogram at this precision is ~200 KB, so workers do not own one each:
// they buffer samples in a Samples and flush them under the Recorder's lock.
type Recorder struct {
	mu   sync.Mutex
	hist [numOps]*hdrhistogram.Histogram // guarded by mu
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	r := &Recorder{}
	for i := range r.hist {
		r.hist[i] = hdrhistogram.New(1, histMax, histSig)
	}
	return r
}

// Samples is a worker-local buffer of latencies. Not safe for concurrent use.
type Samples struct {
	rec *Recorder
	buf [numOps][]int64
}

// Samples returns a new worker-local buffer that flushes into r.
func (r *Recorder) Samples() *Samples {
	s := &Samples{rec: r}
	for i := range s.buf {
		s.buf[i] = make([]int64, 0, localCap)
	}
	return s
}

// Add records one latency for op.
func (s *Samples) Add(op Op, d time.Duration) {
	s.buf[op] = append(s.buf[op], int64(d))
	if len(s.buf[op]) == cap(s.buf[op]) {
		s.Flush()
	}
}

// Flush moves the buffered samples into the Recorder.
func (s *Samples) Flush() {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	for op := range s.buf {
		h := s.rec.hist[op]
		for _, v := range s.buf[op] {
			_ = h.RecordValue(min(max(v, 1), histMax))
		}
		s.buf[op] = s.buf[op][:0]
	}
}

// Summary is a latency summary in microseconds.
type Summary struct {
	Count  int64   `json:"count"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
}

// Summarize returns the summary of h (values in nanoseconds).
func Summarize(h *hdrhistogram.Histogram) Summary {
	if h.TotalCount() == 0 {
		return Summary{}
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return Summary{
		Count:  h.TotalCount(),
		MeanUs: h.Mean() / 1e3,
		P50Us:  us(h.ValueAtQuantile(50)),
		P90Us:  us(h.ValueAtQuantile(90)),
		P99Us:  us(h.ValueAtQuantile(99)),
		P999Us: us(h.ValueAtQuantile(99.9)),
		MaxUs:  us(h.Max()),
	}
}

// Summary returns the summary of op. Flush every Samples first.
func (r *Recorder) Summary(op Op) Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Summarize(r.hist[op])
}

// Histogram returns a copy of op's histogram. Flush every Samples first.
func (r *Recorder) Histogram(op Op) *hdrhistogram.Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hist[op].Clone()
}
