package reactor

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tandemcache/tandem/protocol"
)

// TLS listeners (Config.TLSAddrs, memcached's -Z) are served in every mode by
// the net front end of goroutine mode: one goroutine per connection over a
// crypto/tls connection. gnet has no TLS, and a record layer over its
// buffers would be a second TLS implementation to own; so in pool and
// inline mode a server with TLS listeners is two front ends side by side
// (splitServer): gnet for the plaintext listeners, net for the TLS ones.
// docs/operations.md (TLS) gives the cost.

// TLSListen is one TLS listener: its address and the configuration its
// handshakes use. The configuration is shared by every connection of the
// listener and must not be changed once the server is created (to rotate
// certificates, use tls.Config.GetConfigForClient or GetCertificate).
type TLSListen struct {
	Addr   string
	Config *tls.Config
}

// TLSCounters are the TLS listeners' counters, kept by the reactor and read
// by the caller (stats, metrics). All fields are atomic.
type TLSCounters struct {
	// Handshakes counts completed handshakes, resumed ones included.
	Handshakes atomic.Uint64
	// HandshakeErrors counts handshakes that failed or did not complete
	// within the deadline (memcached's ssl_handshake_errors).
	HandshakeErrors atomic.Uint64
	// HandshakeTimeouts counts those of HandshakeErrors that hit the
	// deadline (a client that connected and sent no complete hello).
	HandshakeTimeouts atomic.Uint64
	// NewSessions counts completed full handshakes (not resumed:
	// memcached's ssl_new_sessions).
	NewSessions atomic.Uint64
	// Resumed counts handshakes that resumed a session.
	Resumed atomic.Uint64
	// ProtoErrors counts connections closed on a TLS protocol error after
	// the handshake (a bad record, an alert, a renegotiation attempt:
	// memcached's ssl_proto_errors).
	ProtoErrors atomic.Uint64
}

// DefaultTLSHandshakeTimeout bounds a TLS handshake when
// Config.TLSHandshakeTimeout is 0.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// validateTLS checks the TLS part of a Config and fills its defaults.
func (c *Config) validateTLS() error {
	for _, l := range c.TLSAddrs {
		if _, _, err := net.SplitHostPort(l.Addr); err != nil {
			return fmt.Errorf("reactor: bad TLS listen address %q: %w", l.Addr, err)
		}
		if l.Config == nil {
			return fmt.Errorf("reactor: TLS listener %s has no tls.Config", l.Addr)
		}
	}
	if c.TLSHandshakeTimeout <= 0 {
		c.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	if c.TLSCounters == nil {
		c.TLSCounters = &TLSCounters{}
	}
	return nil
}

// wrapTLS returns c as a server-side TLS connection when ln is a TLS
// listener, else c itself. The handshake has not started: serveConn runs it
// (handshake) on the connection's own goroutine, never on the accept loop.
func (s *netServer) wrapTLS(ln net.Listener, c net.Conn) net.Conn {
	cfg := s.tlsLns[ln] // read-only once ready
	if cfg == nil {
		return c
	}
	return &tlsConn{Conn: tls.Server(c, cfg), counters: s.cfg.TLSCounters}
}

// tlsConn is a TLS connection that counts the protocol errors its reads end
// with.
type tlsConn struct {
	*tls.Conn
	counters  *TLSCounters
	version   atomic.Uint32 // negotiated TLS version, 0 until the handshake completes
	protoSeen bool          // a protocol error was counted; owned by the reading goroutine
}

// Read reads application data, counting a TLS protocol error once.
func (c *tlsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !c.protoSeen && isTLSProtoError(err) {
		c.protoSeen = true
		c.counters.ProtoErrors.Add(1)
	}
	return n, err
}

// handshake runs the TLS handshake of c, when it is a TLS connection, within
// the handshake deadline, and counts the outcome. It returns false when the
// connection must be closed. A client that connects and never completes its
// hello holds a goroutine, a connection slot of -c and the few kilobytes of
// a tls.Conn until the deadline, no longer.
func (s *netServer) handshake(c net.Conn) bool {
	tc, ok := c.(*tlsConn)
	if !ok {
		return true
	}
	cnt := s.cfg.TLSCounters
	// A deadline on the socket, not a context: HandshakeContext closes the
	// socket itself when its context ends, before the failure is counted.
	_ = tc.SetDeadline(time.Now().Add(s.cfg.TLSHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		if !s.stopping.Load() {
			cnt.HandshakeErrors.Add(1)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				cnt.HandshakeTimeouts.Add(1)
			}
			s.log.Debug().Err(err).Str("peer", addrText(c.RemoteAddr())).Msg("TLS handshake failed")
		}
		return false
	}
	_ = tc.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	tc.version.Store(uint32(st.Version))
	cnt.Handshakes.Add(1)
	if st.DidResume {
		cnt.Resumed.Add(1)
	} else {
		cnt.NewSessions.Add(1)
	}
	return true
}

// isTLSProtoError reports whether err, from a read of an established TLS
// connection, is a protocol failure rather than the peer going away or a
// deadline: an alert sent or received (crypto/tls reports them as
// *net.OpError with Op "local error" or "remote error"), a malformed
// record, or another crypto/tls failure ("tls: ..."), such as a
// renegotiation attempt.
func isTLSProtoError(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Op == "local error" || oe.Op == "remote error"
	}
	return strings.HasPrefix(err.Error(), "tls: ")
}

// tlsMark is what "stats conns" shows for a connection: "" for plaintext,
// the protocol version once a TLS handshake completed, "handshake" before.
func tlsMark(c net.Conn) string {
	tc, ok := c.(*tlsConn)
	if !ok {
		return ""
	}
	switch tc.version.Load() {
	case 0:
		return "handshake"
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS13:
		return "TLSv1.3"
	default:
		return "yes"
	}
}

// rawConn returns the socket under a TLS connection, for its descriptor.
func rawConn(v any) any {
	if tc, ok := v.(*tlsConn); ok {
		return tc.NetConn()
	}
	return v
}

// addrText is a as text, "" when nil.
func addrText(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// splitServer is a pool or inline mode server with TLS listeners: gnet serves
// the plaintext listeners (and the unix socket), a netServer the TLS ones.
// Both share the cache and handler through Config.NewSession; each counts
// its own connections, and Stats adds them up.
type splitServer struct {
	plain *gnetServer
	tls   *netServer
	ready chan struct{}
}

// newSplitServer creates the two front ends of cfg. The TLS side checks
// -c against the connections of both sides; the gnet side counts its own
// only (see docs/operations.md, TLS).
func newSplitServer(cfg Config) *splitServer {
	pc := cfg
	pc.TLSAddrs = nil
	tc := cfg
	tc.Addrs, tc.UnixSocket = nil, ""
	s := &splitServer{plain: newGnetServer(pc), tls: newNetServer(tc), ready: make(chan struct{})}
	s.tls.otherConns = func() int64 {
		if !s.isReady() {
			return 0
		}
		return s.plain.Stats().CurrConns
	}
	s.plain.otherConns = s.tls.curr.Load // -c counts both front ends, from either side
	return s
}

// isReady reports whether both front ends serve. Reading the gnet side's
// state needs it: what gnet's Serve sets up before it is ready is ordered
// before a TLS connection only through the kernel, which the race detector
// does not see, and through this channel.
func (s *splitServer) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

func (s *splitServer) Ready() <-chan struct{} { return s.ready }
func (s *splitServer) Addr() net.Addr         { return s.tls.Addr() }

// Addrs lists the TLS listeners first, then gnet's.
func (s *splitServer) Addrs() []net.Addr {
	return append(s.tls.Addrs(), s.plain.Addrs()...)
}

// Serve runs both front ends until Shutdown; if one stops by itself, the
// other is shut down too and the first error returned.
func (s *splitServer) Serve() error {
	errs := make(chan error, 2)
	go func() { errs <- s.plain.Serve() }()
	go func() { errs <- s.tls.Serve() }()
	pending := 2
	for _, r := range []<-chan struct{}{s.plain.Ready(), s.tls.Ready()} {
		select {
		case <-r:
		case err := <-errs:
			pending--
			s.stopBoth()
			for ; pending > 0; pending-- {
				<-errs
			}
			return err
		}
	}
	close(s.ready)
	first := <-errs
	if !errors.Is(first, ErrServerClosed) {
		s.stopBoth()
	}
	if second := <-errs; first == nil {
		first = second
	}
	return first
}

// stopBoth shuts both front ends down after one failed.
func (s *splitServer) stopBoth() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.tls.Shutdown(ctx)
	_ = s.plain.Shutdown(ctx)
}

// Shutdown shuts both front ends down at once.
func (s *splitServer) Shutdown(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.tls.Shutdown(ctx) }()
	err := s.plain.Shutdown(ctx)
	return errors.Join(err, <-errc)
}

// Stats adds both front ends' counters up.
func (s *splitServer) Stats() Stats {
	b := s.tls.Stats()
	if !s.isReady() {
		return b
	}
	a := s.plain.Stats()
	a.CurrConns += b.CurrConns
	a.TotalConns += b.TotalConns
	a.RejectedConns += b.RejectedConns
	a.ClosedOverflow += b.ClosedOverflow
	a.ClosedIdle += b.ClosedIdle
	a.Panics += b.Panics
	a.Yields += b.Yields
	a.ReadPauses += b.ReadPauses
	a.ReadBufOOM += b.ReadBufOOM
	a.BufferBytes += b.BufferBytes
	return a
}

// Conns implements ConnLister.
func (s *splitServer) Conns() []protocol.ConnInfo {
	if !s.isReady() {
		return s.tls.Conns()
	}
	return append(s.tls.Conns(), s.plain.Conns()...)
}
