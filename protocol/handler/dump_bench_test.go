package handler

import (
	"fmt"
	"testing"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// dumpBenchHandler is a handler over n items with 12-byte keys (metadump
// lines of about 75 bytes).
func dumpBenchHandler(b *testing.B, n int) *Handler {
	b.Helper()
	c, err := cache.New(cache.Config{MaxBytes: 512 << 20})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if o, _ := c.Store(cache.Set, fmt.Appendf(nil, "key:%07d", i), []byte("0123456789"), 0, 0, 0); o != cache.Stored {
			b.Fatalf("store %d: %v", i, o)
		}
	}
	h, err := New(Config{Cache: c, MaxItemSize: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// BenchmarkMetadumpPart is one part of a streamed metadump (Continue): the
// time a dump holds its executor between two chances for other work.
func BenchmarkMetadumpPart(b *testing.B) {
	h := dumpBenchHandler(b, 200_000)
	s := h.NewSession("")
	s.Stream()
	start := []byte("lru_crawler metadump all\r\n")
	var out []byte
	total, parts := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	more := false
	for i := 0; i < b.N; i++ {
		if !more {
			out, _ = execOne(s, start, out[:0])
			more = true
		} else {
			out, more = s.Continue(out[:0])
		}
		total += len(out)
		parts++
	}
	b.ReportMetric(float64(total)/float64(parts), "B/part")
}

// BenchmarkMetadumpCut is a whole metadump built in one Execute, cut at
// DumpLimit: what a dump costs while the reactor does not stream.
func BenchmarkMetadumpCut(b *testing.B) {
	h := dumpBenchHandler(b, 250_000)
	s := h.NewSession("")
	start := []byte("lru_crawler metadump all\r\n")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, _ := execOne(s, start, nil)
		if len(out) < DumpLimit {
			b.Fatalf("dump of %d bytes: not cut", len(out))
		}
	}
}

// execOne parses one request from in and executes it, appending to out.
func execOne(s *Session, in, out []byte) ([]byte, bool) {
	var r protocol.Request
	s.Next(in, &r)
	return s.Execute(&r, out)
}
