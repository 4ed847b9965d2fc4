package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSignalsNotLost sends a SIGHUP and then a stop signal before either is
// read, as a loaded machine can do to the server's main goroutine: both must
// arrive. (With the one shared channel of one slot this replaced, the stop
// signal was dropped every time.)
func TestSignalsNotLost(t *testing.T) {
	for _, stop := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1} {
		t.Run(stop.String(), func(t *testing.T) {
			s := notifySignals()
			defer s.release()
			for _, sig := range []syscall.Signal{syscall.SIGHUP, stop} {
				if err := syscall.Kill(os.Getpid(), sig); err != nil {
					t.Fatal(err)
				}
			}
			hang := time.After(time.Minute) // a hang guard, not a timed assertion
			for _, ch := range []chan os.Signal{s.hangup, s.stop} {
				select {
				case got := <-ch:
					if ch == s.stop && got != stop {
						t.Fatalf("stop channel got %v, want %v", got, stop)
					}
				case <-hang:
					t.Fatalf("SIGHUP then %v: a signal never arrived (hangup pending %d, stop pending %d)", stop, len(s.hangup), len(s.stop))
				}
			}
		})
	}
}
