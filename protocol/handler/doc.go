// Package handler holds tandem's command semantics: it executes parsed
// requests against the cache and encodes memcached's replies. It is the only
// place where protocol reply codes meet cache outcomes, shared by every
// server mode.
//
// A Session is the state of one connection. Its framing half (Next,
// NeedBytes) and its execution half (Execute) may run on different
// goroutines at the same time (pool mode); they share no mutable state.
package handler
