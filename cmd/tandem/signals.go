package main

import (
	"os"
	"os/signal"
	"syscall"
)

// The signals tandem acts on. SIGHUP does not stop tandem: it reopens
// --log-file (log rotation) and reloads the TLS certificates (as
// refresh_certs does). SIGINT, SIGTERM and SIGUSR1 (memcached 1.6's graceful
// stop) stop it gracefully.
//
// Each kind has its own channel. signal.Notify never blocks: a signal that
// finds its channel full is dropped. With one channel of one slot for all
// four, a SIGTERM sent while a SIGHUP was still unread (the main goroutine
// not yet in its wait loop after "tandem listening", or not scheduled on a
// loaded machine) was lost, and the server ran on: TestSignals' "no exit
// within 15 s, no shutting down line" (#41), reproduced by
// TestSignalsNotLost. Apart, a pending SIGHUP cannot crowd out a stop; a
// repeated signal of one kind may coalesce with the pending one, which does
// the same work.
type signals struct {
	hangup chan os.Signal // SIGHUP
	stop   chan os.Signal // SIGINT, SIGTERM, SIGUSR1
}

// notifySignals starts catching the signals; release stops it.
func notifySignals() *signals {
	s := &signals{hangup: make(chan os.Signal, 1), stop: make(chan os.Signal, 1)}
	signal.Notify(s.hangup, syscall.SIGHUP)
	signal.Notify(s.stop, syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR1)
	return s
}

// release restores the signals' default actions.
func (s *signals) release() {
	signal.Stop(s.hangup)
	signal.Stop(s.stop)
}
