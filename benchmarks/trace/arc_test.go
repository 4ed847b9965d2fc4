package trace

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseARCLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Request
		bad  bool // want an error wrapping ErrMalformed
	}{
		{name: "one block", line: "1 1 0 0", want: Request{1, 1}},
		{name: "published trace line", line: "186880 1 0 914144", want: Request{186880, 1}},
		{name: "several blocks", line: "4096 8 0 17", want: Request{4096, 8}},
		{name: "tabs and runs of spaces", line: "7\t2  0\t\t3", want: Request{7, 2}},
		{name: "leading and trailing space", line: "  7 2 0 3  ", want: Request{7, 2}},
		{name: "CRLF", line: "7 2 0 3\r", want: Request{7, 2}},
		{name: "ignored fields not interpreted", line: "7 2 x -y", want: Request{7, 2}},
		{name: "block 0", line: "0 1 0 0", want: Request{0, 1}},
		{name: "largest block", line: "18446744073709551615 1 0 0", want: Request{1<<64 - 1, 1}},
		{name: "largest count", line: fmt.Sprintf("0 %d 0 0", MaxCount), want: Request{0, MaxCount}},
		{name: "blank", line: "", want: Request{}},
		{name: "only spaces", line: " \t ", want: Request{}},
		{name: "only CR", line: "\r", want: Request{}},

		{name: "three fields", line: "1 1 0", bad: true},
		{name: "five fields", line: "1 1 0 0 0", bad: true},
		{name: "one field", line: "17", bad: true},
		{name: "count zero", line: "1 0 0 0", bad: true},
		{name: "count too large", line: fmt.Sprintf("0 %d 0 0", MaxCount+1), bad: true},
		{name: "negative start", line: "-1 1 0 0", bad: true},
		{name: "plus sign", line: "+1 1 0 0", bad: true},
		{name: "hex start", line: "0x10 1 0 0", bad: true},
		{name: "float count", line: "1 1.5 0 0", bad: true},
		{name: "start overflows", line: "18446744073709551616 1 0 0", bad: true},
		{name: "blocks overflow", line: "18446744073709551615 2 0 0", bad: true},
		{name: "comma separated", line: "1,1,0,0", bad: true},
		{name: "comment", line: "# start count ignored reqno", bad: true},
		{name: "CR inside", line: "1 1\r 0 0", bad: true},
		{name: "NUL byte in count", line: "1 1\x00 0 0", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseARCLine([]byte(tc.line))
			if tc.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("ParseARCLine(%q) = %+v, %v; want ErrMalformed", tc.line, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseARCLine(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
			}
		})
	}
}

func TestParseARCLineDoesNotAllocate(t *testing.T) {
	line := []byte("186880 8 0 914144\r")
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseARCLine(line) }); n != 0 {
		t.Errorf("%v allocations per line, want 0", n)
	}
}

func TestARCReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []uint64
		errLine int // 0: no error; else the line named by the error
	}{
		{name: "empty", in: "", want: nil},
		{name: "one per line", in: "1 1 0 0\n2 1 0 1\n1 1 0 2\n", want: []uint64{1, 2, 1}},
		{name: "counts expand to consecutive blocks", in: "10 3 0 0\n5 2 0 1\n", want: []uint64{10, 11, 12, 5, 6}},
		{name: "no final newline", in: "1 1 0 0\n2 2 0 1", want: []uint64{1, 2, 3}},
		{name: "CRLF", in: "1 1 0 0\r\n2 1 0 1\r\n", want: []uint64{1, 2}},
		{name: "blank lines skipped", in: "\n1 1 0 0\n\n  \n2 1 0 1\n\n", want: []uint64{1, 2}},
		{name: "malformed line stops the trace", in: "1 1 0 0\n2 1 0\n3 1 0 0\n", want: []uint64{1}, errLine: 2},
		{name: "count zero", in: "1 2 0 0\n5 0 0 1\n", want: []uint64{1, 2}, errLine: 2},
		{name: "binary junk", in: "\x00\x01\x02\n", errLine: 1},
		{name: "line too long", in: "1 1 0 0\n" + strings.Repeat("1", maxLine+1) + "\n", want: []uint64{1}, errLine: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load(NewARCReader(strings.NewReader(tc.in)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("keys %v, want %v", got, tc.want)
			}
			if tc.errLine == 0 {
				if err != nil {
					t.Errorf("error %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), fmt.Sprintf("line %d", tc.errLine)) {
				t.Errorf("error %v, want ErrMalformed at line %d", err, tc.errLine)
			}
		})
	}
}

func TestARCReaderErrorIsSticky(t *testing.T) {
	r := NewARCReader(strings.NewReader("x\n1 1 0 0\n"))
	_, err1 := r.Next()
	_, err2 := r.Next()
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Errorf("errors %v then %v, want the same error twice", err1, err2)
	}
}

// FuzzParseARCLine: no input panics; an accepted line describes blocks that
// do not overflow, and formatting it back parses to the same request.
func FuzzParseARCLine(f *testing.F) {
	for _, s := range []string{"1 1 0 0", "186880 8 0 914144\r", "", " ", "1 1 0", "18446744073709551615 1 0 0", "1 0 0 0"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := ParseARCLine(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if req.Count == 0 {
			if strings.Trim(string(line), " \t\r") != "" && string(line) != "\r" {
				t.Fatalf("%q: blank, but has text", line)
			}
			return
		}
		if req.Count > MaxCount || req.Start+(req.Count-1) < req.Start {
			t.Fatalf("%q: accepted %+v", line, req)
		}
		back, err := ParseARCLine(fmt.Appendf(nil, "%d %d 0 0", req.Start, req.Count))
		if err != nil || back != req {
			t.Fatalf("%q: %+v reparses as %+v, %v", line, req, back, err)
		}
	})
}

// FuzzARCReader: a whole trace never panics and yields exactly the blocks
// its accepted lines describe, up to the first malformed one.
func FuzzARCReader(f *testing.F) {
	for _, s := range []string{"1 1 0 0\n2 3 0 1\n", "1 1 0 0\r\n\n2 1 0 1", "1 1 0\n", "\n\n", "5 2 0 0\nx y z w\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want []uint64
		lines := strings.Split(string(in), "\n")
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		wantErr := false
		for _, l := range lines {
			if len(l) > maxLine {
				wantErr = true
				break
			}
			req, err := ParseARCLine([]byte(l))
			if err != nil {
				wantErr = true
				break
			}
			for i := range min(req.Count, 1000) {
				want = append(want, req.Start+i)
			}
			if req.Count > 1000 {
				return // not expanded here; the bound keeps the fuzzer fast
			}
		}
		got, err := Load(NewARCReader(strings.NewReader(string(in))))
		if (err != nil) != wantErr || !slices.Equal(got, want) {
			t.Fatalf("%q: got %v, %v; want %v (error %v)", in, got, err, want, wantErr)
		}
	})
}
