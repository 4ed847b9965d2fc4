// Package reactor holds tandem's network front ends, one per server mode:
//
//   - pool (the default): gnet event loops accept connections and frame
//     requests; complete requests of a connection go, as one batch, to an
//     Executor (a bounded worker pool) that runs them; replies return through
//     the connection's loop through its outbox, in request order.
//   - inline: the gnet loop that owns a connection also executes its
//     requests, like memcached's own worker threads.
//   - goroutine: plain net, one goroutine per connection, buffered, flushing
//     when the input is drained.
//
// The package owns sockets, framing buffers, connection limits and
// backpressure. It does not know the cache or the worker pool: it consumes a
// Session per connection (parse and execute, from protocol/handler) and an
// Executor. See docs/threads.md for goroutines, ownership and lock order.
package reactor
