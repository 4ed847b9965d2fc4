package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrMalformed marks an ARC trace line that is not "start count ignored
// reqno". The replay stops at it: a trace that is silently replayed in part
// gives a hit ratio of another trace.
var ErrMalformed = errors.New("trace: malformed ARC line")

// MaxCount bounds the block count of one ARC request (16 Mi blocks of 512
// bytes, 8 GiB): larger counts are refused as malformed rather than
// replayed for hours.
const MaxCount = 1 << 24

// Request is one ARC trace line: Count consecutive block numbers from Start
// on, each one access of its own key. Count 0 means the line was blank.
type Request struct {
	Start, Count uint64
}

// ParseARCLine parses one line of an ARC trace, without its '\n' (a trailing
// '\r' is allowed). The line must hold exactly four fields separated by
// spaces or tabs: start_block and count, unsigned decimal integers with
// 1 <= count <= MaxCount and start+count-1 within uint64, then two fields
// that are not interpreted (in the published traces an ignored 0 and the
// request number). A line of only white space is blank: Request{} and no
// error. Anything else returns an error wrapping ErrMalformed. It does not
// allocate on success.
func ParseARCLine(line []byte) (Request, error) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	var f [4][]byte
	nf := 0
	for i := 0; i < len(line); {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		if nf == len(f) {
			return Request{}, fmt.Errorf("%w: more than 4 fields", ErrMalformed)
		}
		f[nf] = line[i:j]
		nf++
		i = j
	}
	switch nf {
	case 0:
		return Request{}, nil
	case 4:
	default:
		return Request{}, fmt.Errorf("%w: %d fields, want 4 (start count ignored reqno)", ErrMalformed, nf)
	}
	start, ok := parseUint(f[0])
	if !ok {
		return Request{}, fmt.Errorf("%w: start block %q is not an unsigned decimal", ErrMalformed, f[0])
	}
	count, ok := parseUint(f[1])
	switch {
	case !ok:
		return Request{}, fmt.Errorf("%w: count %q is not an unsigned decimal", ErrMalformed, f[1])
	case count == 0 || count > MaxCount:
		return Request{}, fmt.Errorf("%w: count %d outside 1..%d", ErrMalformed, count, MaxCount)
	case start+(count-1) < start:
		return Request{}, fmt.Errorf("%w: blocks %d+%d overflow 64 bits", ErrMalformed, start, count)
	}
	return Request{Start: start, Count: count}, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// parseUint parses a non-empty unsigned decimal that fits in 64 bits.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// maxLine bounds an ARC line; the published traces' lines are under 64
// bytes.
const maxLine = 4 << 10

// ARCReader yields the block numbers of an ARC trace, one per access, in
// trace order. Blank lines are skipped; a malformed line stops it with an
// error naming the line. Not safe for concurrent use.
type ARCReader struct {
	r          *bufio.Reader
	line       int64  // lines read
	next, left uint64 // the current request's next block and blocks left
	err        error  // sticky
}

// NewARCReader reads an ARC trace from r.
func NewARCReader(r io.Reader) *ARCReader {
	return &ARCReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next access's block number, or io.EOF after the last.
func (a *ARCReader) Next() (uint64, error) {
	for a.left == 0 {
		if a.err != nil {
			return 0, a.err
		}
		a.err = a.readLine()
	}
	k := a.next
	a.next++
	a.left--
	return k, nil
}

// readLine reads the next line into next and left.
func (a *ARCReader) readLine() error {
	b, err := a.r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(b) > maxLine:
		return fmt.Errorf("%w: line %d longer than %d bytes", ErrMalformed, a.line+1, maxLine)
	case err == io.EOF && len(b) == 0:
		return io.EOF
	case err != nil && err != io.EOF:
		return fmt.Errorf("trace: read line %d: %w", a.line+1, err)
	}
	a.line++
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	req, perr := ParseARCLine(b)
	if perr != nil {
		return fmt.Errorf("line %d: %w", a.line, perr)
	}
	a.next, a.left = req.Start, req.Count
	return nil
}

// Lines returns how many lines have been read so far.
func (a *ARCReader) Lines() int64 { return a.line }
