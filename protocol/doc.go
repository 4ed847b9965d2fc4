// Package protocol parses and encodes memcached's wire protocols (classic
// text, meta and binary) on bytes only.
//
// It owns framing (finding complete requests in a byte stream, including
// swallowing the data block of a rejected value), parsing into Request, and
// encoding replies with memcached's exact strings. It knows nothing of
// sockets, logging or the cache: command semantics live in protocol/handler.
// It also holds the few plain types the network side and the command side
// exchange (ConnInfo), so that neither has to import the other.
package protocol
