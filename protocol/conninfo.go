package protocol

import (
	"net"
	"time"
)

// ConnInfo describes one socket of a server for "stats conns". The network
// side fills it in (package reactor lists its connections as ConnInfo) and
// the command side formats it; it lives here, in the vocabulary both share,
// so that neither imports the other. Values are copies: a ConnInfo stays
// valid after its connection closes.
type ConnInfo struct {
	// FD is the socket's file descriptor (memcached keys the lines by it).
	FD int
	// Remote is the peer's address; for a listener, its bound address.
	Remote net.Addr
	// Local is the listening address the connection was accepted on; nil
	// for a listener.
	Local net.Addr
	// Listening marks a listening socket.
	Listening bool
	// Executing reports that the connection's requests are being executed
	// right now (known exactly in pool mode only).
	Executing bool
	// LastActive is when bytes last arrived (or the connection opened); zero
	// when unknown (a listener reports the server's uptime instead).
	LastActive time.Time
	// TLS is "" for a plaintext socket; for a TLS one, the protocol version
	// once its handshake completed ("TLSv1.3"), "handshake" before, and
	// "yes" for a TLS listener.
	TLS string
}
