package loadgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// Dist names a key distribution.
type Dist string

// Key distributions.
const (
	// Uniform picks every key with the same probability.
	Uniform Dist = "uniform"
	// Zipfian picks key i with probability proportional to 1/(i+1)^s.
	Zipfian Dist = "zipf"
	// Sequential gives each connection its own contiguous share of the key
	// space and walks it in order, wrapping around: with Requests equal to
	// Keys every key is used exactly once (how "N sets then N gets" classic
	// benchmarks load and read data).
	Sequential Dist = "seq"
)

// KeyGen yields key indexes in [0, n). A KeyGen is owned by one goroutine.
type KeyGen interface {
	Next() uint64
}

// AppendKey appends the key for index i: prefix followed by i in decimal.
func AppendKey(dst []byte, prefix string, i uint64) []byte {
	dst = append(dst, prefix...)
	return strconv.AppendUint(dst, i, 10)
}

type uniformGen struct {
	n uint64
	r *rand.Rand
}

func (g *uniformGen) Next() uint64 { return g.r.Uint64N(g.n) }

// NewUniform returns a uniform KeyGen over [0, n) drawing from r.
func NewUniform(n uint64, r *rand.Rand) KeyGen { return &uniformGen{n: n, r: r} }

type seqGen struct {
	lo, hi, next uint64
}

func (g *seqGen) Next() uint64 {
	v := g.next
	g.next++
	if g.next >= g.hi {
		g.next = g.lo
	}
	return v
}

// NewSequential returns the KeyGen of worker w out of workers: it walks
// [w*n/workers, (w+1)*n/workers) in order and wraps around. A worker whose
// share is empty (more workers than keys) walks key w mod n alone.
func NewSequential(n uint64, w, workers int) KeyGen {
	lo := n * uint64(w) / uint64(workers)
	hi := n * uint64(w+1) / uint64(workers)
	if hi <= lo {
		lo = uint64(w) % n
		hi = lo + 1
	}
	return &seqGen{lo: lo, hi: hi, next: lo}
}

// SeqShare returns how many of total requests worker w out of workers
// performs when the requests are split as evenly as possible.
func SeqShare(total int64, w, workers int) int64 {
	return total*int64(w+1)/int64(workers) - total*int64(w)/int64(workers)
}

// ErrZipfParam is returned for a Zipf exponent that cannot be sampled.
var ErrZipfParam = errors.New("loadgen: zipf exponent must be a finite number > 0")

// Zipf is a Zipf distribution over [0, n): key i has probability
// proportional to 1/(i+1)^s. It is read-only after NewZipf and safe to
// share; Gen makes per-goroutine generators.
//
// Sampling uses rejection-inversion (W. Hörmann and G. Derflinger,
// "Rejection-inversion to generate variates from monotone discrete
// distributions", 1996): exact for every s > 0 (math/rand/v2's Zipf needs
// s > 1, and real cache traces have s just below 1, e.g. 0.99), O(1) setup
// and O(1) expected time per sample.
type Zipf struct {
	n      uint64
	s      float64
	hX1    float64 // hIntegral(1.5) - 1
	hN     float64 // hIntegral(n + 0.5)
	accept float64 // squeeze constant
}

// NewZipf returns the Zipf distribution with exponent s over [0, n).
func NewZipf(n uint64, s float64) (*Zipf, error) {
	if n == 0 {
		return nil, errors.New("loadgen: zipf over an empty key space")
	}
	if !(s > 0) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("%w (got %v)", ErrZipfParam, s)
	}
	z := &Zipf{n: n, s: s}
	z.hX1 = z.hIntegral(1.5) - 1
	z.hN = z.hIntegral(float64(n) + 0.5)
	z.accept = 2 - z.hIntegralInv(z.hIntegral(2.5)-z.h(2))
	return z, nil
}

// h is the unnormalized density 1/x^s.
func (z *Zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

// hIntegral is an antiderivative of h: (x^(1-s) - 1) / (1-s), or log(x)
// when s = 1, computed without cancellation near s = 1.
func (z *Zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return expm1Over((1-z.s)*lx) * lx
}

// hIntegralInv is the inverse of hIntegral.
func (z *Zipf) hIntegralInv(x float64) float64 {
	t := x * (1 - z.s)
	if t < -1 {
		t = -1 // guard against rounding just below the domain
	}
	return math.Exp(log1pOver(t) * x)
}

// expm1Over returns (e^x - 1) / x, continuous at 0.
func expm1Over(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x/2*(1+x/3*(1+x/4))
}

// log1pOver returns log(1+x) / x, continuous at 0.
func log1pOver(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// Gen returns a KeyGen that samples z with randomness from r.
func (z *Zipf) Gen(r *rand.Rand) KeyGen { return &zipfGen{z: z, r: r} }

type zipfGen struct {
	z *Zipf
	r *rand.Rand
}

func (g *zipfGen) Next() uint64 {
	z := g.z
	for {
		u := z.hN + g.r.Float64()*(z.hX1-z.hN)
		x := z.hIntegralInv(u)
		k := math.Floor(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > float64(z.n) {
			k = float64(z.n)
		}
		if k-x <= z.accept || u >= z.hIntegral(k+0.5)-z.h(k) {
			return uint64(k) - 1
		}
	}
}
