package testenv

import (
	"io"
	"net"
	"net/netip"
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
	got := map[sockKey]queues{}
	if err := parseTCPTable(strings.NewReader(table), got); err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		name          string
		local, remote netip.AddrPort
		want          queues
	}{
		{"ipv4 established", ap("127.0.0.1:11000"), ap("127.0.0.1:54321"), queues{tx: 16, rx: 500}},
		{"ipv4-mapped ipv6", ap("127.0.0.1:11001"), ap("127.0.0.1:54322"), queues{tx: 0, rx: 7}},
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
	if !ServedBy(mc.Addr, mc.Pid) {
		t.Fatalf("%s is not served by memcached's pid %d", mc.Addr, mc.Pid)
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

// TestServedBy checks that a listener counts as process pid's only when its
// stats name that pid, so that StartMemcached does not take another
// process that holds the port for memcached.
func TestServedBy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		want  bool
	}{
		{"its pid", "STAT pid 4242\r\nSTAT uptime 1\r\nEND\r\n", true},
		{"its pid after other stats", "STAT uptime 1\r\nSTAT pid 4242\r\nEND\r\n", true},
		{"another pid", "STAT pid 42\r\nEND\r\n", false},
		{"a pid with the same prefix", "STAT pid 42421\r\nEND\r\n", false},
		{"no pid", "STAT uptime 1\r\nEND\r\n", false},
		{"not memcached", "ERROR\r\n", false},
		{"closes", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_, _ = c.Read(make([]byte, 64))
				_, _ = io.WriteString(c, tc.reply)
			}()
			if got := ServedBy(ln.Addr().String(), 4242); got != tc.want {
				t.Fatalf("ServedBy = %v, want %v", got, tc.want)
			}
		})
	}
	if ServedBy("127.0.0.1:1", 4242) {
		t.Fatal("ServedBy with nothing listening = true")
	}
}
