package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	mc "github.com/couchbase/gomemcached/client"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// tlsClient is gomemcache over TLS, as its documentation shows: a
// tls.Dialer's DialContext.
func tlsClient(addr string, cfg *tls.Config) *memcache.Client {
	c := memcache.New(addr)
	c.Timeout = 10 * time.Second
	c.DialContext = (&tls.Dialer{Config: cfg}).DialContext
	return c
}

// TestTLSClients serves TLS on one listener and plaintext on a notls: one,
// in every mode: gomemcache works over TLS and shares the cache with the
// plaintext listener; a plaintext client on the TLS port is closed, counted;
// stats, stats settings and stats conns say TLS.
func TestTLSClients(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		p := newTestPKI(t)
		s := startServer(t, mode, append(p.serverFlags(), "-l", "notls:127.0.0.1")...)
		tlsAddrs, plain := s.listening(t)
		if len(tlsAddrs) != 1 || len(plain) != 1 {
			t.Fatalf("listening on TLS %v and plaintext %v, want one each", tlsAddrs, plain)
		}
		ta := tlsAddrs[0]

		c := tlsClient(ta, p.clientConfig(""))
		if err := c.Set(&memcache.Item{Key: "k", Value: []byte("over tls"), Flags: 7}); err != nil {
			t.Fatalf("set over TLS: %v", err)
		}
		it, err := c.Get("k")
		if err != nil || string(it.Value) != "over tls" || it.Flags != 7 {
			t.Fatalf("get over TLS = %+v, %v", it, err)
		}
		big := strings.Repeat("v", 300<<10) // several TLS records
		if err := c.Set(&memcache.Item{Key: "big", Value: []byte(big)}); err != nil {
			t.Fatal(err)
		}
		m, err := c.GetMulti([]string{"k", "big", "missing"})
		if err != nil || len(m) != 2 || string(m["big"].Value) != big {
			t.Fatalf("get multi over TLS: %d items, %v", len(m), err)
		}
		if n, err := c.Increment("n", 1); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("incr missing = %d, %v", n, err)
		}
		if err := c.Delete("k"); err != nil {
			t.Fatal(err)
		}

		// The plaintext listener serves the same cache.
		pc := newClient(plain[0])
		if it, err := pc.Get("big"); err != nil || len(it.Value) != len(big) {
			t.Fatalf("plaintext get of a TLS-set item: %v", err)
		}

		// Plaintext on the TLS port: closed without a reply, not left hanging.
		raw := dial(t, ta)
		if _, err := io.WriteString(raw, "get big\r\n"); err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(raw); len(b) != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
			t.Fatalf("plaintext on the TLS port read %q, %v; want it closed", b, err)
		}

		st := tlsStats(t, ta, p.clientConfig(""), "")
		if statUint(t, st, "ssl_handshake_errors") < 1 {
			t.Errorf("ssl_handshake_errors = %s after a plaintext client on the TLS port", st["ssl_handshake_errors"])
		}
		for _, f := range []string{"ssl_proto_errors", "time_since_server_cert_refresh"} {
			if _, ok := st[f]; !ok {
				t.Errorf("stats lacks %s", f)
			}
		}
		if _, ok := st["ssl_new_sessions"]; ok {
			t.Errorf("ssl_new_sessions without ssl_session_cache (memcached prints it only with)")
		}
		set := tlsStats(t, ta, p.clientConfig(""), "settings")
		for k, want := range map[string]string{"ssl_enabled": "yes", "ssl_chain_cert": p.file("server.pem"), "ssl_min_version": "tlsv1.2",
			"ssl_verify_mode": "0", "ssl_session_cache": "no", "inter": "127.0.0.1,notls:127.0.0.1"} {
			if set[k] != want {
				t.Errorf("stats settings %s = %q, want %q", k, set[k], want)
			}
		}
		conns := tlsStats(t, ta, p.clientConfig(""), "conns")
		marks := map[string]int{}
		for k, v := range conns {
			if strings.HasSuffix(k, ":tls") {
				marks[v]++
			}
		}
		if marks["TLSv1.3"] < 1 || marks["yes"] != 1 {
			t.Errorf("stats conns TLS marks %v, want the TLS listener (yes) and this connection (TLSv1.3):\n%v", marks, conns)
		}
	})
}

// pythonWithPymemcache returns a Python that imports pymemcache (Debian's
// python3-pymemcache), or skips (fails under TANDEM_REQUIRE_TOOLS).
func pythonWithPymemcache(t *testing.T) string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if err := exec.Command(py, "-c", "import pymemcache").Run(); err == nil {
			return py
		}
	}
	if os.Getenv(testenv.RequireToolsEnv) != "" {
		t.Fatalf("pymemcache not importable (Debian package python3-pymemcache) but %s is set: .ci/test installs it", testenv.RequireToolsEnv)
	}
	t.Skip("SKIPPED: pymemcache not installed (Debian package python3-pymemcache)")
	return ""
}

// pymemcacheTLS drives pymemcache's tls_context against a TLS listener.
const pymemcacheTLS = `
import ssl, sys
from pymemcache.client.base import Client
host, port = sys.argv[1].rsplit(":", 1)
ctx = ssl.create_default_context(cafile=sys.argv[2])
c = Client((host, int(port)), tls_context=ctx, connect_timeout=30, timeout=30)
c.set("py", b"hello", expire=0)
assert c.get("py") == b"hello", c.get("py")
c.set_many({"a": b"1", "b": b"2"})
got = c.get_many(["a", "b", "zz"])
assert got == {"a": b"1", "b": b"2"}, got
assert c.incr("cnt", 1) is None
print("ok", ctx.wrap_socket.__name__, c.version().decode())
`

// TestTLSPymemcache drives pymemcache (tls_context) in every mode.
func TestTLSPymemcache(t *testing.T) {
	py := pythonWithPymemcache(t)
	forModes(t, func(t *testing.T, mode string) {
		p := newTestPKI(t)
		s := startServer(t, mode, p.serverFlags()...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, py, "-c", pymemcacheTLS, s.Addr, p.file("ca.pem")).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok ") {
			t.Fatalf("pymemcache over TLS: %v\n%s", err, out)
		}
	})
}

// sClient runs openssl s_client against addr with args, sends input (LF
// lines, sent as CRLF) and returns its output; the server's "quit" reply
// (a close) ends it.
func sClient(t *testing.T, addr, input string, args ...string) (string, error) {
	t.Helper()
	openssl := testenv.NeedTool(t, "openssl", "openssl")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := append([]string{"s_client", "-connect", addr, "-brief", "-crlf", "-ign_eof"}, args...)
	cmd := exec.CommandContext(ctx, openssl, all...)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestTLSOpenSSL checks handshakes with openssl s_client: protocol versions
// (TLS 1.2 minimum by default, ssl_min_version), ssl_ciphers, client
// certificates per ssl_verify_mode and the mtls: listener, and that a
// renegotiation attempt closes the connection and counts a protocol error.
func TestTLSOpenSSL(t *testing.T) {
	p := newTestPKI(t)
	ca := p.file("ca.pem")
	p.leaf("client", "tandem client", time.Now().Add(time.Hour))
	other := newTestPKI(t) // a CA the server does not trust
	other.leaf("stranger", "stranger", time.Now().Add(time.Hour))
	served := func(out string) bool { return strings.Contains(out, "VERSION ") }
	const req = "version\nquit\n"

	t.Run("versions", func(t *testing.T) {
		forModes(t, func(t *testing.T, mode string) {
			s := startServer(t, mode, p.serverFlags()...)
			for _, v := range []string{"-tls1_2", "-tls1_3"} {
				if out, err := sClient(t, s.Addr, req, v, "-CAfile", ca, "-verify_return_error"); err != nil || !served(out) {
					t.Errorf("s_client %s: %v\n%s", v, err, out)
				}
			}
			if out, _ := sClient(t, s.Addr, req, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"); served(out) {
				t.Errorf("TLS 1.1 served; the minimum is TLS 1.2:\n%s", out)
			}
		})
	})
	t.Run("min version 1.3", func(t *testing.T) {
		s := startServer(t, "goroutine", p.serverFlags("ssl_min_version=3")...)
		if out, _ := sClient(t, s.Addr, req, "-tls1_2"); served(out) {
			t.Errorf("TLS 1.2 served with ssl_min_version=3:\n%s", out)
		}
		if out, err := sClient(t, s.Addr, req, "-tls1_3", "-CAfile", ca); err != nil || !served(out) {
			t.Errorf("TLS 1.3: %v\n%s", err, out)
		}
	})
	t.Run("ciphers", func(t *testing.T) {
		s := startServer(t, "pool", p.serverFlags("ssl_ciphers=ECDHE-ECDSA-AES256-GCM-SHA384")...)
		if out, err := sClient(t, s.Addr, req, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"); err != nil || !served(out) {
			t.Errorf("the configured suite: %v\n%s", err, out)
		}
		if out, _ := sClient(t, s.Addr, req, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"); served(out) {
			t.Errorf("a suite not in ssl_ciphers was served:\n%s", out)
		}
	})
	t.Run("verify modes", func(t *testing.T) {
		for _, tc := range []struct {
			mode                    string
			none, good, wrongSigner bool // served?
		}{
			{"0", true, true, true},
			{"1", true, true, false},
			{"2", false, true, false},
			{"3", false, true, false},
		} {
			s := startServer(t, "inline", p.serverFlags("ssl_verify_mode="+tc.mode, "ssl_ca_cert="+ca)...)
			for _, c := range []struct {
				name string
				args []string
				want bool
			}{
				{"no certificate", nil, tc.none},
				{"certificate of the CA", []string{"-cert", p.file("client.pem"), "-key", p.file("client-key.pem")}, tc.good},
				{"certificate of another CA", []string{"-cert", other.file("stranger.pem"), "-key", other.file("stranger-key.pem")}, tc.wrongSigner},
			} {
				out, _ := sClient(t, s.Addr, req, c.args...)
				if served(out) != c.want {
					t.Errorf("ssl_verify_mode=%s, %s: served %v, want %v\n%s", tc.mode, c.name, served(out), c.want, out)
				}
			}
		}
	})
	t.Run("mtls listener", func(t *testing.T) {
		s := startServerArgs(t, binPath, append(p.serverFlags("ssl_ca_cert="+ca), "-p", "0", "-l", "127.0.0.1,mtls:127.0.0.1", "--log-format", "json")...)
		tlsAddrs, _ := s.listening(t)
		if len(tlsAddrs) != 2 {
			t.Fatalf("TLS listeners %v, want 2", tlsAddrs)
		}
		if rejected, d := tlsRejected(t, tlsAddrs[0], p.clientConfig("")); rejected {
			t.Errorf("plain -Z listener refused a client without a certificate: %s", d)
		}
		if rejected, _ := tlsRejected(t, tlsAddrs[1], p.clientConfig("")); !rejected {
			t.Errorf("mtls: listener served a client without a certificate")
		}
		if rejected, d := tlsRejected(t, tlsAddrs[1], p.clientConfig("client")); rejected {
			t.Errorf("mtls: listener refused a good client certificate: %s", d)
		}
	})
	t.Run("renegotiation", func(t *testing.T) {
		s := startServer(t, "pool", p.serverFlags()...)
		openssl := testenv.NeedTool(t, "openssl", "openssl")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Without -ign_eof (which -quiet and -brief imply) s_client takes
		// "R" as its renegotiate command.
		cmd := exec.CommandContext(ctx, openssl, "s_client", "-connect", s.Addr, "-crlf", "-tls1_2")
		in, _ := cmd.StdinPipe()
		outp, _ := cmd.StdoutPipe()
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(outp)
		_, _ = io.WriteString(in, "version\n")
		for { // past the session details s_client prints
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("before renegotiating: %v", err)
			}
			if strings.HasPrefix(line, "VERSION ") {
				break
			}
		}
		_, _ = io.WriteString(in, "R\n")
		rest, _ := io.ReadAll(r) // ends when the server closes
		in.Close()
		_ = cmd.Wait()
		if strings.Contains(string(rest), "VERSION") {
			t.Errorf("served after a renegotiation attempt: %q", rest)
		}
		st := tlsStats(t, s.Addr, p.clientConfig(""), "")
		if statUint(t, st, "ssl_proto_errors") != 1 {
			t.Errorf("ssl_proto_errors = %s after a renegotiation attempt, want 1", st["ssl_proto_errors"])
		}
	})
}

// TestTLSRotation replaces the certificate files and reloads them with
// refresh_certs, then with SIGHUP, in every mode: new connections get the
// new certificate, an open connection keeps working; a broken file is
// refused with memcached's message and the previous certificate stays.
func TestTLSRotation(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		p := newTestPKI(t)
		p.leaf("server", "first", time.Now().Add(24*time.Hour))
		s := startServer(t, mode, append(p.serverFlags(), "--metrics-listen", "127.0.0.1:0")...)
		old := mustHandshake(t, s.Addr, p.clientConfig(""))
		oldR := bufio.NewReader(old)
		if cn := peerCN(old); cn != "first" {
			t.Fatalf("first certificate CN %q", cn)
		}
		tlsRoundTrip(t, old, oldR, "set k 0 0 1\r\nx\r\n", "STORED")

		// refresh_certs.
		p.leaf("server", "second", time.Now().Add(48*time.Hour))
		if got := tlsRoundTrip(t, old, oldR, "refresh_certs\r\n", "OK"); got != "OK\r\n" {
			t.Fatalf("refresh_certs: %q", got)
		}
		if cn := peerCN(mustHandshake(t, s.Addr, p.clientConfig(""))); cn != "second" {
			t.Errorf("after refresh_certs a new connection got %q, want second", cn)
		}
		if got := tlsRoundTrip(t, old, oldR, "get k\r\n", "END"); got != "VALUE k 0 1\r\nx\r\nEND\r\n" {
			t.Errorf("the connection opened before the refresh: %q", got)
		}

		// SIGHUP.
		p.leaf("server", "third", time.Now().Add(72*time.Hour))
		if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if !waitFor(time.Minute, func() bool { return strings.Contains(s.Log(), `"trigger":"SIGHUP"`) }) {
			t.Fatalf("no reload logged after SIGHUP:\n%s", s.Log())
		}
		if cn := peerCN(mustHandshake(t, s.Addr, p.clientConfig(""))); cn != "third" {
			t.Errorf("after SIGHUP a new connection got %q, want third", cn)
		}
		if got := tlsRoundTrip(t, old, oldR, "get k\r\n", "END"); got != "VALUE k 0 1\r\nx\r\nEND\r\n" {
			t.Errorf("the connection opened before SIGHUP: %q", got)
		}

		// The expiry metric follows the served certificate.
		third, err := tls.LoadX509KeyPair(p.file("server.pem"), p.file("server-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		got := scrapeMetric(t, s, "tandem_tls_cert_expiry_timestamp_seconds")
		if f, err := strconv.ParseFloat(got, 64); err != nil || int64(f) != third.Leaf.NotAfter.Unix() {
			t.Errorf("tandem_tls_cert_expiry_timestamp_seconds = %s, want %d", got, third.Leaf.NotAfter.Unix())
		}

		// A broken key file: memcached's error line, the third certificate stays.
		if err := os.WriteFile(p.file("server-key.pem"), []byte("not a key"), 0o600); err != nil {
			t.Fatal(err)
		}
		got = tlsRoundTrip(t, old, oldR, "refresh_certs\r\nmn\r\n", "MN")
		if !strings.HasPrefix(got, "Error loading the key: "+p.file("server-key.pem")+" : ") {
			t.Errorf("refresh_certs with a broken key: %q", got)
		}
		if cn := peerCN(mustHandshake(t, s.Addr, p.clientConfig(""))); cn != "third" {
			t.Errorf("after a failed refresh a new connection got %q, want third", cn)
		}
	})
}

// scrapeMetric returns the value of an unlabelled metric from the server's
// metrics endpoint (logged as "metrics listening").
func scrapeMetric(t *testing.T, s *server, name string) string {
	t.Helper()
	m := regexp.MustCompile(`"addr":"([^"]+)"[^\n]*"message":"metrics listening"`).FindStringSubmatch(s.Log())
	if m == nil {
		t.Fatalf("no metrics address logged:\n%s", s.Log())
	}
	cl := &http.Client{Timeout: time.Minute}
	resp, err := cl.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	v := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(string(body))
	if v == nil {
		t.Fatalf("no %s in the metrics:\n%s", name, body)
	}
	return v[1]
}

// TestTLSStartErrors: a missing or broken certificate file stops the start
// with a message naming the file (exit status 1, as other start failures);
// settings TLS cannot serve are a wrong command line (2).
func TestTLSStartErrors(t *testing.T) {
	p := newTestPKI(t)
	cert, key := p.leaf("server", "s", time.Now().Add(time.Hour))
	_, otherKey := p.leaf("other", "o", time.Now().Add(time.Hour))
	missing := filepath.Join(p.dir, "missing.pem")
	junk := p.write("junk.pem", []byte("junk"))
	z := func(opts string) []string { return []string{"-p", "0", "-Z", "-o", opts} }
	for _, tc := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"missing chain", z("ssl_chain_cert=" + missing + ",ssl_key=" + key), 1, "ssl_chain_cert " + missing},
		{"junk chain", z("ssl_chain_cert=" + junk + ",ssl_key=" + key), 1, "ssl_chain_cert " + junk},
		{"missing key", z("ssl_chain_cert=" + cert + ",ssl_key=" + missing), 1, "ssl_key " + missing},
		{"key of another certificate", z("ssl_chain_cert=" + cert + ",ssl_key=" + otherKey), 1, "does not match"},
		{"missing CA", z("ssl_chain_cert=" + cert + ",ssl_key=" + key + ",ssl_ca_cert=" + missing), 1, "ssl_ca_cert " + missing},
		{"DER expected", z("ssl_chain_cert=" + cert + ",ssl_key=" + key + ",ssl_keyformat=2"), 1, "ssl_key " + key},
		{"no key given", z("ssl_chain_cert=" + cert), 2, "ssl_key=FILE"},
		{"verify without CA", z("ssl_chain_cert=" + cert + ",ssl_key=" + key + ",ssl_verify_mode=2"), 2, "ssl_ca_cert=FILE"},
		{"TLS 1.1", z("ssl_chain_cert=" + cert + ",ssl_key=" + key + ",ssl_min_version=1"), 2, "TLS 1.2 and 1.3 only"},
		{"bad verify mode", z("ssl_chain_cert=" + cert + ",ssl_key=" + key + ",ssl_verify_mode=4"), 2, "ssl_verify_mode"},
		{"unknown ciphers", z("ssl_chain_cert=" + cert + ",ssl_key=" + key + ",ssl_ciphers=bogus"), 2, "ssl_ciphers"},
		{"mtls without -Z", []string{"-p", "0", "-l", "mtls:127.0.0.1"}, 2, "needs TLS on (-Z)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runTandem(t, append(tc.args, "--log-format", "json")...)
			if code != tc.code || !strings.Contains(stderr, tc.say) {
				t.Fatalf("tandem %q: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.say)
			}
		})
	}
}

// TestTLSOptionWarnings: ssl_kernel_tls and ssl_wbuf_size are accepted with
// a warning; ssl_* keys without -Z are ignored with one; stats settings
// shows them as memcached does.
func TestTLSOptionWarnings(t *testing.T) {
	p := newTestPKI(t)
	s := startServer(t, "goroutine", p.serverFlags("ssl_kernel_tls", "ssl_wbuf_size=32", "ssl_session_cache", "ssl_keyformat=1")...)
	for _, w := range []string{"-o ssl_kernel_tls: ", "-o ssl_wbuf_size: "} {
		if n := strings.Count(s.Log(), `"message":"`+w); n != 1 {
			t.Errorf("%d warnings %q, want 1", n, w)
		}
	}
	set := tlsStats(t, s.Addr, p.clientConfig(""), "settings")
	for k, want := range map[string]string{"ssl_kernel_tls": "yes", "ssl_wbuf_size": "32768", "ssl_session_cache": "yes", "ssl_keyformat": "1"} {
		if set[k] != want {
			t.Errorf("stats settings %s = %q, want %q", k, set[k], want)
		}
	}
	// ssl_session_cache: a client resumes, ssl_new_sessions counts the
	// full handshakes only; without it, no client resumes.
	resumes := func(addr string) (resumed int) {
		cfg := p.clientConfig("")
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		for i := 0; i < 3; i++ {
			c := mustHandshake(t, addr, cfg)
			// The TLS 1.3 ticket arrives after the handshake: read a reply.
			tlsRoundTrip(t, c, bufio.NewReader(c), "version\r\n", "VERSION "+protocolVersion)
			if c.ConnectionState().DidResume {
				resumed++
			}
			c.Close()
		}
		return resumed
	}
	if n := resumes(s.Addr); n != 2 {
		t.Errorf("with ssl_session_cache %d of 3 connections resumed, want 2", n)
	}
	st := tlsStats(t, s.Addr, p.clientConfig(""), "")
	// The two stats connections (settings above, this one) and the first
	// of the three were full handshakes.
	if got := st["ssl_new_sessions"]; got != "3" {
		t.Errorf("ssl_new_sessions = %q, want 3", got)
	}
	noCache := startServer(t, "pool", p.serverFlags()...)
	if n := resumes(noCache.Addr); n != 0 {
		t.Errorf("without ssl_session_cache %d connections resumed", n)
	}

	off := startServer(t, "goroutine", "-o", "ssl_chain_cert=/nonexistent")
	if !strings.Contains(off.Log(), "TLS is off (no -Z); ignored") {
		t.Errorf("no warning for ssl_* keys without -Z:\n%s", off.Log())
	}
}

// TestTLSSASL authenticates over TLS: memcached's -Y text authentication and
// binary SASL (-S), in every mode.
func TestTLSSASL(t *testing.T) {
	auth := writeAuthFile(t)
	forModes(t, func(t *testing.T, mode string) {
		p := newTestPKI(t)
		s := startServer(t, mode, append(p.serverFlags(), "-S", "-Y", auth)...)
		c := mustHandshake(t, s.Addr, p.clientConfig(""))
		r := bufio.NewReader(c)
		if got := tlsRoundTrip(t, c, r, "get k\r\n", "CLIENT_ERROR unauthenticated"); got != "CLIENT_ERROR unauthenticated\r\n" {
			t.Fatalf("before authenticating: %q", got)
		}
		if got := tlsRoundTrip(t, c, r, "set a 0 0 11\r\nbob builder\r\n", "STORED"); got != "STORED\r\n" {
			t.Fatalf("text authentication over TLS: %q", got)
		}
		if got := tlsRoundTrip(t, c, r, "version\r\n", "VERSION "+protocolVersion); !strings.HasPrefix(got, "VERSION") {
			t.Fatalf("after authenticating: %q", got)
		}

		bc, err := mc.ConnectTLS("tcp", s.Addr, p.clientConfig(""))
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		if res, err := bc.Auth("alice", "wonder land"); err != nil {
			t.Fatalf("binary SASL over TLS: %v %v", res, err)
		}
		if _, err := bc.Set(0, "b", 0, 0, []byte("v")); err != nil {
			t.Fatalf("binary set after SASL over TLS: %v", err)
		}
	})
}

// TestTLSHandshakeDeadline: clients that connect to the TLS port and never
// finish a handshake (a slowloris) are closed at --tls-handshake-timeout
// and counted; they hold at most -c connections meanwhile, and a real
// client gets in once they are gone.
func TestTLSHandshakeDeadline(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		p := newTestPKI(t)
		s := startServer(t, mode, append(p.serverFlags(), "--tls-handshake-timeout", "2s", "-c", "20", "-l", "notls:127.0.0.1")...)
		_, plain := s.listening(t)
		const n = 30
		closed := make(chan string, n)
		for i := 0; i < n; i++ {
			c, err := net.DialTimeout("tcp", s.Addr, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if i%2 == 0 {
				_, _ = c.Write([]byte{0x16, 0x03, 0x01}) // the start of a record, never finished
			}
			go func() {
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute)) // a hang guard
				b, err := io.ReadAll(c)
				if err != nil && !errors.Is(err, syscall.ECONNRESET) {
					closed <- "error " + err.Error()
					return
				}
				closed <- string(b)
			}()
		}
		rejected := 0
		for i := 0; i < n; i++ {
			switch got := <-closed; got {
			case "":
			case "ERROR Too many open connections\r\n":
				rejected++
			default:
				t.Errorf("a stalled handshake ended with %q", got)
			}
		}
		// How many got in depends on how fast the first ones were closed;
		// never more than -c at once.
		st, err := serverStats(plain[0], "")
		if err != nil {
			t.Fatal(err)
		}
		if got := statUint(t, st, "ssl_handshake_errors"); got != uint64(n-rejected) {
			t.Errorf("ssl_handshake_errors = %d, want %d (the stalled handshakes admitted; %d rejected over -c)", got, n-rejected, rejected)
		}
		// The server counts a connection out just after closing it.
		if !waitFor(time.Minute, func() bool {
			st, err := serverStats(plain[0], "")
			return err == nil && st["curr_connections"] == "1"
		}) {
			t.Errorf("curr_connections stays above 1 once the stalled handshakes are closed")
		}
		c := tlsClient(s.Addr, p.clientConfig(""))
		if err := c.Set(&memcache.Item{Key: "after", Value: []byte("ok")}); err != nil {
			t.Fatalf("a real client after the slowloris: %v", err)
		}
	})
}

// TestTLSLikeMemcached compares TLS with memcached 1.6.18 (Debian's build
// has TLS) under the same certificate files and -o ssl_* keys: the ssl_*
// fields of "stats settings", the ssl_* fields of "stats" (tandem adds
// ssl_proto_errors, as later memcached releases do), and refresh_certs.
func TestTLSLikeMemcached(t *testing.T) {
	p := newTestPKI(t)
	p.leaf("client", "client", time.Now().Add(time.Hour))
	opts := "ssl_ca_cert=" + p.file("ca.pem") + ",ssl_verify_mode=2,ssl_session_cache,ssl_min_version=3"
	flags := p.serverFlags(opts)
	m := testenv.StartMemcached(t, flags...)
	s := startServer(t, "pool", flags...)
	cfg := p.clientConfig("client")
	mset, tset := tlsStats(t, m.Addr, cfg, "settings"), tlsStats(t, s.Addr, cfg, "settings")
	for k, v := range mset {
		if strings.HasPrefix(k, "ssl_") && tset[k] != v {
			t.Errorf("stats settings %s: tandem %q, memcached %q", k, tset[k], v)
		}
	}
	ssl := func(st map[string]string) (names []string) {
		for k := range st {
			if strings.HasPrefix(k, "ssl_") || k == "time_since_server_cert_refresh" {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		return names
	}
	want := append(ssl(tlsStats(t, m.Addr, cfg, "")), "ssl_proto_errors")
	slices.Sort(want)
	if got := ssl(tlsStats(t, s.Addr, cfg, "")); !slices.Equal(got, want) {
		t.Errorf("stats TLS fields: tandem %v, memcached %v (+ ssl_proto_errors)", got, want)
	}
	for _, req := range []string{"refresh_certs\r\n", "refresh_certs noreply\r\n"} {
		var replies [2]string
		for i, addr := range []string{m.Addr, s.Addr} {
			c := mustHandshake(t, addr, cfg)
			replies[i] = tlsRoundTrip(t, c, bufio.NewReader(c), req+"mn\r\n", "MN")
		}
		if replies[0] != replies[1] {
			t.Errorf("%q: memcached %q, tandem %q", req, replies[0], replies[1])
		}
	}
}
