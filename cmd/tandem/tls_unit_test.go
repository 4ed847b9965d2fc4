package main

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestParseCiphers(t *testing.T) {
	for _, tc := range []struct {
		name, list string
		want       []uint16
		warn, err  bool
	}{
		{"openssl name", "ECDHE-RSA-AES128-GCM-SHA256", []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}, false, false},
		{"iana name", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}, false, false},
		{"list with keywords", "HIGH:!aNULL:ECDHE-ECDSA-AES256-GCM-SHA384", []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}, true, false},
		{"nothing usable", "HIGH:!aNULL", nil, false, true},
		{"unknown", "bogus", nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, warn, err := parseCiphers(tc.list)
			if (err != nil) != tc.err || (warn != "") != tc.warn || !slices.Equal(ids, tc.want) {
				t.Errorf("parseCiphers(%q) = %v, %q, %v; want %v, warning %v, error %v", tc.list, ids, warn, err, tc.want, tc.warn, tc.err)
			}
		})
	}
}

func TestApplySSLOption(t *testing.T) {
	for _, tc := range []struct {
		kv, field, want string
		err             bool
	}{
		{"ssl_min_version=2", "min", "tlsv1.2", false},
		{"ssl_min_version=3", "min", "tlsv1.3", false},
		{"ssl_min_version=tlsv1.3", "min", "tlsv1.3", false},
		{"ssl_min_version=1", "", "", true},
		{"ssl_min_version=tlsv1.0", "", "", true},
		{"ssl_verify_mode=3", "verify", "7", false},
		{"ssl_verify_mode=2", "verify", "3", false},
		{"ssl_verify_mode=-1", "", "", true},
		{"ssl_keyformat=2", "keyformat", "2", false},
		{"ssl_keyformat=PEM", "", "", true},
		{"ssl_wbuf_size=0", "", "", true},
	} {
		s := defaultTLSSettings()
		k, v, _ := strings.Cut(tc.kv, "=")
		ok, _, err := s.applySSLOption(k, v)
		if !ok || (err != nil) != tc.err {
			t.Errorf("%s: ok %v, err %v; want an error %v", tc.kv, ok, err, tc.err)
			continue
		}
		got := map[string]string{"min": s.MinVersion, "verify": sslVerifyModeSetting(s.VerifyMode), "keyformat": map[int]string{1: "1", 2: "2"}[s.KeyFormat]}[tc.field]
		if tc.field != "" && got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.kv, tc.field, got, tc.want)
		}
	}
	s := defaultTLSSettings()
	if ok, _, _ := s.applySSLOption("idle_timeout", "1"); ok {
		t.Errorf("idle_timeout taken as an ssl_* key")
	}
}

// TestLoadKeyPair reads the key formats memcached reads, and names the file
// at fault with memcached's refresh_certs line.
func TestLoadKeyPair(t *testing.T) {
	p := newTestPKI(t)
	cert, keyFile := p.leaf("s", "s", time.Now().Add(time.Hour))
	block, _ := pem.Decode(mustRead(t, keyFile))
	der := p.write("s-key.der", block.Bytes)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(k.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	ecPEM := p.write("s-ec.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))
	for _, tc := range []struct {
		name, key string
		format    int
	}{
		{"PEM PKCS#8", keyFile, 1},
		{"PEM SEC 1", ecPEM, 1},
		{"DER PKCS#8", der, 2},
	} {
		if _, err := loadKeyPair(cert, tc.key, tc.format); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	_, otherKey := p.leaf("o", "o", time.Now().Add(time.Hour))
	for _, tc := range []struct {
		name, cert, key string
		format          int
		reply           string
	}{
		{"no chain", p.file("none.pem"), keyFile, 1, "Error loading the certificate chain: " + p.file("none.pem") + " : "},
		{"no key", cert, p.file("none.pem"), 1, "Error loading the key: " + p.file("none.pem") + " : "},
		{"PEM read as DER", cert, keyFile, 2, "Error loading the key: " + keyFile + " : "},
		{"DER read as PEM", cert, der, 1, "Error loading the key: " + der + " : "},
		{"another key", cert, otherKey, 1, "Error validating the certificate"},
	} {
		_, err := loadKeyPair(tc.cert, tc.key, tc.format)
		var ce *certError
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.reply, tc.reply) {
			t.Errorf("%s: %v; want a reply starting %q", tc.name, err, tc.reply)
		}
	}
}

// TestCertStoreReload swaps the certificate and the client CAs atomically
// and keeps the old ones when a file is broken.
func TestCertStoreReload(t *testing.T) {
	p := newTestPKI(t)
	p.leaf("server", "first", time.Now().Add(time.Hour))
	set := defaultTLSSettings()
	set.Enabled, set.ChainCert, set.Key, set.CACert, set.VerifyMode = true, p.file("server.pem"), p.file("server-key.pem"), p.file("ca.pem"), 2
	st, err := newCertStore(set)
	if err != nil {
		t.Fatal(err)
	}
	hello := &tls.ClientHelloInfo{}
	cfg, _ := st.listenerConfig(false).GetConfigForClient(hello)
	if cn := cfg.Certificates[0].Leaf.Subject.CommonName; cn != "first" || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.MinVersion != tls.VersionTLS12 || !cfg.SessionTicketsDisabled {
		t.Fatalf("first configuration: CN %q, client auth %v, min %x, tickets disabled %v", cn, cfg.ClientAuth, cfg.MinVersion, cfg.SessionTicketsDisabled)
	}
	other := newTestPKI(t)
	if err := os.WriteFile(p.file("ca.pem"), mustRead(t, other.file("ca.pem")), 0o600); err != nil {
		t.Fatal(err)
	}
	p.leaf("server", "second", time.Now().Add(2*time.Hour))
	if msg := st.refresh(zerolog.Nop(), "test"); msg != "" {
		t.Fatalf("refresh: %q", msg)
	}
	cfg2, _ := st.listenerConfig(false).GetConfigForClient(hello)
	if cn := cfg2.Certificates[0].Leaf.Subject.CommonName; cn != "second" || !cfg2.ClientCAs.Equal(other.pool) {
		t.Errorf("after a refresh: CN %q, the new CA file loaded %v", cn, cfg2.ClientCAs.Equal(other.pool))
	}
	if cn := cfg.Certificates[0].Leaf.Subject.CommonName; cn != "first" {
		t.Errorf("the configuration handed out before the refresh changed: %q", cn)
	}
	if err := os.WriteFile(p.file("server.pem"), []byte("broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if msg := st.refresh(zerolog.Nop(), "test"); !strings.HasPrefix(msg, "Error loading the certificate chain: ") {
		t.Errorf("refresh with a broken chain: %q", msg)
	}
	cfg3, _ := st.listenerConfig(true).GetConfigForClient(hello)
	if cn := cfg3.Certificates[0].Leaf.Subject.CommonName; cn != "second" || cfg3.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("after a failed refresh the mtls: configuration has CN %q, client auth %v", cn, cfg3.ClientAuth)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
