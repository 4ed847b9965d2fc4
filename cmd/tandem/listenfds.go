package main

import (
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tandemcache/tandem/protocol"
)

// listenerRows completes "stats conns" with one conn_listening row per
// listening socket, as memcached prints them: the gnet front ends (pool and
// inline mode) list only connections. The sockets are found once, after the
// server listens, among the process's descriptors: those that accept
// connections (SO_ACCEPTCONN) on an address the server serves.
type listenerRows struct {
	once sync.Once
	rows []protocol.ConnInfo
}

// maxListenerFD bounds the descriptors looked at: listeners are opened at
// start, before any connection, so their numbers are small.
const maxListenerFD = 1024

// add appends the listener rows that conns lacks: a front end that lists
// its listeners itself (goroutine mode, TLS) keeps its rows.
func (l *listenerRows) add(conns []protocol.ConnInfo, addrs []net.Addr) []protocol.ConnInfo {
	listed := map[int]bool{}
	for _, c := range conns {
		if c.Listening {
			listed[c.FD] = true
		}
	}
	l.once.Do(func() { l.rows = findListeners(addrs) })
	for _, r := range l.rows {
		if !listed[r.FD] {
			conns = append(conns, r)
		}
	}
	return conns
}

// findListeners returns a row for every listening socket of the process
// bound to one of addrs.
func findListeners(addrs []net.Addr) []protocol.ConnInfo {
	served := map[string]bool{}
	for _, a := range addrs {
		if ta, ok := a.(*net.TCPAddr); ok {
			served[ta.String()] = true
		}
	}
	var rows []protocol.ConnInfo
	for fd := 3; fd < maxListenerFD && len(served) > 0; fd++ {
		if on, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || on == 0 {
			continue
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			continue
		}
		var ta *net.TCPAddr
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			ta = &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
		case *unix.SockaddrInet6:
			ta = &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
		default:
			continue
		}
		if served[ta.String()] {
			rows = append(rows, protocol.ConnInfo{FD: fd, Remote: ta, Listening: true})
		}
	}
	return rows
}
