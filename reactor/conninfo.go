package reactor

import (
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// ConnInfo describes one socket of a Server, for "stats conns".
type ConnInfo struct {
	// FD is the socket's file descriptor.
	FD int
	// Remote is the peer's address; for a listener, its bound address.
	Remote net.Addr
	// Local is the listening address the connection was accepted on; nil
	// for a listener.
	Local net.Addr
	// Listening marks a listening socket (listed in goroutine mode only:
	// gnet does not expose its listeners' descriptors).
	Listening bool
	// Executing reports that a worker is running the connection's requests
	// (pool mode; false in the other modes, which do not track it).
	Executing bool
	// LastActive is when bytes last arrived (or the connection opened);
	// zero for a listener.
	LastActive time.Time
}

// ConnLister is implemented by every Server New returns.
type ConnLister interface {
	// Conns lists the open connections (and listeners where known). It is
	// safe to call from any goroutine; it takes the connection registry's
	// lock briefly, and per-connection locks one at a time after it.
	Conns() []ConnInfo
}

// Conns lists s's sockets, or returns nil when s does not implement
// ConnLister.
func Conns(s Server) []ConnInfo {
	if l, ok := s.(ConnLister); ok {
		return l.Conns()
	}
	return nil
}

// Conns implements ConnLister. gnet recycles a connection's address buffers
// once OnClose has run, so addresses are copied while connMu proves the
// connection is still registered (OnClose unregisters it under connMu
// before gnet releases it).
func (s *gnetServer) Conns() []ConnInfo {
	s.connMu.Lock()
	infos := make([]ConnInfo, 0, len(s.conns))
	gcs := make([]*gconn, 0, len(s.conns))
	for gc := range s.conns {
		infos = append(infos, ConnInfo{
			FD:         gc.c.Fd(),
			Remote:     cloneAddr(gc.c.RemoteAddr()),
			Local:      s.listenerOf(gc.c.LocalAddr()),
			LastActive: time.Unix(0, gc.lastActive.Load()),
		})
		gcs = append(gcs, gc)
	}
	s.connMu.Unlock()
	if s.pool {
		for i, gc := range gcs {
			gc.mu.Lock()
			infos[i].Executing = gc.state == stRunning
			gc.mu.Unlock()
		}
	}
	return infos
}

// listenerOf returns the bound listen address a connection was accepted on:
// gnet reports the configured address (port 0 included) as a connection's
// local address.
func (s *gnetServer) listenerOf(local net.Addr) net.Addr {
	if ta, ok := local.(*net.TCPAddr); ok {
		for _, a := range s.addrs {
			if ba, ok := a.(*net.TCPAddr); ok && ba.IP.Equal(ta.IP) {
				return ba
			}
		}
	}
	if ua, ok := local.(*net.UnixAddr); ok {
		return &net.UnixAddr{Name: ua.Name, Net: ua.Net}
	}
	return s.addrs[0]
}

// cloneAddr deep-copies a TCP address; other kinds are returned as they are.
func cloneAddr(a net.Addr) net.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta == nil {
		return a
	}
	return &net.TCPAddr{IP: slices.Clone(ta.IP), Port: ta.Port, Zone: strings.Clone(ta.Zone)}
}

// netConnState is what goroutine mode tracks per connection for Conns.
type netConnState struct {
	lastActive atomic.Int64 // unix nanoseconds of the last read that returned bytes
	listener   net.Addr     // the listening address the connection came in on
}

func newNetConnState(now int64, listener net.Addr) *netConnState {
	st := &netConnState{listener: listener}
	st.lastActive.Store(now)
	return st
}

// activityNow is the timestamp (unix nanoseconds) recorded when a connection
// opens or receives bytes: exact when the idle timeout needs it, else from
// the cheap Clock when there is one.
func (c *Config) activityNow() int64 {
	if c.Clock != nil && c.IdleTimeout <= 0 {
		return c.Clock() * int64(time.Second)
	}
	return time.Now().UnixNano()
}

// Conns implements ConnLister, listing the listener first.
func (s *netServer) Conns() []ConnInfo {
	var infos []ConnInfo
	select {
	case <-s.ready:
		for _, ln := range s.lns {
			if fd, ok := sysFD(ln); ok {
				infos = append(infos, ConnInfo{FD: fd, Remote: ln.Addr(), Listening: true})
			}
		}
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, st := range s.conns {
		fd, ok := sysFD(c)
		if !ok {
			continue // closed meanwhile
		}
		infos = append(infos, ConnInfo{
			FD:         fd,
			Remote:     c.RemoteAddr(),
			Local:      st.listener,
			LastActive: time.Unix(0, st.lastActive.Load()),
		})
	}
	return infos
}

// sysFD returns the descriptor behind a net.Conn or net.Listener.
func sysFD(v any) (int, bool) {
	sc, ok := v.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil || fd < 0 {
		return 0, false
	}
	return fd, true
}
