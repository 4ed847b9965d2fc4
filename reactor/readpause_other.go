//go:build !linux || poll_opt || tandem_portable

package reactor

import (
	"errors"

	"github.com/panjf2000/gnet/v2"
)

// The fallback for read pausing (readpause.go), which needs Linux's epoll
// and gnet's default poller. It is compiled
//   - on every other system (macOS and the BSDs, where gnet polls with
//     kqueue): there is no epoll registration to rewrite;
//   - with gnet's poll_opt tag, which keeps a pointer in each epoll
//     registration's data: rewriting it would hand gnet's poller a
//     descriptor number for a pointer;
//   - with tandem's own tandem_portable tag, which selects on Linux every
//     fallback the other systems get, so that their code paths are tested
//     on Linux (.ci/test).
//
// Pausing is off: a connection over the input caps is closed instead, and the
// server says so once at start (checkReadPausing's error).

// epolls is readpause.go's loop table, always empty here.
type epolls struct{}

func (*epolls) disable()                   {}
func (*epolls) of(gnet.EventLoop, int) int { return -1 }

var errNoReadPausing = errors.New("read pausing needs Linux epoll and gnet's default poller " +
	"(this build is for another system, or uses the poll_opt or tandem_portable tag)")

func setReading(int, int, bool) error { return errNoReadPausing }

func checkReadPausing() error { return errNoReadPausing }
