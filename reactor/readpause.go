package reactor

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// Read pausing: gnet v2.9.7 reads a readable socket into the connection's
// inbound buffer whether or not OnTraffic consumes it, and has no call to
// stop reading. A connection that sends faster than its requests can run (a
// client that pipelines and never reads its replies) would grow that buffer
// without bound. memcached stops reading such a connection and lets TCP push
// back on the client; tandem does the same by changing the interest set of
// the connection's descriptor in its loop's epoll instance: no EPOLLIN while
// paused, EPOLLIN|EPOLLPRI (gnet's level-triggered read events) again to
// resume.
//
// gnet does not expose a loop's epoll descriptor, so it is found once per
// loop from /proc/self/fdinfo, which lists the descriptors registered in each
// epoll instance ("tfd: N"): the instance that lists a connection's
// descriptor is its loop's. Pausing is only ever done on the loop itself
// while the connection is open, so it cannot race gnet's own registration
// changes: gnet changes a connection's interest set only when its outbound
// buffer fills or drains, and tandem never writes through that buffer.
//
// Without /proc (or if the lookup is ambiguous) pausing is unavailable and
// the input caps fall back to closing the connection that exceeds them.

// gnetReadEvents is the interest set gnet registers for a connection in
// level-triggered mode (netpoll.ReadEvents).
const gnetReadEvents = unix.EPOLLIN | unix.EPOLLPRI

// epolls maps each event loop to its epoll descriptor, -1 when unknown.
type epolls struct {
	mu  sync.Mutex
	fds map[gnet.EventLoop]int // guarded by mu
}

// of returns the epoll descriptor of loop, looking it up from connFD (a
// connection registered in it) the first time.
func (e *epolls) of(loop gnet.EventLoop, connFD int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if fd, ok := e.fds[loop]; ok {
		return fd
	}
	if e.fds == nil {
		e.fds = make(map[gnet.EventLoop]int)
	}
	fd := findEpoll(connFD)
	e.fds[loop] = fd
	return fd
}

// findEpoll returns the one epoll descriptor of this process in which fd is
// registered, or -1.
func findEpoll(fd int) int {
	dir, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	want := []byte("tfd: ")
	found := -1
	for _, de := range dir {
		n, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + de.Name()); err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		if epollLists(n, fd, want) {
			if found >= 0 {
				return -1 // registered twice: do not guess
			}
			found = n
		}
	}
	return found
}

// epollLists reports whether the fdinfo of epoll descriptor ep lists fd.
func epollLists(ep, fd int, prefix []byte) bool {
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(ep))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		fields := bytes.Fields(line[len(prefix):])
		if len(fields) > 0 && string(fields[0]) == strconv.Itoa(fd) {
			return true
		}
	}
	return false
}

// setReading enables or disables read events for fd in epoll instance ep.
func setReading(ep, fd int, on bool) error {
	ev := unix.EpollEvent{Fd: int32(fd)}
	if on {
		ev.Events = gnetReadEvents
	}
	return unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, fd, &ev)
}
