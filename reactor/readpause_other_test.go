//go:build !linux || poll_opt || tandem_portable

package reactor

import "testing"

// Without Linux epoll (another system, poll_opt or tandem_portable) read
// pausing is off and the server says so at start.
func TestCheckReadPausingFallback(t *testing.T) {
	if err := checkReadPausing(); err == nil {
		t.Fatal("checkReadPausing succeeds in the fallback build, want an error")
	}
}
