package trace

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Spec
		bad  bool
	}{
		{name: "file", in: "/work/shared/traces/OLTP.lis.zst", want: Spec{Path: "/work/shared/traces/OLTP.lis.zst"}},
		{name: "zipf", in: "zipf:0.99:1000000:4000000", want: Spec{Theta: 0.99, Keys: 1_000_000, Requests: 4_000_000, Seed: 1}},
		{name: "zipf with seed", in: "zipf:1.2:10:20:7", want: Spec{Theta: 1.2, Keys: 10, Requests: 20, Seed: 7}},
		{name: "empty", in: "", bad: true},
		{name: "zipf missing field", in: "zipf:0.99:1000", bad: true},
		{name: "zipf theta zero", in: "zipf:0:10:10", bad: true},
		{name: "zipf theta NaN", in: "zipf:NaN:10:10", bad: true},
		{name: "zipf no keys", in: "zipf:0.99:0:10", bad: true},
		{name: "zipf no requests", in: "zipf:0.99:10:0", bad: true},
		{name: "zipf bad seed", in: "zipf:0.99:10:10:-1", bad: true},
		{name: "zipf extra field", in: "zipf:0.99:10:10:1:2", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSpec(tc.in)
			if tc.bad {
				if !errors.Is(err, ErrSpec) {
					t.Errorf("ParseSpec(%q) = %+v, %v; want ErrSpec", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if back, err := ParseSpec(got.String()); err != nil || back != got {
				t.Errorf("String %q reparses as %+v, %v", got.String(), back, err)
			}
		})
	}
}

func drain(t *testing.T, s Spec) []uint64 {
	t.Helper()
	st, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var keys []uint64
	for {
		k, err := st.Next()
		if err == io.EOF {
			return keys
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
}

// TestOpenFiles: a plain and a zstd-compressed trace yield the same keys,
// and Count agrees with them.
func TestOpenFiles(t *testing.T) {
	const text = "10 2 0 0\n3 1 0 1\n10 1 0 2\n"
	want := []uint64{10, 11, 3, 10}
	dir := t.TempDir()
	plain := filepath.Join(dir, "t.lis")
	if err := os.WriteFile(plain, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zst := filepath.Join(dir, "t.lis.zst")
	if err := os.WriteFile(zst, enc.EncodeAll([]byte(text), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, zst} {
		s := Spec{Path: p}
		if got := drain(t, s); !slices.Equal(got, want) {
			t.Errorf("%s: keys %v, want %v", p, got, want)
		}
		if n, err := s.Count(); err != nil || n != int64(len(want)) {
			t.Errorf("%s: Count = %d, %v; want %d", p, n, err, len(want))
		}
	}
	if _, err := (Spec{Path: filepath.Join(dir, "missing")}).Open(); err == nil {
		t.Error("missing file: no error")
	}
	bad := filepath.Join(dir, "bad.lis")
	if err := os.WriteFile(bad, []byte("1 1 0 0\n1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (Spec{Path: bad}).Count(); !errors.Is(err, ErrMalformed) {
		t.Errorf("Count of a malformed trace: %v, want ErrMalformed", err)
	}
}

// TestZipfStream: Requests keys within [0, Keys), the same for the same
// seed, skewed towards key 0.
func TestZipfStream(t *testing.T) {
	s := Spec{Theta: 0.99, Keys: 1000, Requests: 20_000, Seed: 3}
	a, b := drain(t, s), drain(t, s)
	if len(a) != 20_000 || !slices.Equal(a, b) {
		t.Fatalf("%d keys, same for the same seed: %v", len(a), slices.Equal(a, b))
	}
	var zero, last int
	for _, k := range a {
		if k >= 1000 {
			t.Fatalf("key %d outside [0, 1000)", k)
		}
		switch k {
		case 0:
			zero++
		case 999:
			last++
		}
	}
	if zero <= 10*last {
		t.Errorf("key 0 drawn %d times, key 999 %d times: not Zipf-skewed", zero, last)
	}
}
