//go:build linux && !poll_opt && !tandem_portable

package reactor

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// Read pausing, the one place that touches gnet's internals.
//
// gnet v2.9.7 reads a readable socket into the connection's inbound buffer
// whether or not OnTraffic consumes it, and has no call to stop reading. A
// client that pipelines and never reads its replies would grow that buffer
// without bound. memcached stops reading such a connection and lets TCP push
// back on the client; tandem does the same by changing the interest set of
// the connection's descriptor in its loop's epoll instance: no events while
// paused, gnet's read events again to resume.
//
// What it assumes of gnet, each checked where it can be:
//   - gnet's default poller (built without the poll_opt tag; this file is
//     not compiled with it, see readpause_pollopt.go) registers a
//     connection with epoll data = its descriptor and events = EPOLLIN|
//     EPOLLPRI, level-triggered (netpoll.ReadEvents). Checked on every
//     lookup, from the registration the kernel reports: a loop whose
//     registration differs (edge-triggered, a pointer in the data, other
//     events) gets no pausing.
//   - gnet exposes no loop's epoll descriptor: it is found once per loop in
//     /proc/self/fdinfo, which lists the descriptors registered in each
//     epoll instance ("tfd: N"); the one instance listing a connection is
//     its loop's. Ambiguous or missing: no pausing.
//   - gnet changes a connection's interest set itself only when its
//     outbound buffer fills or drains; tandem never writes through that
//     buffer, and pauses only on the loop, so the two never race.
//   - The kernel honours EPOLL_CTL_MOD as expected: checkReadPausing
//     pauses and resumes a socket pair of its own at start.
//
// Where pausing is unavailable the input caps fall back to closing the
// connection that exceeds them, and the server says so once at start.

// gnetReadEvents is the interest set gnet registers for a connection in
// level-triggered mode (netpoll.ReadEvents).
const gnetReadEvents = unix.EPOLLIN | unix.EPOLLPRI

// epolls maps each event loop to its epoll descriptor, -1 when unknown or
// when pausing is off.
type epolls struct {
	mu  sync.Mutex
	off bool                   // guarded by mu: pausing is unavailable (checkReadPausing failed)
	fds map[gnet.EventLoop]int // guarded by mu
}

// disable turns pausing off for every loop.
func (e *epolls) disable() {
	e.mu.Lock()
	e.off = true
	e.mu.Unlock()
}

// of returns the epoll descriptor of loop, looking it up from connFD (a
// connection registered in it) the first time and checking that the
// registration is the one this file assumes.
func (e *epolls) of(loop gnet.EventLoop, connFD int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.off {
		return -1
	}
	if fd, ok := e.fds[loop]; ok {
		return fd
	}
	if e.fds == nil {
		e.fds = make(map[gnet.EventLoop]int)
	}
	fd := findEpoll(connFD)
	if fd >= 0 {
		if ev, data, ok := registration(fd, connFD); !ok || ev != gnetReadEvents || data != uint64(connFD) {
			fd = -1 // not gnet's default level-triggered registration
		}
	}
	e.fds[loop] = fd
	return fd
}

// setReading enables or disables read events for fd in epoll instance ep.
func setReading(ep, fd int, on bool) error {
	ev := unix.EpollEvent{Fd: int32(fd)}
	if on {
		ev.Events = gnetReadEvents
	}
	return unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, fd, &ev)
}

// findEpoll returns the one epoll descriptor of this process in which fd is
// registered, or -1.
func findEpoll(fd int) int {
	dir, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	found := -1
	for _, de := range dir {
		n, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + de.Name()); err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		if _, _, ok := registration(n, fd); ok {
			if found >= 0 {
				return -1 // registered twice: do not guess
			}
			found = n
		}
	}
	return found
}

// registration reads how fd is registered in epoll instance ep from
// /proc/self/fdinfo ("tfd: FD events: HEX data: HEX ..."): the events
// without those the kernel always adds (EPOLLERR, EPOLLHUP), and the data.
func registration(ep, fd int) (events uint32, data uint64, ok bool) {
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(ep))
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 || string(fields[0]) != "tfd:" || string(fields[1]) != strconv.Itoa(fd) ||
			string(fields[2]) != "events:" || string(fields[4]) != "data:" {
			continue
		}
		ev, err1 := strconv.ParseUint(string(fields[3]), 16, 32)
		d, err2 := strconv.ParseUint(string(fields[5]), 16, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		return uint32(ev) &^ (unix.EPOLLERR | unix.EPOLLHUP), d, true
	}
	return 0, 0, false
}

// checkReadPausing verifies, on a socket pair and an epoll instance of its
// own registered the way gnet registers a connection, every step pausing
// takes: the lookup through /proc finds the instance and reads back the
// registration, a paused readable socket reports no event, and a resumed
// one does.
func checkReadPausing() (err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("socketpair: %w", err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	defer unix.Close(ep)
	fd := fds[0]
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Fd: int32(fd), Events: gnetReadEvents}); err != nil {
		return fmt.Errorf("epoll_ctl add: %w", err)
	}
	if got := findEpoll(fd); got != ep {
		return fmt.Errorf("/proc/self/fdinfo lookup found epoll %d, want %d", got, ep)
	}
	if ev, data, ok := registration(ep, fd); !ok || ev != gnetReadEvents || data != uint64(fd) {
		return fmt.Errorf("/proc/self/fdinfo reports events %#x data %d (ok %v), want %#x and %d", ev, data, ok, gnetReadEvents, fd)
	}
	if _, err := unix.Write(fds[1], []byte{1}); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	events := make([]unix.EpollEvent, 1)
	wait := func() (int, error) {
		for {
			n, err := unix.EpollWait(ep, events, 0)
			if err != unix.EINTR {
				return n, err
			}
		}
	}
	if n, err := wait(); n != 1 || err != nil {
		return fmt.Errorf("a readable socket reports %d events (%v), want 1", n, err)
	}
	if err := setReading(ep, fd, false); err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	if n, err := wait(); n != 0 || err != nil {
		return fmt.Errorf("a paused readable socket reports %d events (%v), want 0", n, err)
	}
	if err := setReading(ep, fd, true); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if n, err := wait(); n != 1 || err != nil || events[0].Events&unix.EPOLLIN == 0 {
		return fmt.Errorf("a resumed readable socket reports %d events (%v), want EPOLLIN", n, err)
	}
	return nil
}
