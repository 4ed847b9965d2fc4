// Package loadgen is a load generator for servers that speak the memcached
// text protocol.
//
// It owns its own small client (Conn), key distributions (uniform, Zipf,
// sequential), deterministic value contents that make every read verifiable,
// latency histograms (HdrHistogram) and the closed-loop runner (Run) that
// drives N connections at a fixed pipeline depth for a bounded number of
// requests and/or a bounded duration, always under a hard time cap.
//
// It is a black box over TCP: it imports nothing from the rest of the module,
// so the same code measures tandem and the real memcached.
//
// Pipelining is batch-synchronous: each connection writes Depth requests,
// then reads Depth replies, then starts the next batch. The latency of a
// request is the time from the batch write to the moment its reply is parsed.
package loadgen
