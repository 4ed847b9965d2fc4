// Package handler holds tandem's command semantics: it executes parsed
// requests against the cache and encodes memcached's replies. It is the only
// place where protocol reply codes meet cache outcomes, shared by every
// server mode.
//
// A Session is the state of one connection. Its framing half (Next,
// NeedBytes) and its execution half (Execute) may run on different
// goroutines at the same time (pool mode); they share no mutable state.
//
// The handler also owns the general statistics' single source (Stats, read
// by "stats", "stats reset" and the metrics endpoint; see stats.go), the
// per-prefix stats of "stats detail" (prefix.go) and the command log of
// verbosity 2 (verbose.go), the only logging it does.
package handler
