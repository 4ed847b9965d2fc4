package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Certificates for the TLS tests are made by each test with crypto/x509,
// in its temporary directory: no private key is committed.

// testPKI is a test CA and the files of certificates it signed.
type testPKI struct {
	t    testing.TB
	dir  string
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool

	serverMu sync.Mutex // serverFlags: parallel subtests must not each write server.pem and its key
}

var certSerial atomic.Int64

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{t: t, dir: t.TempDir()}
	p.ca, p.key = p.issue("tandem test CA", nil, nil, true, time.Now().Add(24*time.Hour))
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.writeCert("ca.pem", p.ca)
	return p
}

// issue makes a certificate for cn, signed by parent (self-signed when nil).
func (p *testPKI) issue(cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool, notAfter time.Time) (*x509.Certificate, *ecdsa.PrivateKey) {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(certSerial.Add(1)),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter.Truncate(time.Second),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.ExtKeyUsage = nil
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		p.t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		p.t.Fatal(err)
	}
	return cert, key
}

// leaf issues a certificate for cn signed by the CA and writes name.pem
// and name-key.pem; it returns their paths.
func (p *testPKI) leaf(name, cn string, notAfter time.Time) (certFile, keyFile string) {
	p.t.Helper()
	cert, key := p.issue(cn, p.ca, p.key, false, notAfter)
	return p.writeCert(name+".pem", cert), p.writeKey(name+"-key.pem", key)
}

func (p *testPKI) writeCert(name string, c *x509.Certificate) string {
	return p.write(name, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

func (p *testPKI) writeKey(name string, k *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func (p *testPKI) write(name string, data []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// file is the path of name in the PKI's directory.
func (p *testPKI) file(name string) string { return filepath.Join(p.dir, name) }

// serverFlags are the -Z flags serving server.pem (made when missing).
func (p *testPKI) serverFlags(extra ...string) []string {
	p.serverMu.Lock()
	if _, err := os.Stat(p.file("server.pem")); err != nil {
		p.leaf("server", "tandem server", time.Now().Add(24*time.Hour))
	}
	p.serverMu.Unlock()
	opts := append([]string{"ssl_chain_cert=" + p.file("server.pem"), "ssl_key=" + p.file("server-key.pem")}, extra...)
	return []string{"-Z", "-o", strings.Join(opts, ",")}
}

// clientConfig trusts the CA, with the client certificate name (if any).
func (p *testPKI) clientConfig(name string) *tls.Config {
	p.t.Helper()
	cfg := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1"}
	if name != "" {
		cert, err := tls.LoadX509KeyPair(p.file(name+".pem"), p.file(name+"-key.pem"))
		if err != nil {
			p.t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// dialTLS opens a TLS connection with a hang guard; the handshake is done.
func dialTLS(t testing.TB, addr string, cfg *tls.Config) (*tls.Conn, error) {
	t.Helper()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Minute}, Config: cfg}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*tls.Conn)
	_ = tc.SetDeadline(time.Now().Add(2 * time.Minute))
	t.Cleanup(func() { tc.Close() })
	return tc, nil
}

// tlsRoundTrip writes req and reads lines until one equal to end.
func tlsRoundTrip(t testing.TB, c net.Conn, r *bufio.Reader, req, end string) string {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("write %q: %v", req, err)
	}
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			t.Fatalf("reply to %q: %q, %v", req, b.String(), err)
		}
		if line == end+"\r\n" {
			return b.String()
		}
	}
}

// tlsStats fetches "stats" or "stats <group>" over a new TLS connection.
func tlsStats(t testing.TB, addr string, cfg *tls.Config, group string) map[string]string {
	t.Helper()
	c, err := dialTLS(t, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := strings.TrimSpace("stats "+group) + "\r\n"
	out := tlsRoundTrip(t, c, bufio.NewReader(c), cmd, "END")
	st := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "END\r\n"), "\r\n") {
		if f := strings.SplitN(line, " ", 3); len(f) == 3 && f[0] == "STAT" {
			st[f[1]] = f[2]
		}
	}
	return st
}

// listening returns the TLS and the other addresses the server logged.
func (s *server) listening(t testing.TB) (tlsAddrs, plain []string) {
	t.Helper()
	for _, line := range strings.Split(s.Log(), "\n") {
		var e struct {
			Message  string   `json:"message"`
			Addrs    []string `json:"addrs"`
			TLSAddrs []string `json:"tls_addrs"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Message == "tandem listening" {
			return e.TLSAddrs, e.Addrs[len(e.TLSAddrs):]
		}
	}
	t.Fatalf("no listening line in the log:\n%s", s.Log())
	return nil, nil
}

// peerCN is the common name of the certificate the server presented.
func peerCN(c *tls.Conn) string {
	st := c.ConnectionState()
	if len(st.PeerCertificates) == 0 {
		return ""
	}
	return st.PeerCertificates[0].Subject.CommonName
}

// mustHandshake fails the test unless a handshake with cfg succeeds.
func mustHandshake(t testing.TB, addr string, cfg *tls.Config) *tls.Conn {
	t.Helper()
	c, err := dialTLS(t, addr, cfg)
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	return c
}

// tlsRejected reports whether the server refuses a client with cfg: the
// handshake fails, or (in TLS 1.3 a rejected client certificate surfaces
// only then) the first request does. detail says what happened.
func tlsRejected(t testing.TB, addr string, cfg *tls.Config) (rejected bool, detail string) {
	t.Helper()
	c, err := dialTLS(t, addr, cfg)
	if err != nil {
		return true, err.Error()
	}
	defer c.Close()
	if _, err := io.WriteString(c, "version\r\n"); err != nil {
		return true, err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return true, err.Error()
	}
	return false, fmt.Sprintf("served: %q", line)
}
