// Package harness runs benchmark scenarios against a matrix of servers side
// by side and writes the results as JSON, Markdown tables and plots.
//
// It owns the server processes it starts (tandem in each mode, the real
// memcached), each on a free 127.0.0.1 port and stopped by its own PID; the
// scenario definitions (the classic memcached benchmarks this project
// answers); the statistics (medians over alternating repetitions, spread,
// ratios against memcached) and the reports. Load comes from package
// loadgen, in process. Like loadgen it is a black box over TCP and imports
// nothing else from the module.
//
// The load generator and the servers share the machine's cores; reports say
// so, and Options.ServerCPUs pins the servers with taskset.
package harness
