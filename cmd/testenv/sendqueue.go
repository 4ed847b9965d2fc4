package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WaitUndelivered waits until the server's end of c, a loopback TCP
// connection (IPv4) whose client does not read, holds bytes the client has
// not taken while the client's end holds bytes it has not read: the server's
// writes are blocked on the client. It reads the queues from /proc/net/tcp
// (Linux), polling until deadline, and fails the test if the state is never
// seen: a test that needs the server's writes to block then says so instead
// of passing without them. It replaces a fixed sleep "to let the writes
// block".
func WaitUndelivered(t testing.TB, c net.Conn, deadline time.Duration) {
	t.Helper()
	client, ok1 := c.LocalAddr().(*net.TCPAddr)
	server, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		t.Fatalf("WaitUndelivered: %v is not a TCP connection", c.LocalAddr())
	}
	srvKey := procTCPKey(server) + " " + procTCPKey(client)
	cliKey := procTCPKey(client) + " " + procTCPKey(server)
	end := time.Now().Add(deadline)
	var srvTx, cliRx uint64
	for {
		q := tcpQueues(t)
		srvTx, cliRx = q[srvKey][0], q[cliKey][1]
		if srvTx > 0 && cliRx > 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the server's writes never blocked within %v: its send queue %d bytes, the client's receive queue %d", deadline, srvTx, cliRx)
		}
		time.Sleep(5 * time.Millisecond) // a poll interval, not synchronisation
	}
}

// procTCPKey is addr as /proc/net/tcp writes it: the IPv4 address as a
// little-endian hex word, then the port in hex.
func procTCPKey(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return "?"
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}

// tcpQueues maps "local remote" to the send and receive queue sizes of each
// IPv4 TCP socket.
func tcpQueues(t testing.TB) map[string][2]uint64 {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skipf("SKIPPED: socket queues are read from /proc/net/tcp: %v", err)
	}
	defer f.Close()
	m := make(map[string][2]uint64)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		tx, rx, ok := strings.Cut(f[4], ":")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(tx, 16, 64)
		b, err2 := strconv.ParseUint(rx, 16, 64)
		if err1 == nil && err2 == nil {
			m[f[1]+" "+f[2]] = [2]uint64{a, b}
		}
	}
	return m
}
