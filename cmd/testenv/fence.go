package testenv

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// WaitRead blocks until the process at the other end of c has read every
// byte written on c so far: c's send queue is empty and the peer socket's
// receive queue is empty, as /proc/net/tcp reports them. It is a fence
// without timing: a test that must know the server saw the first part of a
// request as a read of its own (a line without a newline, a value still
// arriving) calls it between the writes, instead of sleeping. It returns
// nil as well when the peer socket is gone (the server closed; the caller
// sees that on its next read), and an error after timeout, which is meant
// as a hang guard only. Linux only; c must be a TCP connection over
// loopback or another local address.
func WaitRead(c net.Conn, timeout time.Duration) error {
	local, err1 := addrPort(c.LocalAddr())
	remote, err2 := addrPort(c.RemoteAddr())
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 5*time.Millisecond) {
		socks, err := tcpSockets()
		if err != nil {
			return err
		}
		mine, okMine := socks[sockKey{local, remote}]
		peer, okPeer := socks[sockKey{remote, local}]
		sent := !okMine || mine.tx == 0
		if !okPeer || sent && peer.rx == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: the peer of %v did not read within %v (send queue %d, peer receive queue %d bytes)",
				local, timeout, mine.tx, peer.rx)
		}
		time.Sleep(pause)
	}
}

// Queues describes the kernel queues of both ends of c, for a failure
// message: c's send and receive queues and those of the peer socket, as
// /proc/net/tcp reports them ("gone" for a socket that no longer exists).
func Queues(c net.Conn) string {
	local, err1 := addrPort(c.LocalAddr())
	remote, err2 := addrPort(c.RemoteAddr())
	socks, err3 := tcpSockets()
	if err := errors.Join(err1, err2, err3); err != nil {
		return err.Error()
	}
	show := func(k sockKey) string {
		q, ok := socks[k]
		if !ok {
			return "gone"
		}
		return fmt.Sprintf("send queue %d, receive queue %d", q.tx, q.rx)
	}
	return fmt.Sprintf("here: %s; peer: %s", show(sockKey{local, remote}), show(sockKey{remote, local}))
}

func addrPort(a net.Addr) (netip.AddrPort, error) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("testenv: %v is not a TCP address", a)
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// sockKey is a TCP socket's local and remote address, IPv4 addresses in
// their plain form (not IPv4-mapped).
type sockKey struct{ local, remote netip.AddrPort }

// sockRow is what /proc/net/tcp says of a socket: its send queue (bytes not
// yet acknowledged), its receive queue (bytes not yet read by the
// application), whether it listens, and its inode (what /proc/PID/fd links
// name as socket:[inode]).
type sockRow struct {
	tx, rx int
	listen bool
	inode  string
}

// tcpSockets reads every TCP socket of this network namespace.
func tcpSockets() (map[sockKey]sockRow, error) {
	out := map[sockKey]sockRow{}
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) && path == "/proc/net/tcp6" {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			return nil, err
		}
		err = parseTCPTable(f, out)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

// parseTCPTable adds the sockets of one /proc/net/tcp{,6} table to out.
// A line reads "sl local rem st tx_queue:rx_queue tr:when retrnsmt uid
// timeout inode ...", st 0A for a listener, addresses as
// hex(address):hex(port), the address in 32-bit words of host byte order.
func parseTCPTable(f io.Reader, out map[sockKey]sockRow) error {
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		local, err1 := parseProcAddr(fields[1])
		remote, err2 := parseProcAddr(fields[2])
		txs, rxs, ok := strings.Cut(fields[4], ":")
		tx, err3 := strconv.ParseUint(txs, 16, 32)
		rx, err4 := strconv.ParseUint(rxs, 16, 32)
		if err := errors.Join(err1, err2, err3, err4); err != nil || !ok {
			return fmt.Errorf("line %q: %v", sc.Text(), err)
		}
		out[sockKey{local, remote}] = sockRow{tx: int(tx), rx: int(rx), listen: fields[3] == "0A", inode: fields[9]}
	}
	return sc.Err()
}

// parseProcAddr parses "0100007F:2AF8" (127.0.0.1:11000) or its 32-digit
// IPv6 form.
func parseProcAddr(s string) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	raw, err := hex.DecodeString(hexAddr)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	// Each 32-bit word is printed in host (little-endian) order.
	for w := 0; w < len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
