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
	h    *Handler
	peer string // the client's address, for the command log

	// Framing half.
	parser *protocol.Parser
	read   uint64 // bytes framed since the last flush

	// Execution half.
	written   uint64 // reply bytes since the last flush
	execs     int
	streaming bool    // the reactor calls Continue (see Stream)
	dump      keyDump // an lru_crawler metadump Continue has still to finish

	// Set once by SetPush (see watch.go), before the first Execute.
	fd      int                       // the connection's descriptor, for log lines
	push    func([]byte) (int, error) // writes to the connection between replies; nil without one
	watcher *watcher                  // the watch this connection runs; it then answers nothing
}

// NewSession creates the state of a new connection from peer (the client's
// address as text, "" when unknown), which the command log of verbosity 2
// names.
func (h *Handler) NewSession(peer string) *Session {
	p := protocol.NewParser(h.cfg.MaxItemSize)
	// memcached's exact too-large rule: the item header and key count
	// against -I, so the value limit is a little below it.
	p.SetItemSizeMax(h.cfg.MaxItemSize, !h.cfg.DisableCAS)
	p.SetLargeClientFlags(h.cfg.LargeClientFlags)
	p.SetDialect(h.cfg.Dialect)
	if h.cfg.Auth != nil {
		p.RequireAuth(h.cfg.Auth.Check)
	}
	return &Session{h: h, peer: peer, parser: p, fd: -1}
}

// Next parses the next request from buf; see protocol.Parser.Next.
func (s *Session) Next(buf []byte, r *protocol.Request) int {
	n := s.parser.Next(buf, r)
	s.read += uint64(n)
	// A stats request sees this connection's bytes, its own line included,
	// as memcached's does: the local count is flushed before it runs.
	if s.read >= 1<<16 || (n > 0 && isStats(r)) {
		s.h.count(BytesRead, s.read)
		s.read = 0
	}
	return n
}

// isStats reports whether r asks for statistics, in either protocol.
func isStats(r *protocol.Request) bool {
	return r.Cmd == protocol.CmdStats || (r.Cmd == protocol.CmdBinary && r.Bin.Cmd == protocol.OpStat)
}

// NeedBytes reports how many buffered bytes the next Next call needs.
func (s *Session) NeedBytes() int { return s.parser.NeedBytes() }

// Close flushes the session's counters and drops an unfinished dump.
func (s *Session) Close() {
	s.h.count(BytesRead, s.read)
	s.h.count(BytesWritten, s.written)
	s.read, s.written = 0, 0
	s.dropDump()
	s.closeWatch()
}

// Stream tells the session that its executor calls Continue: from then on
// Execute may leave a long reply (a key dump) unfinished, for Continue to
// append in parts. The reactor calls it once, before the first Execute.
// Without it every reply is complete when Execute returns, and a key dump
// is cut at DumpLimit bytes.
func (s *Session) Stream() { s.streaming = true }

// Unfinished reports whether the last Execute or Continue left a reply
// unfinished, for Continue to go on with.
func (s *Session) Unfinished() bool { return s.dump.on }

// Continue appends the next part of a reply that Execute (or the previous
// Continue) left unfinished and reports whether more parts follow; with no
// reply unfinished it returns out unchanged and false. A part is about
// 64 KiB and takes well under a millisecond to build. The executor calls
// Continue when Unfinished reports a reply unfinished, and while Continue
// reports more, again before it runs the connection's next request; between
// two calls it may write out, wait for the socket to drain, and let other
// connections run.
func (s *Session) Continue(out []byte) ([]byte, bool) {
	if !s.dump.on {
		return out, false
	}
	before := len(out)
	out = s.dumpPart(out)
	s.written += uint64(len(out) - before)
	return out, s.dump.on
}

// Execute runs r and appends its reply to out. It reports whether the
// connection must be closed once out is written.
func (s *Session) Execute(r *protocol.Request, out []byte) ([]byte, bool) {
	if s.watcher != nil {
		// A watching connection answers nothing more: its requests are
		// read and dropped (memcached stops reading it).
		return out, false
	}
	if s.dump.on {
		// The executor did not finish a streamed reply before running the
		// next request: finish it here, so that replies stay whole.
		n := len(out)
		out = s.finishDump(out)
		s.written += uint64(len(out) - n)
	}
	if isStats(r) && s.written > 0 {
		// A stats request sees the replies this connection was sent
		// before it, as memcached's does (it counts them once written).
		s.h.count(BytesWritten, s.written)
		s.written = 0
	}
	before := len(out)
	// Like memcached, log the command line with the verbosity before it ran
	// and its reply with the verbosity after: only a verbosity command
	// changes it in between for this connection.
	logCmd := s.h.verbose()
	var closeConn bool
	switch r.Cmd {
	case protocol.CmdLruCrawler:
		out = s.lruCrawler(r, out)
		if noreplyLast(r.Args) {
			out = out[:before] // newer.go: "admin noreply"
		}
	case protocol.CmdWatch:
		out = s.watchCmd(r, out)
	default:
		out, closeConn = s.h.execute(r, out, s.fd)
	}
	s.written += uint64(len(out) - before)
	if s.execs++; s.execs >= statsFlushEvery {
		s.h.count(BytesWritten, s.written)
		s.written, s.execs = 0, 0
	}
	if logCmd || r.Cmd == protocol.CmdVerbosity {
		if logReply := s.h.verbose(); logCmd || logReply {
			s.h.logExchange(s.peer, r, out[before:], logCmd, logReply)
		}
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
