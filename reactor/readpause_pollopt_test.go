//go:build linux && poll_opt

package reactor

import "testing"

// Built with poll_opt, read pausing is off and the server says so at start.
func TestCheckReadPausingPollOpt(t *testing.T) {
	if err := checkReadPausing(); err == nil {
		t.Fatal("checkReadPausing succeeds under poll_opt, want an error")
	}
}
