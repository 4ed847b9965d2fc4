// Package trace replays cache traces against a memcached-compatible server
// over TCP, look-aside, and counts hits: the measurement of hit ratio per
// byte (issue #24).
//
// It owns four things: the ARC trace format (ParseARCLine, ARCReader: one
// request per line, "start_block count ignored request_number", each of the
// count 512-byte blocks from start_block on one access, each block number one
// key), key streams (Open: an ARC file, plain or zstd-compressed, or a
// synthetic Zipf stream), the replay client (Replay), and offline models of
// a cache of same-size items (Simulate: LRU, ARC and Belady's MIN, the bound
// of any policy at an item count; cmd/tracebound prints them). It knows
// nothing of the harness, of servers' processes or of reports.
//
// The ARC traces were published with Nimrod Megiddo and Dharmendra S. Modha,
// "ARC: A Self-Tuning, Low Overhead Replacement Cache", USENIX FAST 2003;
// cite the paper wherever results from them appear.
package trace
