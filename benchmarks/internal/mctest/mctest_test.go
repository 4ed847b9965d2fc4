package mctest

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

func TestMemcachedAnswers(t *testing.T) {
	addr := Memcached(t, "-c", "64")
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("version\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "VERSION ") {
		t.Fatalf("version reply %q, %v", line, err)
	}
}
