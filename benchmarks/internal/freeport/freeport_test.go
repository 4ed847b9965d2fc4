package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestGetIsBindable(t *testing.T) {
	p, err := Get()
	if err != nil {
		t.Fatal(err)
	}
	if p <= 0 || p > 65535 {
		t.Fatalf("port %d", p)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("port %d from Get is not free: %v", p, err)
	}
	ln.Close()
}
