package reactor

import "github.com/tandemcache/tandem/protocol"

// reqSource is where the executor's next request comes from: a batch the
// loop framed (pool mode, from gc.curIdx on), or bytes it parses itself
// (inline mode on the loop, and the input left when the loop let go of a
// connection, in both modes).
type reqSource struct {
	b   *batch // framed requests; nil: parse buf
	buf []byte // bytes to parse, from off on; valid for the run only
	off int
}

// next returns the source's next request, or nil when it has no complete
// one left. A parsed request lives in gc.req until the next call.
func (src *reqSource) next(gc *gconn) *protocol.Request {
	if src.b != nil {
		if gc.curIdx == len(src.b.reqs) {
			return nil
		}
		gc.curIdx++
		return &src.b.reqs[gc.curIdx-1]
	}
	for src.off < len(src.buf) {
		n := gc.sess.Next(src.buf[src.off:], &gc.req)
		if n == 0 {
			return nil
		}
		src.off += n
		if gc.req.Cmd != protocol.CmdNone {
			return &gc.req
		}
		// The bytes of a rejected value, swallowed: no request.
	}
	return nil
}

// left reports whether the source may hold more requests.
func (src *reqSource) left(gc *gconn) bool {
	if src.b != nil {
		return gc.curIdx < len(src.b.reqs)
	}
	return src.off < len(src.buf)
}

// runEnd is how a run of requests ended.
type runEnd uint8

const (
	endDrained  runEnd = iota // the source has no complete request left
	endYield                  // stopped at ReqsPerEvent with more maybe left
	endBlocked                // the writer is over its high-water mark: a resume is owed
	endClose                  // a request closed the connection; its reply went to the writer
	endOverflow               // the run's replies exceeded MaxOutput: dropped, the connection is to close
)

func (e runEnd) String() string {
	return [...]string{"drained", "yield", "blocked", "close", "overflow"}[e]
}

// run executes up to ReqsPerEvent requests from src, in order, as the
// connection's executor (one goroutine at a time: the loop in inline mode,
// a pool task, or whoever runs the leftovers after the loop let go), and
// hands their replies to the writer: every writeChunk bytes and at the
// end. A part of an unfinished reply counts as a request, for fairness. It
// is the one run loop of every mode and source; the callers differ only in
// where the requests come from and in what they do with the end.
func (gc *gconn) run(src *reqSource) runEnd {
	out := gc.out[:0]
	end := endDrained
	ran := 0
	for {
		if ran == gc.s.cfg.ReqsPerEvent {
			if gc.unfinished || src.left(gc) {
				end = endYield
			}
			break
		}
		var closeConn bool
		if gc.unfinished {
			out, closeConn = gc.continueReply(out)
		} else if r := src.next(gc); r != nil {
			out, closeConn = gc.execute(r, out)
		} else {
			break
		}
		ran++
		if len(out) > gc.s.cfg.MaxOutput {
			// One slice asks for more output than the cap (a multi-get
			// of large values): close rather than buffer it.
			gc.s.overflow.Add(1)
			out, end = out[:0], endOverflow
			break
		}
		if closeConn {
			end = endClose
			break
		}
		if len(out) >= writeChunk {
			var blocked bool
			if out, blocked = gc.w.write(out); blocked {
				end = endBlocked
				break
			}
		}
	}
	if ran > 0 {
		gc.progressed()
	}
	if end != endOverflow && end != endBlocked {
		var blocked bool
		if out, blocked = gc.w.write(out); blocked && end != endClose {
			end = endBlocked
		}
	}
	if cap(out) > maxKeptBuffer {
		out = nil
	}
	gc.out = out
	return end
}
