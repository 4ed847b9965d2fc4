package main

import (
	"net"
	"strings"

	"github.com/rs/zerolog"
)

// listenDefaultMsg is the start-up line of a server started without -l:
// memcached listens on every interface by default, tandem on the loopback
// interface only, so a memcached command line moved to tandem unchanged
// would silently stop serving its neighbours.
const listenDefaultMsg = "no -l given: listening on 127.0.0.1 (loopback) only; " +
	"memcached listens on all interfaces by default: give -l 0.0.0.0 (or -l ::) for its behaviour"

// logListenDefault logs listenDefaultMsg with the addresses listened on.
func logListenDefault(log zerolog.Logger, addrs []net.Addr) {
	names := make([]string, len(addrs))
	for i, a := range addrs {
		names[i] = a.String()
	}
	log.Info().Str("listen", strings.Join(names, ",")).Msg(listenDefaultMsg)
}
