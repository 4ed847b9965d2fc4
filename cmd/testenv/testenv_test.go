package testenv

import (
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseTCPTable(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2AF8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:2AF8 0100007F:D431 01 00000010:000001F4 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   2: 0000000000000000FFFF00000100007F:2AF9 0000000000000000FFFF00000100007F:D432 01 00000000:00000007 00:00000000 00000000 0 0 3 1
`
	got := map[sockKey]sockRow{}
	if err := parseTCPTable(strings.NewReader(table), got); err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		name          string
		local, remote netip.AddrPort
		want          sockRow
	}{
		{"ipv4 listener", ap("127.0.0.1:11000"), ap("0.0.0.0:0"), sockRow{listen: true, inode: "1"}},
		{"ipv4 established", ap("127.0.0.1:11000"), ap("127.0.0.1:54321"), sockRow{tx: 16, rx: 500, inode: "2"}},
		{"ipv4-mapped ipv6", ap("127.0.0.1:11001"), ap("127.0.0.1:54322"), sockRow{tx: 0, rx: 7, inode: "3"}},
	} {
		q, ok := got[sockKey{tc.local, tc.remote}]
		if !ok || q != tc.want {
			t.Errorf("%s: %v -> %v = %+v (found %v), want %+v", tc.name, tc.local, tc.remote, q, ok, tc.want)
		}
	}
}

// TestWaitRead writes to a server that reads only when told: WaitRead must
// block while the bytes sit in the server's receive queue and return once
// it read them.
func TestWaitRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	readNow := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer s.Close()
		<-readNow
		_, err = io.ReadFull(s, make([]byte, 1000))
		done <- err
		_, _ = io.Copy(io.Discard, s)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := WaitRead(c, 50*time.Millisecond); err == nil {
		t.Fatal("WaitRead returned while the server had read nothing")
	}
	close(readNow)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := WaitRead(c, time.Minute); err != nil {
		t.Fatalf("after the server read everything: %v", err)
	}
}

func TestFreePort(t *testing.T) {
	p := FreePort(t)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("port %d from FreePort: %v", p, err)
	}
	ln.Close()
}

func TestStartMemcached(t *testing.T) {
	mc := StartMemcached(t)
	if !Listens(mc.Cmd.Process.Pid, mc.Addr) {
		t.Fatalf("%s is not served by memcached's pid %d", mc.Addr, mc.Cmd.Process.Pid)
	}
	c, err := net.DialTimeout("tcp", mc.Addr, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, "version\r\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("VERSION 1.6.18\r\n"))
	if _, err := io.ReadFull(c, buf); err != nil || !strings.HasPrefix(string(buf), "VERSION ") {
		t.Fatalf("memcached answered %q, %v", buf, err)
	}
}

// TestListens checks that a listener counts as process pid's only when the
// process holds it, so that StartMemcached does not take another process
// that holds the port for memcached.
func TestListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	free := net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	for _, tc := range []struct {
		name string
		pid  int
		addr string
		want bool
	}{
		{"its listener", os.Getpid(), ln.Addr().String(), true},
		{"another process's listener", other.Process.Pid, ln.Addr().String(), false},
		{"a connected socket, not a listener", os.Getpid(), c.LocalAddr().String(), false},
		{"nothing listens", os.Getpid(), free, false},
		{"no such process", 1 << 30, ln.Addr().String(), false},
		{"not an address", os.Getpid(), "127.0.0.1", false},
	} {
		if got := Listens(tc.pid, tc.addr); got != tc.want {
			t.Errorf("%s: Listens(%d, %s) = %v, want %v", tc.name, tc.pid, tc.addr, got, tc.want)
		}
	}
}
