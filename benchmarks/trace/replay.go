package trace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// ErrProtocol marks a reply that breaks the text protocol (the stream is out
// of sync): the replay stops.
var ErrProtocol = errors.New("trace: protocol error")

// Config configures Replay.
type Config struct {
	Addr      string // host:port of the server
	Batch     int    // keys per multi-get (default 100)
	ValueSize int    // bytes of each value set on a miss (default 100)
	// MinValueSize, when above 0 and below ValueSize, makes the value sizes vary: each key's
	// value has MinValueSize to ValueSize bytes, picked by a hash of the key (so a key has the
	// same size every time, in every replay).
	MinValueSize int
	// Warmup is the number of accesses before the measured part: the
	// result counts hits over the whole trace and over the accesses from
	// index Warmup on.
	Warmup    int64
	KeyPrefix string // prepended to each key's decimal number
	// Window, when > 0, splits the counts into windows of this many
	// accesses (Result.Windows): the hit ratio over time.
	Window  int64
	Timeout time.Duration // bounds the dial, each write and each reply read (default 30 s)
}

// Result counts one replay. Every access is one key of a multi-get.
type Result struct {
	Accesses int64 `json:"accesses"`
	Hits     int64 `json:"hits"`
	// MeasuredAccesses and MeasuredHits count the accesses after the
	// warm-up (index >= Config.Warmup).
	MeasuredAccesses int64 `json:"measured_accesses"`
	MeasuredHits     int64 `json:"measured_hits"`
	Batches          int64 `json:"batches"` // multi-gets sent
	// RepeatMisses counts misses of a key that already missed earlier in
	// the same batch: a client that runs each access after the previous
	// one's set would hit there. Hits+RepeatMisses over Accesses is the
	// hit ratio of such a client (to compare with one-request-at-a-time
	// replays).
	RepeatMisses int64 `json:"repeat_misses"`
	// Sets is the number of sets sent: one per distinct key missed in a
	// batch. SetsRefused of them were answered SERVER_ERROR or NOT_STORED
	// (a server that could not make room).
	Sets        int64 `json:"sets"`
	SetsRefused int64 `json:"sets_refused"`
	// ErrorReplies counts ERROR and CLIENT_ERROR replies, and values that
	// came back with other bytes than were set; FirstError describes the
	// first.
	ErrorReplies int64         `json:"error_replies"`
	FirstError   string        `json:"first_error,omitempty"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	// Windows count the accesses in windows of Config.Window accesses, in
	// order (the last may be shorter); empty without Config.Window.
	Windows []Window `json:"windows,omitempty"`
}

// Window counts the accesses of one window of a replay.
type Window struct {
	Accesses int64 `json:"accesses"`
	Hits     int64 `json:"hits"`
	// End is the time from the replay's start to the reply of the
	// window's last batch.
	End time.Duration `json:"end_ns"`
}

// HitRatio is Hits over Accesses (0 without accesses).
func (w Window) HitRatio() float64 { return ratio(w.Hits, w.Accesses) }

// HitRatio is Hits over Accesses (0 without accesses).
func (r *Result) HitRatio() float64 { return ratio(r.Hits, r.Accesses) }

// MeasuredHitRatio is the hit ratio after the warm-up.
func (r *Result) MeasuredHitRatio() float64 { return ratio(r.MeasuredHits, r.MeasuredAccesses) }

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Replay replays st against cfg.Addr look-aside on one connection: the keys
// in batches of cfg.Batch, each batch one multi-get ("get k1 k2 ... kB"),
// then a set of each distinct key the batch missed, with a value of
// cfg.ValueSize bytes (or the key's size, with cfg.MinValueSize). The sets
// of one batch travel in the same write as the next batch's get (the server runs a connection's commands in order, so
// the get sees them): one round trip per batch. A key that occurs twice in
// a batch is asked twice and counted as what the server answers each time;
// it is set once. It returns what it counted so far with any error; ctx
// stops it between batches.
func Replay(ctx context.Context, cfg Config, st Stream) (Result, error) {
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.ValueSize <= 0 {
		cfg.ValueSize = 100
	}
	if !cfg.varying() {
		cfg.MinValueSize = 0
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	nc, err := net.DialTimeout("tcp", cfg.Addr, cfg.Timeout)
	if err != nil {
		return Result{}, fmt.Errorf("trace: dial %s: %w", cfg.Addr, err)
	}
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := newClient(nc, cfg)
	c.start = time.Now()
	err = c.run(ctx, st)
	c.res.Elapsed = time.Since(c.start)
	return c.res, err
}

// client is one replay's connection and buffers; everything is allocated
// once, so a batch costs no allocation.
type client struct {
	cfg    Config
	prefix []byte // cfg.KeyPrefix
	nc     net.Conn
	r      *bufio.Reader
	wbuf   []byte
	value  []byte   // every value set is a prefix of it (valueOf)
	vbuf   []byte   // a value read back, with its CRLF
	keys   []uint64 // the batch's keys
	hit    []bool   // hit[i]: keys[i] was answered with a value
	misses []uint64 // distinct keys the batch missed, in first-miss order
	missed map[uint64]struct{}
	next   int64 // index of the batch's first access in the trace
	start  time.Time
	res    Result
}

func newClient(nc net.Conn, cfg Config) *client {
	c := &client{
		cfg:    cfg,
		prefix: []byte(cfg.KeyPrefix),
		nc:     nc,
		r:      bufio.NewReaderSize(nc, 64<<10),
		value:  make([]byte, cfg.ValueSize),
		vbuf:   make([]byte, cfg.ValueSize+2),
		keys:   make([]uint64, cfg.Batch),
		hit:    make([]bool, cfg.Batch),
		misses: make([]uint64, 0, cfg.Batch),
		missed: make(map[uint64]struct{}, cfg.Batch),
	}
	for i := range c.value {
		c.value[i] = 'a' + byte(i%26)
	}
	return c
}

// varying reports whether the value sizes vary per key (MinValueSize in use).
func (cfg Config) varying() bool { return cfg.MinValueSize > 0 && cfg.MinValueSize < cfg.ValueSize }

// MeanValueSize is the mean size of the values a replay sets (ValueSize without varying sizes).
func (cfg Config) MeanValueSize() int {
	if cfg.varying() {
		return (cfg.MinValueSize + cfg.ValueSize) / 2
	}
	return cfg.ValueSize
}

// valueOf is key k's value: all of c.value, or with Config.MinValueSize a prefix of a length
// between it and ValueSize that a hash of k picks (splitmix64's finalizer).
func (c *client) valueOf(k uint64) []byte {
	lo := c.cfg.MinValueSize
	if lo <= 0 {
		return c.value
	}
	k += 0x9e3779b97f4a7c15
	k = (k ^ k>>30) * 0xbf58476d1ce4e5b9
	k = (k ^ k>>27) * 0x94d049bb133111eb
	k ^= k >> 31
	return c.value[:lo+int(k%uint64(len(c.value)-lo+1))]
}

func (c *client) run(ctx context.Context, st Stream) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := 0
		var serr error
		for n < len(c.keys) {
			k, err := st.Next()
			if err != nil {
				serr = err
				break
			}
			c.keys[n] = k
			n++
		}
		if serr != nil && serr != io.EOF {
			return serr
		}
		if n == 0 && len(c.misses) == 0 {
			return nil
		}
		if err := c.roundTrip(n); err != nil {
			return err
		}
		if serr == io.EOF && len(c.misses) == 0 {
			return nil
		}
	}
}

// roundTrip writes the previous batch's sets and a get of keys[:n] (none
// when n is 0), and reads their replies.
func (c *client) roundTrip(n int) error {
	b := c.wbuf[:0]
	for _, k := range c.misses {
		v := c.valueOf(k)
		b = append(b, "set "...)
		b = c.appendKey(b, k)
		b = append(b, " 0 0 "...)
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, "\r\n"...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
	}
	sets := len(c.misses)
	if n > 0 {
		b = append(b, "get"...)
		for _, k := range c.keys[:n] {
			b = append(b, ' ')
			b = c.appendKey(b, k)
		}
		b = append(b, "\r\n"...)
	}
	c.wbuf = b
	_ = c.nc.SetDeadline(time.Now().Add(c.cfg.Timeout))
	if _, err := c.nc.Write(b); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	for range sets {
		if err := c.readStore(); err != nil {
			return err
		}
	}
	c.res.Sets += int64(sets)
	c.misses = c.misses[:0]
	if n == 0 {
		return nil
	}
	if err := c.readGet(n); err != nil {
		return err
	}
	c.count(n)
	return nil
}

func (c *client) appendKey(b []byte, k uint64) []byte {
	b = append(b, c.cfg.KeyPrefix...)
	return strconv.AppendUint(b, k, 10)
}

// count adds the batch's hits and collects its distinct misses.
func (c *client) count(n int) {
	c.res.Batches++
	clear(c.missed)
	for i, k := range c.keys[:n] {
		idx := c.next + int64(i)
		c.res.Accesses++
		measured := idx >= c.cfg.Warmup
		if measured {
			c.res.MeasuredAccesses++
		}
		if c.cfg.Window > 0 {
			c.window(idx, c.hit[i])
		}
		if c.hit[i] {
			c.res.Hits++
			if measured {
				c.res.MeasuredHits++
			}
			continue
		}
		if _, dup := c.missed[k]; dup {
			c.res.RepeatMisses++
		} else {
			c.missed[k] = struct{}{}
			c.misses = append(c.misses, k)
		}
	}
	c.next += int64(n)
}

// window counts access idx in its window and moves the window's end to now.
func (c *client) window(idx int64, hit bool) {
	w := int(idx / c.cfg.Window)
	for len(c.res.Windows) <= w {
		c.res.Windows = append(c.res.Windows, Window{})
	}
	c.res.Windows[w].Accesses++
	if hit {
		c.res.Windows[w].Hits++
	}
	c.res.Windows[w].End = time.Since(c.start)
}

// readLine returns the next reply line without its CRLF, valid until the
// next read.
func (c *client) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("trace: read: %w", err)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line without CRLF %q", ErrProtocol, line)
	}
	return line[:len(line)-2], nil
}

// readStore reads one set's reply.
func (c *client) readStore() error {
	line, err := c.readLine()
	if err != nil {
		return err
	}
	switch {
	case string(line) == "STORED":
	case string(line) == "NOT_STORED" || bytes.HasPrefix(line, []byte("SERVER_ERROR")):
		c.res.SetsRefused++
		c.note(fmt.Sprintf("set answered %q", line))
	case isErrorLine(line):
		c.errorReply(fmt.Sprintf("set answered %q", line))
	default:
		return fmt.Errorf("%w: set answered %q", ErrProtocol, line)
	}
	return nil
}

func isErrorLine(line []byte) bool {
	return string(line) == "ERROR" || bytes.HasPrefix(line, []byte("CLIENT_ERROR")) ||
		bytes.HasPrefix(line, []byte("SERVER_ERROR"))
}

func (c *client) note(s string) {
	if c.res.FirstError == "" {
		c.res.FirstError = s
	}
}

func (c *client) errorReply(s string) {
	c.res.ErrorReplies++
	c.note(s)
}

// readGet reads the reply to "get keys[:n]" into hit[:n]. The server
// answers hits in request order, so one cursor over the keys matches them.
func (c *client) readGet(n int) error {
	clear(c.hit[:n])
	cur := 0
	for {
		line, err := c.readLine()
		if err != nil {
			return err
		}
		if string(line) == "END" {
			return nil
		}
		rest, ok := bytes.CutPrefix(line, []byte("VALUE "))
		if !ok {
			if isErrorLine(line) {
				// The server gave up on the whole get: its keys count as
				// misses.
				c.errorReply(fmt.Sprintf("get answered %q", line))
				return nil
			}
			return fmt.Errorf("%w: get answered %q", ErrProtocol, line)
		}
		k, size, err := c.parseValueLine(rest)
		if err != nil {
			return err
		}
		for cur < n && c.keys[cur] != k {
			cur++
		}
		if cur == n {
			return fmt.Errorf("%w: VALUE for key %d, not asked or out of order", ErrProtocol, k)
		}
		c.hit[cur] = true
		cur++
		if err := c.readValue(k, size); err != nil {
			return err
		}
	}
}

// parseValueLine parses "<key> <flags> <bytes> [<cas>]" and the key's
// number after the prefix.
func (c *client) parseValueLine(b []byte) (key uint64, size int, err error) {
	var f [4][]byte
	nf := 0
	for i := 0; i < len(b) && nf <= len(f); {
		j := bytes.IndexByte(b[i:], ' ')
		if j < 0 {
			j = len(b) - i
		}
		if j > 0 {
			if nf < len(f) {
				f[nf] = b[i : i+j]
			}
			nf++
		}
		i += j + 1
	}
	if nf != 3 && nf != 4 {
		return 0, 0, fmt.Errorf("%w: VALUE line %q", ErrProtocol, b)
	}
	kb, ok := bytes.CutPrefix(f[0], c.prefix)
	k, ok1 := parseUint(kb)
	sz, ok2 := parseUint(f[2])
	if !ok || !ok1 || !ok2 || sz > 1<<30 {
		return 0, 0, fmt.Errorf("%w: VALUE line %q", ErrProtocol, b)
	}
	return k, int(sz), nil
}

// readValue reads a value block of size bytes and its CRLF, and checks it
// is the value that was set.
func (c *client) readValue(k uint64, size int) error {
	want := c.valueOf(k)
	if size != len(want) {
		if _, err := c.r.Discard(size); err != nil {
			return fmt.Errorf("trace: read value: %w", err)
		}
		c.errorReply(fmt.Sprintf("key %d: %d value bytes, set %d", k, size, len(want)))
		if _, err := io.ReadFull(c.r, c.vbuf[:2]); err != nil {
			return fmt.Errorf("trace: read value: %w", err)
		}
		if c.vbuf[0] != '\r' || c.vbuf[1] != '\n' {
			return fmt.Errorf("%w: value of key %d not followed by CRLF", ErrProtocol, k)
		}
		return nil
	}
	if _, err := io.ReadFull(c.r, c.vbuf[:size+2]); err != nil {
		return fmt.Errorf("trace: read value: %w", err)
	}
	if c.vbuf[size] != '\r' || c.vbuf[size+1] != '\n' {
		return fmt.Errorf("%w: value of key %d not followed by CRLF", ErrProtocol, k)
	}
	if !bytes.Equal(c.vbuf[:size], want) {
		c.errorReply(fmt.Sprintf("key %d: value bytes differ from those set", k))
	}
	return nil
}
