package trace

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// Stream yields the keys of a trace, one per access, in order. Not safe for
// concurrent use.
type Stream interface {
	// Next returns the next access's key, or io.EOF after the last.
	Next() (uint64, error)
	// Close releases the stream's file, if any.
	Close() error
}

// ErrSpec is returned for a trace spec that names neither a file nor a
// valid zipf stream.
var ErrSpec = errors.New("trace: bad trace spec")

// Spec says where a trace's keys come from: an ARC trace file (Path, plain
// or zstd-compressed when it ends in ".zst"), or, when Path is empty, a
// synthetic Zipf stream of Requests accesses over Keys keys with exponent
// Theta, drawn from Seed.
type Spec struct {
	Path     string
	Theta    float64
	Keys     uint64
	Requests int64
	Seed     uint64
}

// zipfPrefix starts a synthetic spec: zipf:theta:keys:requests[:seed].
const zipfPrefix = "zipf:"

// ParseSpec parses "zipf:theta:keys:requests[:seed]" (e.g.
// zipf:0.99:1000000:4000000; seed 1 by default) or else takes s as the path
// of an ARC trace file.
func ParseSpec(s string) (Spec, error) {
	rest, ok := strings.CutPrefix(s, zipfPrefix)
	if !ok {
		if s == "" {
			return Spec{}, fmt.Errorf("%w: empty", ErrSpec)
		}
		return Spec{Path: s}, nil
	}
	f := strings.Split(rest, ":")
	if len(f) != 3 && len(f) != 4 {
		return Spec{}, fmt.Errorf("%w %q: want zipf:theta:keys:requests[:seed]", ErrSpec, s)
	}
	sp := Spec{Seed: 1}
	var err error
	if sp.Theta, err = strconv.ParseFloat(f[0], 64); err != nil || !(sp.Theta > 0) || sp.Theta > 100 {
		return Spec{}, fmt.Errorf("%w %q: theta must be a number in (0, 100]", ErrSpec, s)
	}
	if sp.Keys, err = strconv.ParseUint(f[1], 10, 64); err != nil || sp.Keys == 0 {
		return Spec{}, fmt.Errorf("%w %q: keys must be a positive integer", ErrSpec, s)
	}
	if sp.Requests, err = strconv.ParseInt(f[2], 10, 64); err != nil || sp.Requests <= 0 {
		return Spec{}, fmt.Errorf("%w %q: requests must be a positive integer", ErrSpec, s)
	}
	if len(f) == 4 {
		if sp.Seed, err = strconv.ParseUint(f[3], 10, 64); err != nil {
			return Spec{}, fmt.Errorf("%w %q: seed must be an unsigned integer", ErrSpec, s)
		}
	}
	return sp, nil
}

// String returns the spec in ParseSpec's form.
func (s Spec) String() string {
	if s.Path != "" {
		return s.Path
	}
	return fmt.Sprintf("%s%s:%d:%d:%d", zipfPrefix, strconv.FormatFloat(s.Theta, 'g', -1, 64), s.Keys, s.Requests, s.Seed)
}

// IsZipf reports whether the spec is a synthetic Zipf stream.
func (s Spec) IsZipf() bool { return s.Path == "" }

// Open returns a stream of the spec's keys from its beginning.
func (s Spec) Open() (Stream, error) {
	if s.IsZipf() {
		z, err := loadgen.NewZipf(s.Keys, s.Theta)
		if err != nil {
			return nil, err
		}
		return &zipfStream{g: z.Gen(rand.New(rand.NewPCG(s.Seed, 0x7a697066))), left: s.Requests}, nil
	}
	f, err := os.Open(s.Path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	var r io.Reader = f
	var dec *zstd.Decoder
	if strings.HasSuffix(s.Path, ".zst") {
		// One goroutine: the replay client shares the machine with the
		// server, and a trace decodes far faster than it replays.
		if dec, err = zstd.NewReader(f, zstd.WithDecoderConcurrency(1)); err != nil {
			f.Close()
			return nil, fmt.Errorf("trace: %s: %w", s.Path, err)
		}
		r = dec
	}
	return &fileStream{ARCReader: NewARCReader(r), f: f, dec: dec}, nil
}

// Count returns the number of accesses of the spec: Requests for a Zipf
// stream; a full read of the file otherwise (which also checks every line).
func (s Spec) Count() (int64, error) {
	if s.IsZipf() {
		return s.Requests, nil
	}
	st, err := s.Open()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	var n int64
	for {
		if _, err := st.Next(); err != nil {
			if err == io.EOF {
				return n, nil
			}
			return n, fmt.Errorf("trace: %s: %w", s.Path, err)
		}
		n++
	}
}

type fileStream struct {
	*ARCReader
	f   *os.File
	dec *zstd.Decoder
}

func (s *fileStream) Close() error {
	if s.dec != nil {
		s.dec.Close()
	}
	return s.f.Close()
}

type zipfStream struct {
	g    loadgen.KeyGen
	left int64
}

func (s *zipfStream) Next() (uint64, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	s.left--
	return s.g.Next(), nil
}

func (s *zipfStream) Close() error { return nil }
