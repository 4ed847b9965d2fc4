package reactor

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// testCert returns a self-signed certificate for 127.0.0.1, made for the test.
func testCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tandem test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// TestTLSListeners serves a TLS and a plaintext listener in every mode: the
// TLS one answers over TLS, counts handshakes, is listed first and marked in
// Conns; a plaintext client on it is closed; a silent one is closed at the
// handshake deadline and counted.
func TestTLSListeners(t *testing.T) {
	cert, roots := testCert(t)
	for _, mode := range []Mode{ModePool, ModeInline, ModeGoroutine} {
		t.Run(string(mode), func(t *testing.T) {
			counters := &TLSCounters{}
			srv := startTest(t, mode, func(c *Config) {
				c.TLSAddrs = []TLSListen{{Addr: "127.0.0.1:0", Config: &tls.Config{Certificates: []tls.Certificate{cert}}}}
				c.TLSCounters = counters
				c.TLSHandshakeTimeout = 2 * time.Second // long enough for a real handshake under -race on a loaded machine
			})
			addrs := srv.Addrs()
			if len(addrs) != 2 {
				t.Fatalf("Addrs = %v, want a TLS and a plaintext one", addrs)
			}
			tlsAddr, plainAddr := addrs[0].String(), addrs[1].String()

			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", tlsAddr, &tls.Config{RootCAs: roots})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			if _, err := io.WriteString(c, "hello\n"); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || line != "R:hello\n" {
				t.Fatalf("TLS reply = %q, %v; want R:hello", line, err)
			}
			if got := counters.Handshakes.Load(); got != 1 {
				t.Errorf("Handshakes = %d, want 1", got)
			}
			marked := 0
			for _, ci := range Conns(srv) {
				if ci.TLS == "TLSv1.3" {
					marked++
				}
			}
			if marked != 1 {
				t.Errorf("Conns marks %d connections TLSv1.3, want 1: %+v", marked, Conns(srv))
			}

			// The plaintext listener still answers plaintext.
			p := dialPlain(t, plainAddr)
			if _, err := io.WriteString(p, "plain\n"); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(p).ReadString('\n'); err != nil || line != "R:plain\n" {
				t.Fatalf("plaintext reply = %q, %v", line, err)
			}

			// A plaintext request on the TLS port: closed, not answered.
			q := dialPlain(t, tlsAddr)
			if _, err := io.WriteString(q, "get foo\r\n"); err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(q); err != nil || len(b) != 0 {
				t.Errorf("plaintext on the TLS port read %q, %v; want a close", b, err)
			}
			// A client that says nothing: closed at the handshake deadline.
			z := dialPlain(t, tlsAddr)
			if b, err := io.ReadAll(z); err != nil || len(b) != 0 {
				t.Errorf("silent client read %q, %v; want a close", b, err)
			}
			if got := counters.HandshakeErrors.Load(); got != 2 {
				t.Errorf("HandshakeErrors = %d, want 2", got)
			}
			if got := counters.HandshakeTimeouts.Load(); got != 1 {
				t.Errorf("HandshakeTimeouts = %d, want 1", got)
			}
		})
	}
}

// TestTLSOnly serves TLS listeners alone in a gnet mode (no plaintext
// listener: the net front end only).
func TestTLSOnly(t *testing.T) {
	cert, roots := testCert(t)
	srv := startTest(t, ModePool, func(c *Config) {
		c.Addrs = nil
		c.TLSAddrs = []TLSListen{{Addr: "127.0.0.1:0", Config: &tls.Config{Certificates: []tls.Certificate{cert}}}}
	})
	c, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	_, _ = io.WriteString(c, "x\n")
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "R:x\n" {
		t.Fatalf("reply = %q, %v", line, err)
	}
}

// TestTLSConnLimit counts gnet's connections against -c on the TLS side.
func TestTLSConnLimit(t *testing.T) {
	cert, _ := testCert(t)
	srv := startTest(t, ModeInline, func(c *Config) {
		c.MaxConns = 1
		c.TLSAddrs = []TLSListen{{Addr: "127.0.0.1:0", Config: &tls.Config{Certificates: []tls.Certificate{cert}}}}
	})
	p := dialPlain(t, srv.Addrs()[1].String())
	_, _ = io.WriteString(p, "a\n")
	if line, err := bufio.NewReader(p).ReadString('\n'); err != nil || line != "R:a\n" {
		t.Fatalf("reply = %q, %v", line, err)
	}
	q := dialPlain(t, srv.Addr().String())
	b, _ := io.ReadAll(q)
	if string(b) != string(tooManyConns) {
		t.Errorf("second connection read %q, want %q", b, tooManyConns)
	}
}

// TestTLSConnLimitFromPlain: a TLS connection counts against -c when a plaintext one arrives on
// the gnet side too.
func TestTLSConnLimitFromPlain(t *testing.T) {
	cert, _ := testCert(t)
	srv := startTest(t, ModeInline, func(c *Config) {
		c.MaxConns = 1
		c.TLSAddrs = []TLSListen{{Addr: "127.0.0.1:0", Config: &tls.Config{Certificates: []tls.Certificate{cert}}}}
	})
	tc, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	_ = tc.SetDeadline(time.Now().Add(time.Minute))
	_, _ = io.WriteString(tc, "a\n")
	if line, err := bufio.NewReader(tc).ReadString('\n'); err != nil || line != "R:a\n" {
		t.Fatalf("TLS reply = %q, %v", line, err)
	}
	q := dialPlain(t, srv.Addrs()[1].String())
	b, _ := io.ReadAll(q)
	if string(b) != string(tooManyConns) {
		t.Errorf("plaintext connection beside a TLS one read %q, want %q", b, tooManyConns)
	}
}

func dialPlain(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	t.Cleanup(func() { c.Close() })
	return c
}

func TestIsTLSProtoError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"eof", io.EOF, false},
		{"closed", net.ErrClosed, false},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, false},
		{"timeout", os.ErrDeadlineExceeded, false},
		{"record header", tls.RecordHeaderError{Msg: "bad"}, true},
		{"alert sent", &net.OpError{Op: "local error", Err: errors.New("tls: bad record MAC")}, true},
		{"alert received", &net.OpError{Op: "remote error", Err: errors.New("tls: unexpected message")}, true},
		{"renegotiation", errors.New("tls: received unexpected handshake message of type *tls.clientHelloMsg when waiting for *tls.helloRequestMsg"), true},
	} {
		if got := isTLSProtoError(tc.err); got != tc.want {
			t.Errorf("%s: isTLSProtoError(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
