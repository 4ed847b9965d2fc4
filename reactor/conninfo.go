package reactor

import (
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tandemcache/tandem/protocol"
)

// ConnLister is implemented by every Server New returns.
type ConnLister interface {
	// Conns lists the open connections (and listeners where known), for
	// "stats conns". It is
	// safe to call from any goroutine; it takes the connection registry's
	// lock briefly, and per-connection locks one at a time after it.
	Conns() []protocol.ConnInfo
}

// Conns lists s's sockets, or returns nil when s does not implement
// ConnLister.
func Conns(s Server) []protocol.ConnInfo {
	if l, ok := s.(ConnLister); ok {
		return l.Conns()
	}
	return nil
}

// Conns implements ConnLister. A connection gnet closed while requests of
// it were still to run is listed until they have run, the way memcached
// lists a connection until it has answered what it read: a client that
// sends "stats conns" and closes at once finds itself in the reply.
func (s *gnetServer) Conns() []protocol.ConnInfo {
	s.connMu.Lock()
	infos := make([]protocol.ConnInfo, 0, len(s.conns))
	gcs := make([]*gconn, 0, len(s.conns))
	for gc := range s.conns {
		infos = append(infos, protocol.ConnInfo{
			FD:         gc.fd,
			Remote:     gc.remote,
			Local:      gc.local,
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
func (s *netServer) Conns() []protocol.ConnInfo {
	var infos []protocol.ConnInfo
	select {
	case <-s.ready:
		for _, ln := range s.lns {
			if fd, ok := sysFD(ln); ok {
				info := protocol.ConnInfo{FD: fd, Remote: ln.Addr(), Listening: true}
				if s.tlsLns[ln] != nil {
					info.TLS = "yes"
				}
				infos = append(infos, info)
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
		infos = append(infos, protocol.ConnInfo{
			FD:         fd,
			Remote:     c.RemoteAddr(),
			Local:      st.listener,
			LastActive: time.Unix(0, st.lastActive.Load()),
			TLS:        tlsMark(c),
		})
	}
	return infos
}

// sysFD returns the descriptor behind a net.Conn or net.Listener.
func sysFD(v any) (int, bool) {
	sc, ok := rawConn(v).(syscall.Conn)
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
