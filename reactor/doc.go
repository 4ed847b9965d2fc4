// Package reactor holds tandem's network front ends, one per server mode:
//
//   - pool (the default): gnet event loops accept connections and frame
//     requests into a per-connection batch, then hand the connection to an
//     Executor (a bounded worker pool) as a task, at most one in flight per
//     connection, or park it when every worker is busy; a task runs a slice
//     of requests of its connection, in request order, handing the replies
//     back to the connection's loop, which writes them (loopout.go), then
//     takes parked connections in turn (dispatch.go).
//   - inline: the gnet loop that owns a connection also executes its
//     requests, like memcached's own worker threads.
//   - goroutine: plain net, one goroutine per connection, buffered, flushing
//     when the input is drained.
//
// One writer at a time per connection: its event loop while gnet holds it,
// then one drainer goroutine for the replies still owed (writer.go), so that
// requests read before a client's close still run and are answered; reads
// pause while a connection is not keeping up (readpause.go).
//
// The package owns sockets, framing buffers, connection limits and
// backpressure. It does not know the cache or the worker pool: it consumes a
// Session per connection (parse and execute, from protocol/handler) and an
// Executor. See docs/threads.md for goroutines, ownership and lock order.
package reactor
