package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSecureDefaults checks the security defaults of docs/security.md on a
// server started with no address flag: it listens on loopback only, serves
// no UDP even when asked with -U (it warns instead), and refuses shutdown.
func TestSecureDefaults(t *testing.T) {
	s := startServerArgs(t, binPath, "-p", "0", "-U", "11311", "--log-format", "json")
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if host != "127.0.0.1" {
		t.Errorf("default listen address %s, want 127.0.0.1", host)
	}
	if !strings.Contains(s.Log(), "UDP is not served") {
		t.Errorf("-U without a warning; log:\n%s", s.Log())
	}
	// The probe sees this process's own UDP socket, so a zero is meaningful.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if udpSocketsOf(t, os.Getpid()) == 0 {
		t.Fatal("udpSocketsOf does not see a UDP socket")
	}
	if udp := udpSocketsOf(t, s.pid()); udp > 0 {
		t.Errorf("the server holds %d UDP sockets", udp)
	}
	c := dial(t, s.Addr)
	want := "SERVER_ERROR: shutdown not enabled\r\n" // memcached 1.6.45 (transcript.Differences)
	if got := roundTrip(t, c, "shutdown\r\n", len(want)); got != want {
		t.Errorf("shutdown without -A: %q, want %q", got, want)
	}
	if !s.alive() {
		t.Fatal("the server stopped")
	}
}

// udpSocketsOf counts the UDP sockets among process pid's descriptors, by
// matching their inodes with /proc/net/udp and /proc/net/udp6.
func udpSocketsOf(t *testing.T, pid int) int {
	t.Helper()
	udp := map[string]bool{}
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[0] != "sl" {
				udp[fields[9]] = true
			}
		}
		fh.Close()
	}
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && udp[strings.TrimSuffix(inode, "]")] {
			n++
		}
	}
	return n
}
