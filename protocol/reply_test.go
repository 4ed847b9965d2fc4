package protocol

import (
	"fmt"
	"math"
	"testing"
)

func TestAppendReplies(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"value", AppendValue(nil, []byte("k"), 5, []byte("hello")), "VALUE k 5 5\r\nhello\r\n"},
		{"empty value", AppendValue(nil, []byte("k"), 0, nil), "VALUE k 0 0\r\n\r\n"},
		{"max flags", AppendValue(nil, []byte("k"), math.MaxUint32, []byte("x")), "VALUE k 4294967295 1\r\nx\r\n"},
		{"value cas", AppendValueCAS(nil, []byte("key"), 0, []byte("ab"), math.MaxUint64), "VALUE key 0 2 18446744073709551615\r\nab\r\n"},
		{"header", AppendValueHeader(nil, []byte("k"), 1, 1048576, 9, false), "VALUE k 1 1048576\r\n"},
		{"header cas", AppendValueHeader(nil, []byte("k"), 1, 0, 9, true), "VALUE k 1 0 9\r\n"},
		{"appends to dst", AppendValue([]byte(RespStored), []byte("k"), 0, []byte("x")), "STORED\r\nVALUE k 0 1\r\nx\r\n"},
		{"uint", AppendUint(nil, 18446744073709551615), "18446744073709551615\r\n"},
		{"uint zero", AppendUint(nil, 0), "0\r\n"},
		{"version", AppendVersion(nil, "1.6.18"), "VERSION 1.6.18\r\n"},
		{"stat string", AppendStatString(nil, "version", "1.6.18"), "STAT version 1.6.18\r\n"},
		{"stat uint", AppendStatUint(nil, "curr_items", 42), "STAT curr_items 42\r\n"},
		{"stat int", AppendStatInt(nil, "delta", -3), "STAT delta -3\r\n"},
		{"error", AppendError(nil, errBadFormat), "CLIENT_ERROR bad command line format\r\n"},
		{"error without reply", AppendError(nil, errLineTooLong), ""},
		{"line", AppendLine(nil, ReplyTooManyConns), "ERROR Too many open connections\r\n"},
	}
	for _, tc := range cases {
		if string(tc.got) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestAppendNoAllocs(t *testing.T) {
	dst := make([]byte, 0, 4096)
	key, data := []byte("user:1234"), []byte("some value bytes")
	allocs := testing.AllocsPerRun(100, func() {
		b := AppendValue(dst[:0], key, 7, data)
		b = AppendValueCAS(b, key, 7, data, 123456789)
		b = AppendUint(b, 99)
		b = AppendStatUint(b, "get_hits", 1<<40)
		b = AppendStatInt(b, "x", -1)
		b = AppendError(b, errTooLarge)
		_ = append(b, RespEnd...)
	})
	if allocs != 0 {
		t.Errorf("%v allocs per run", allocs)
	}
}

// TestErrorValues pins the shared errors the parser returns: the exact text
// memcached sends and its noreply and close behaviour.
func TestErrorValues(t *testing.T) {
	cases := []struct {
		err    *Error
		reply  string
		kind   ErrorKind
		silent bool
		close  bool
	}{
		{errUnknown, "ERROR", ErrGeneric, true, false},
		{errBadFormat, "CLIENT_ERROR bad command line format", ErrGeneric, true, false},
		{errBadDataChunk, "CLIENT_ERROR bad data chunk", ErrBadChunk, true, false},
		{errTooLarge, "SERVER_ERROR object too large for cache", ErrTooLarge, true, false},
		{errInvalidExptime, "CLIENT_ERROR invalid exptime argument", ErrGeneric, true, false},
		{errInvalidDelta, "CLIENT_ERROR invalid numeric delta argument", ErrGeneric, true, false},
		{errDeleteUsage, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]", ErrGeneric, true, false},
		{errLineTooLong, "", ErrLineTooLong, false, true},
	}
	for _, tc := range cases {
		e := tc.err
		if e.Reply != tc.reply || e.Kind != tc.kind || e.Silent != tc.silent || e.Close != tc.close {
			t.Errorf("%+v, want reply %q kind %d silent %v close %v", *e, tc.reply, tc.kind, tc.silent, tc.close)
		}
	}
}

func BenchmarkAppendValue(b *testing.B) {
	dst := make([]byte, 0, 256)
	key, data := []byte("user:1234567"), make([]byte, 32)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendValue(dst[:0], key, 7, data)
	}
}

// BenchmarkAppendValueSprintf is the baseline: the same reply with fmt.
func BenchmarkAppendValueSprintf(b *testing.B) {
	dst := make([]byte, 0, 256)
	key, data := []byte("user:1234567"), make([]byte, 32)
	b.ReportAllocs()
	for b.Loop() {
		dst = fmt.Appendf(dst[:0], "VALUE %s %d %d\r\n%s\r\n", key, 7, len(data), data)
	}
}
