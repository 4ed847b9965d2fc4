package handler

import (
	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// statsFlushEvery is how many requests a session counts locally before it
// adds its byte counters to the handler's shared atomics.
const statsFlushEvery = 64

// Session is one connection's protocol state. Next and NeedBytes (framing)
// and Execute (execution) may run on different goroutines concurrently; each
// half is used by one goroutine at a time.
type Session struct {
	h *Handler

	// Framing half.
	parser *protocol.Parser
	read   uint64 // bytes framed since the last flush

	// Execution half.
	written uint64 // reply bytes since the last flush
	execs   int
}

// NewSession creates the state of a new connection.
func (h *Handler) NewSession() *Session {
	p := protocol.NewParser(h.cfg.MaxItemSize)
	// memcached's exact too-large rule: the item header and key count
	// against -I, so the value limit is a little below it.
	p.SetItemSizeMax(h.cfg.MaxItemSize, !h.cfg.DisableCAS)
	h.configureParser(p)
	return &Session{h: h, parser: p}
}

// Next parses the next request from buf; see protocol.Parser.Next.
func (s *Session) Next(buf []byte, r *protocol.Request) int {
	n := s.parser.Next(buf, r)
	s.read += uint64(n)
	if s.read >= 1<<16 {
		s.h.bytesRead.Add(s.read)
		s.read = 0
	}
	return n
}

// NeedBytes reports how many buffered bytes the next Next call needs.
func (s *Session) NeedBytes() int { return s.parser.NeedBytes() }

// Close flushes the session's counters.
func (s *Session) Close() {
	s.h.bytesRead.Add(s.read)
	s.h.bytesWritten.Add(s.written)
	s.read, s.written = 0, 0
}

// Execute runs r and appends its reply to out. It reports whether the
// connection must be closed once out is written.
func (s *Session) Execute(r *protocol.Request, out []byte) ([]byte, bool) {
	before := len(out)
	out, closeConn := s.h.execute(r, out)
	s.written += uint64(len(out) - before)
	if s.execs++; s.execs >= statsFlushEvery {
		s.h.bytesWritten.Add(s.written)
		s.written, s.execs = 0, 0
	}
	return out, closeConn
}

// valueAppender and casAppender encode a hit as a VALUE line with its data
// block. They are empty structs so that passing them as cache.Appender does
// not allocate.
type valueAppender struct{}
type casAppender struct{}

func (valueAppender) AppendItem(dst []byte, it cache.Item) []byte {
	return protocol.AppendValue(dst, it.Key, it.Flags, it.Value)
}

func (casAppender) AppendItem(dst []byte, it cache.Item) []byte {
	return protocol.AppendValueCAS(dst, it.Key, it.Flags, it.Value, it.CAS)
}
