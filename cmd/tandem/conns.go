package main

import (
	"github.com/tandemcache/tandem/protocol/handler"
	"github.com/tandemcache/tandem/reactor"
)

// connInfos lists srv's sockets for "stats conns" in the handler's terms.
func connInfos(srv reactor.Server) []handler.ConnInfo {
	if srv == nil {
		return nil
	}
	rs := reactor.Conns(srv)
	out := make([]handler.ConnInfo, len(rs))
	for i, c := range rs {
		out[i] = handler.ConnInfo{
			FD:         c.FD,
			Addr:       c.Remote,
			ListenAddr: c.Local,
			Listening:  c.Listening,
			Executing:  c.Executing,
			LastActive: c.LastActive,
		}
	}
	return out
}
