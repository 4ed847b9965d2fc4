package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// nutcrackerConfig is a twemproxy pool with ketama over the given servers,
// ejecting a server after one failure and not retrying it during the test.
func nutcrackerConfig(listen string, servers []string) string {
	cfg := "tandem:\n" +
		"  listen: " + listen + "\n" +
		"  hash: md5\n" +
		"  distribution: ketama\n" +
		"  timeout: 2000\n" +
		"  auto_eject_hosts: true\n" +
		"  server_failure_limit: 1\n" +
		"  server_retry_timeout: 600000\n" +
		"  servers:\n"
	for i, s := range servers {
		cfg += fmt.Sprintf("   - %s:1 tandem%d\n", s, i)
	}
	return cfg
}

// startNutcracker runs twemproxy in front of servers and waits until it
// accepts connections. It returns the proxy's address and its stats
// address, and skips the test loudly when nutcracker is not installed.
func startNutcracker(t *testing.T, servers []string) (proxy, stats string) {
	t.Helper()
	tool := testenv.NeedTool(t, "nutcracker", "nutcracker")
	dir := t.TempDir()
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
	conf := filepath.Join(dir, "nutcracker.yml")
	if err := os.WriteFile(conf, []byte(nutcrackerConfig(listen, servers)), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "nutcracker.log")
	statsPort := testenv.FreePort(t)
	stats = net.JoinHostPort("127.0.0.1", strconv.Itoa(statsPort))
	cmd := exec.Command(tool, "-c", conf, "-o", logFile, "-v", "6",
		"-s", strconv.Itoa(statsPort), "-a", "127.0.0.1", "-i", "200",
		"-p", filepath.Join(dir, "nutcracker.pid"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			if b, err := os.ReadFile(logFile); err == nil {
				t.Logf("nutcracker log:\n%s", b)
			}
		}
	})
	deadline := time.Now().Add(time.Minute) // a hang guard
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			b, _ := os.ReadFile(logFile)
			t.Fatalf("nutcracker exited at start:\n%s", b)
		default:
		}
		if c, err := net.DialTimeout("tcp", listen, 200*time.Millisecond); err == nil {
			c.Close()
			return listen, stats
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("nutcracker did not start listening")
	return "", ""
}

// proxyEjects reads the pool's server_ejects counter from twemproxy's stats
// port (a JSON document per connection).
func proxyEjects(statsAddr string) (int, error) {
	c, err := net.DialTimeout("tcp", statsAddr, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return 0, err
	}
	var doc struct {
		Pool struct {
			ServerEjects int `json:"server_ejects"`
		} `json:"tandem"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return 0, fmt.Errorf("stats %q: %w", b, err)
	}
	return doc.Pool.ServerEjects, nil
}

// curItems reads curr_items from a tandem instance.
func curItems(t *testing.T, addr string) int {
	t.Helper()
	for _, kv := range opsStats(t, addr, "") {
		if kv[0] == "curr_items" {
			n, err := strconv.Atoi(kv[1])
			if err != nil {
				t.Fatalf("curr_items %q: %v", kv[1], err)
			}
			return n
		}
	}
	t.Fatalf("%s: no curr_items", addr)
	return 0
}

// TestTwemproxyKetama puts twemproxy (nutcracker) with ketama in front of
// three tandem instances, one per mode: keys spread over all three, and
// after one instance dies the proxy ejects it and traffic continues on the
// other two.
func TestTwemproxyKetama(t *testing.T) {
	testenv.NeedTool(t, "nutcracker", "nutcracker")
	var backends []*server
	var addrs []string
	for _, mode := range modes {
		s := startServer(t, mode, "-t", "2")
		backends = append(backends, s)
		addrs = append(addrs, s.Addr)
	}
	proxy, proxyStats := startNutcracker(t, addrs)
	mc := memcache.New(proxy)
	mc.Timeout = 3 * time.Second

	const keys = 300
	key := func(i int) string { return "user:" + strconv.Itoa(i) }
	for i := range keys {
		if err := mc.Set(&memcache.Item{Key: key(i), Value: []byte("v" + strconv.Itoa(i))}); err != nil {
			t.Fatalf("set %s through the proxy: %v", key(i), err)
		}
	}
	for i := range keys {
		it, err := mc.Get(key(i))
		if err != nil || string(it.Value) != "v"+strconv.Itoa(i) {
			t.Fatalf("get %s through the proxy: %v, %v", key(i), it, err)
		}
	}
	total := 0
	for i, s := range backends {
		n := curItems(t, s.Addr)
		t.Logf("backend %d (%s): %d items", i, modes[i], n)
		if n < keys/10 {
			t.Errorf("backend %d holds %d of %d keys: ketama did not spread them", i, n, keys)
		}
		total += n
	}
	if total != keys {
		t.Errorf("backends hold %d items in all, want %d", total, keys)
	}

	// Kill one backend. Its keys fail until twemproxy ejects it (one
	// failure with server_failure_limit 1), then map onto the others.
	dead := backends[1]
	dead.Kill()
	var failures, streak int
	deadline := time.Now().Add(time.Minute) // a hang guard
	const wantStreak = 2 * keys             // every key, set and read back, twice over
	for i := 0; streak < wantStreak; i++ {
		if time.Now().After(deadline) || i > 20*keys {
			t.Fatalf("no run of %d successful operations after killing a backend (%d failures, last streak %d)",
				wantStreak, failures, streak)
		}
		k := key(i % keys)
		err := mc.Set(&memcache.Item{Key: k, Value: []byte("after")})
		if err == nil {
			var it *memcache.Item
			it, err = mc.Get(k)
			if err == nil && string(it.Value) != "after" {
				err = fmt.Errorf("read back %q", it.Value)
			}
		}
		if err != nil {
			if errors.Is(err, memcache.ErrNoServers) {
				t.Fatalf("client has no servers: %v", err)
			}
			failures++
			streak = 0
			continue
		}
		streak++
	}
	t.Logf("%d failed operations before the dead backend was ejected", failures)
	// twemproxy publishes its stats every -i 200 ms.
	ejects, err := 0, error(nil)
	for end := time.Now().Add(time.Minute); ejects == 0 && time.Now().Before(end); {
		if ejects, err = proxyEjects(proxyStats); ejects == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if ejects != 1 {
		t.Errorf("twemproxy server_ejects = %d (%v), want 1", ejects, err)
	}
	if failures > 20 {
		t.Errorf("%d operations failed before ejection, want a handful (server_failure_limit 1)", failures)
	}
	alive := curItems(t, backends[0].Addr) + curItems(t, backends[2].Addr)
	if alive < keys {
		t.Errorf("surviving backends hold %d items after every key was rewritten, want >= %d", alive, keys)
	}
}
