package handler

import (
	"testing"

	"github.com/tandemcache/tandem/protocol"
)

// benchExec parses and executes input repeatedly on one session, the way an
// event loop does for a read of pipelined requests.
func benchExec(b *testing.B, setup, input string) {
	h, _ := newTestHandler(&testing.T{}, nil)
	s := h.NewSession("")
	run(s, setup)
	buf := []byte(input)
	var r protocol.Request
	out := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rest := buf
		out = out[:0]
		for len(rest) > 0 {
			n := s.Next(rest, &r)
			rest = rest[n:]
			out, _ = s.Execute(&r, out)
		}
	}
}

func BenchmarkGetHit(b *testing.B) {
	benchExec(b, "set key:0001 0 0 32\r\n01234567890123456789012345678901\r\n", "get key:0001\r\n")
}

func BenchmarkGetMiss(b *testing.B) {
	benchExec(b, "", "get key:0001\r\n")
}

func BenchmarkGet10Keys(b *testing.B) {
	benchExec(b, "set k0 0 0 4\r\nvalu\r\nset k5 0 0 4\r\nvalu\r\n", "get k0 k1 k2 k3 k4 k5 k6 k7 k8 k9\r\n")
}

func BenchmarkSetExisting(b *testing.B) {
	benchExec(b, "set key:0001 0 0 32\r\n01234567890123456789012345678901\r\n",
		"set key:0001 0 0 32\r\nabcdefghijabcdefghijabcdefghij01\r\n")
}

func BenchmarkIncr(b *testing.B) {
	benchExec(b, "set n 0 0 1\r\n1\r\n", "incr n 1\r\n")
}
