package main

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

func TestDedupeListen(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"repeated", []string{"0.0.0.0", "0.0.0.0"}, []string{"0.0.0.0"}},
		{"port spelled out", []string{"127.0.0.1", "127.0.0.1:11211"}, []string{"127.0.0.1"}},
		{"other port", []string{"127.0.0.1", "127.0.0.1:11212"}, []string{"127.0.0.1", "127.0.0.1:11212"}},
		{"other kind", []string{"127.0.0.1", "notls:127.0.0.1"}, []string{"127.0.0.1", "notls:127.0.0.1"}},
		{"ipv6", []string{"::1", "[::1]:11211", "[::1]"}, []string{"::1"}},
		{"bad kept", []string{"1.2.3.4:x", "1.2.3.4:x"}, []string{"1.2.3.4:x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := dedupeListen(tc.in, 11211); !slices.Equal(got, tc.want) {
				t.Errorf("dedupeListen(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestListenEnvAndRepeatedListen runs what a compose file written for
// memcached does with tandem's container image: the image's default
// address (TANDEM_LISTEN) applies only without -l, and a repeated -l is
// one listener, as memcached 1.6.18 takes it ("stats settings" inter
// compared with memcached's).
func TestListenEnvAndRepeatedListen(t *testing.T) {
	start := func(t *testing.T, env string, args ...string) *server {
		cmd := exec.Command(binPath, append(args, "--log-format", "json")...)
		cmd.Env = append(os.Environ(), listenEnv+"="+env)
		return startServerCmd(t, cmd)
	}
	t.Run("repeated -l", func(t *testing.T) {
		mc := testenv.StartMemcached(t, "-l", "127.0.0.1")
		mst, err := serverStats(mc.Addr, "settings")
		if err != nil {
			t.Fatal(err)
		}
		port := testenv.FreePort(t)
		s := start(t, "127.0.0.1", "-p", strconv.Itoa(port), "-l", "127.0.0.1", "-l", "127.0.0.1")
		st, err := serverStats(s.Addr, "settings")
		if err != nil {
			t.Fatal(err)
		}
		if st["inter"] != mst["inter"] {
			t.Errorf("-l 127.0.0.1 -l 127.0.0.1: inter %q, memcached %q", st["inter"], mst["inter"])
		}
	})
	t.Run("-l replaces the image default", func(t *testing.T) {
		port := strconv.Itoa(testenv.FreePort(t))
		s := start(t, "127.0.0.2", "-p", port, "-l", "127.0.0.1")
		if c, err := net.DialTimeout("tcp", "127.0.0.2:"+port, time.Second); err == nil {
			c.Close()
			t.Errorf("listening on %s's 127.0.0.2 although -l was given:\n%s", listenEnv, s.Log())
		}
		if s.Addr != "127.0.0.1:"+port {
			t.Errorf("listening on %s, want 127.0.0.1:%s", s.Addr, port)
		}
	})
	t.Run("image default without -l", func(t *testing.T) {
		port := strconv.Itoa(testenv.FreePort(t))
		s := start(t, "127.0.0.2", "-p", port)
		if s.Addr != "127.0.0.2:"+port {
			t.Errorf("listening on %s, want %s's 127.0.0.2:%s", s.Addr, listenEnv, port)
		}
	})
}
