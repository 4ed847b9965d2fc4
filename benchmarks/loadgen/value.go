package loadgen

import (
	"bytes"
	"errors"
	"math/rand/v2"
)

// patternSlack is the number of distinct start offsets into the shared
// pattern: two keys share a value only if they pick the same offset and size.
const patternSlack = 1 << 16

// Values derives the value of every key deterministically from its index, so
// any reader can verify any value without coordination (content = f(key)):
// the size is one of the configured sizes, picked by a hash of the key
// index; the content is a window of a fixed pseudo-random pattern at an
// offset picked by the same hash, with its first 8 bytes XORed with another
// hash of the key. Values are binary ("\r\n" and NUL bytes occur on purpose).
//
// Values is read-only after NewValues and safe for concurrent use.
type Values struct {
	sizes   []int
	pattern []byte
}

// NewValues returns the value source for the given sizes (each >= 0; at
// least one). seed changes every value.
func NewValues(sizes []int, seed uint64) (*Values, error) {
	if len(sizes) == 0 {
		return nil, errors.New("loadgen: no value sizes")
	}
	maxSize := 0
	for _, s := range sizes {
		if s < 0 {
			return nil, errors.New("loadgen: negative value size")
		}
		maxSize = max(maxSize, s)
	}
	p := make([]byte, maxSize+patternSlack)
	r := rand.New(rand.NewPCG(seed, 0x76616c756573))
	for i := 0; i < len(p); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < len(p); j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return &Values{sizes: append([]int(nil), sizes...), pattern: p}, nil
}

// mix64 is the splitmix64 finalizer: a cheap, well-spread hash of i.
func mix64(i uint64) uint64 {
	i += 0x9e3779b97f4a7c15
	i = (i ^ (i >> 30)) * 0xbf58476d1ce4e5b9
	i = (i ^ (i >> 27)) * 0x94d049bb133111eb
	return i ^ (i >> 31)
}

// Size returns the size of key i's value.
func (v *Values) Size(i uint64) int {
	if len(v.sizes) == 1 {
		return v.sizes[0]
	}
	return v.sizes[mix64(i)%uint64(len(v.sizes))]
}

// tagLen is how many leading value bytes are XORed with a hash of the key,
// so that values of equal size differ even when their windows coincide.
const tagLen = 8

// window returns the pattern window and the tag of key i.
func (v *Values) window(i uint64) (w []byte, tag uint64) {
	h := mix64(i)
	off := int((h >> 32) % patternSlack)
	n := v.Size(i)
	return v.pattern[off : off+n], mix64(h)
}

// AppendValue appends key i's value to dst.
func (v *Values) AppendValue(dst []byte, i uint64) []byte {
	w, tag := v.window(i)
	start := len(dst)
	dst = append(dst, w...)
	for j := 0; j < tagLen && j < len(w); j++ {
		dst[start+j] ^= byte(tag >> (8 * j))
	}
	return dst
}

// Verify reports whether got is exactly key i's value. It does not allocate.
func (v *Values) Verify(i uint64, got []byte) bool {
	w, tag := v.window(i)
	if len(got) != len(w) {
		return false
	}
	k := min(tagLen, len(w))
	for j := range k {
		if got[j] != w[j]^byte(tag>>(8*j)) {
			return false
		}
	}
	return bytes.Equal(got[k:], w[k:])
}
