//go:build linux && poll_opt

package reactor

import (
	"errors"

	"github.com/panjf2000/gnet/v2"
)

// Built with gnet's poll_opt tag, gnet keeps a pointer in each epoll
// registration's data: rewriting a registration, as read pausing does
// (readpause.go), would hand gnet's poller a descriptor number for a
// pointer. Pausing is off; connections over the input caps are closed.

// epolls is readpause.go's loop table, always empty here.
type epolls struct{}

func (*epolls) disable()                   {}
func (*epolls) of(gnet.EventLoop, int) int { return -1 }

var errPollOpt = errors.New("built with gnet's poll_opt tag, whose epoll registrations read pausing cannot rewrite")

func setReading(int, int, bool) error { return errPollOpt }

func checkReadPausing() error { return errPollOpt }
