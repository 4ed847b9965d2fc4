package main

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/protocol/handler"
	"github.com/tandemcache/tandem/reactor"
)

// TLS as memcached exposes it: -Z turns it on for every TCP listener but
// those marked notls: on -l; the -o ssl_* keys configure it. The files are
// loaded at start (a bad one stops the start, naming the file) and again on
// refresh_certs and SIGHUP; connections keep the certificate they were
// accepted with, new ones get the new one.

// TLSSettings are -Z and the ssl_* keys of -o, with memcached's meanings.
type TLSSettings struct {
	Enabled   bool   // -Z
	ChainCert string // ssl_chain_cert: PEM certificate chain, leaf first
	Key       string // ssl_key
	CACert    string // ssl_ca_cert: PEM CAs that sign client certificates
	// VerifyMode is ssl_verify_mode: 0 none, 1 request (verify a client
	// certificate if one is sent), 2 require, 3 require once (2 and 3 are
	// alike: tandem never renegotiates).
	VerifyMode   int
	MinVersion   string // ssl_min_version: tlsv1.2 or tlsv1.3 (given as 2 or 3, or so named)
	Ciphers      string // ssl_ciphers: TLS 1.2 cipher suites, OpenSSL or IANA names, ':'-separated
	SessionCache bool   // ssl_session_cache: allow session resumption (tickets)
	KeyFormat    int    // ssl_keyformat: 1 PEM, 2 DER (OpenSSL's SSL_FILETYPE_PEM and _ASN1)
	KernelTLS    bool   // ssl_kernel_tls: accepted, not used
	WbufSize     int    // ssl_wbuf_size in bytes (given in KB): accepted, not used
	// HandshakeTimeout bounds a handshake (--tls-handshake-timeout).
	HandshakeTimeout time.Duration
	// given lists the ssl_* keys given, for the warning when -Z is not.
	given []string
}

// defaultTLSSettings are memcached's defaults.
func defaultTLSSettings() TLSSettings {
	return TLSSettings{MinVersion: "tlsv1.2", KeyFormat: 1, WbufSize: 16 << 10, HandshakeTimeout: reactor.DefaultTLSHandshakeTimeout}
}

// applySSLOption sets one ssl_* key of -o; ok is false for other keys.
func (s *TLSSettings) applySSLOption(k, v string) (ok bool, warn string, err error) {
	switch k {
	case "ssl_chain_cert":
		s.ChainCert = v
	case "ssl_key":
		s.Key = v
	case "ssl_ca_cert":
		s.CACert = v
	case "ssl_verify_mode":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 3 {
			return true, "", fmt.Errorf("-o ssl_verify_mode: %q is not 0 (none), 1 (request), 2 (require) or 3 (require once)", v)
		}
		s.VerifyMode = n
	case "ssl_min_version":
		// memcached 1.6.18 takes 0-3 (tlsv1.0-tlsv1.3); the names are
		// what it prints in "stats settings" and what later releases take.
		switch v {
		case "2", "tlsv1.2":
			s.MinVersion = "tlsv1.2"
		case "3", "tlsv1.3":
			s.MinVersion = "tlsv1.3"
		case "0", "1", "tlsv1", "tlsv1.0", "tlsv1.1":
			return true, "", fmt.Errorf("-o ssl_min_version: %q is refused: tandem serves TLS 1.2 and 1.3 only (2 or tlsv1.2, 3 or tlsv1.3)", v)
		default:
			return true, "", fmt.Errorf("-o ssl_min_version: %q is not 2 (tlsv1.2) or 3 (tlsv1.3)", v)
		}
	case "ssl_ciphers":
		s.Ciphers = v
	case "ssl_session_cache":
		s.SessionCache = true
	case "ssl_keyformat":
		n, err := strconv.Atoi(v)
		if err != nil || (n != 1 && n != 2) {
			return true, "", fmt.Errorf("-o ssl_keyformat: %q is not 1 (PEM) or 2 (DER)", v)
		}
		s.KeyFormat = n
	case "ssl_kernel_tls":
		s.KernelTLS = true
		warn = "-o ssl_kernel_tls: kernel TLS is not used (Go's crypto/tls encrypts in user space); ignored"
	case "ssl_wbuf_size":
		kb, err := strconv.Atoi(v)
		if err != nil || kb <= 0 {
			return true, "", fmt.Errorf("-o ssl_wbuf_size: bad kilobytes %q", v)
		}
		s.WbufSize = kb << 10
		warn = "-o ssl_wbuf_size: crypto/tls sizes its own records (at most 16 KB each); ignored"
	default:
		return false, "", nil
	}
	s.given = append(s.given, k)
	return true, warn, nil
}

// listenKind is memcached's per-listener prefix on -l.
type listenKind int

const (
	listenDefault listenKind = iota // TLS with -Z, else plaintext
	listenNoTLS                     // notls: plaintext even with -Z
	listenMTLS                      // mtls: TLS requiring a verified client certificate
)

// splitListen cuts the notls: or mtls: prefix off a -l value.
func splitListen(l string) (listenKind, string) {
	if rest, ok := strings.CutPrefix(l, "notls:"); ok {
		return listenNoTLS, rest
	}
	if rest, ok := strings.CutPrefix(l, "mtls:"); ok {
		return listenMTLS, rest
	}
	return listenDefault, l
}

// validateTLS reports the invalid TLS settings (the files are read later,
// when the server starts), and adds the warnings.
func (c *Config) validateTLS() []error {
	s := &c.TLS
	var errs []error
	mtls := false
	for _, l := range c.Listen {
		if k, _ := splitListen(l); k == listenMTLS {
			mtls = true
		}
	}
	if !s.Enabled {
		if mtls {
			errs = append(errs, errors.New("-l mtls:...: needs TLS on (-Z)"))
		}
		if len(s.given) > 0 {
			c.Warnings = append(c.Warnings, "-o "+strings.Join(s.given, ",")+": TLS is off (no -Z); ignored")
		}
		return errs
	}
	if s.ChainCert == "" {
		errs = append(errs, errors.New("-Z: needs the certificate chain file: -o ssl_chain_cert=FILE"))
	}
	if s.Key == "" {
		errs = append(errs, errors.New("-Z: needs the private key file: -o ssl_key=FILE"))
	}
	if s.VerifyMode > 0 && s.CACert == "" {
		errs = append(errs, fmt.Errorf("-o ssl_verify_mode=%d: needs the CAs that sign client certificates: -o ssl_ca_cert=FILE", s.VerifyMode))
	}
	if mtls && s.CACert == "" {
		errs = append(errs, errors.New("-l mtls:...: needs the CAs that sign client certificates: -o ssl_ca_cert=FILE"))
	}
	if s.Ciphers != "" {
		if _, warn, err := parseCiphers(s.Ciphers); err != nil {
			errs = append(errs, err)
		} else if warn != "" {
			c.Warnings = append(c.Warnings, warn)
		}
	}
	if s.HandshakeTimeout <= 0 {
		errs = append(errs, errors.New("--tls-handshake-timeout: must be positive"))
	}
	if c.UnixSocket != "" {
		c.Warnings = append(c.Warnings, "-Z: the unix socket of -s is served without TLS")
	}
	return errs
}

// tlsListens splits the listen addresses into plaintext and TLS ones.
func tlsListens(cfg *Config, certs *certStore) (plain []string, secure []reactor.TLSListen, err error) {
	addrs, err := cfg.ListenAddrs()
	if err != nil {
		return nil, nil, err
	}
	for i, a := range addrs {
		kind, _ := splitListen(cfg.Listen[i])
		switch {
		case !cfg.TLS.Enabled || kind == listenNoTLS:
			plain = append(plain, a)
		default:
			secure = append(secure, reactor.TLSListen{Addr: a, Config: certs.listenerConfig(kind == listenMTLS)})
		}
	}
	return plain, secure, nil
}

// opensslCiphers maps the OpenSSL names of the TLS 1.2 suites Go serves to
// Go's IANA names.
var opensslCiphers = map[string]string{
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
}

// parseCiphers turns ssl_ciphers into Go's TLS 1.2 cipher suites. Names of
// suites Go serves are taken (OpenSSL's or IANA's); OpenSSL's keywords and
// operators (HIGH, !aNULL, ...) and suites Go does not serve are skipped
// with a warning; a list with no usable suite is an error, as memcached
// refuses a cipher list OpenSSL matches nothing of. TLS 1.3 suites are not
// configurable in Go (nor by ssl_ciphers in memcached).
func parseCiphers(list string) (ids []uint16, warn string, err error) {
	byName := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs.ID
	}
	var skipped []string
	for _, name := range strings.FieldsFunc(list, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		iana := name
		if n, ok := opensslCiphers[name]; ok {
			iana = n
		}
		if id, ok := byName[iana]; ok {
			ids = append(ids, id)
		} else {
			skipped = append(skipped, name)
		}
	}
	if len(ids) == 0 {
		return nil, "", fmt.Errorf("-o ssl_ciphers: %q names no TLS 1.2 cipher suite tandem serves (e.g. ECDHE-RSA-AES128-GCM-SHA256)", list)
	}
	if len(skipped) > 0 {
		warn = "-o ssl_ciphers: skipped " + strings.Join(skipped, ":") + " (keywords, or suites crypto/tls does not serve)"
	}
	return ids, warn, nil
}

// certStore holds the loaded certificate, key and CAs, and the TLS
// configurations built from them. A reload builds new configurations and
// swaps them in atomically; listeners hand the current one to each
// handshake (tls.Config.GetConfigForClient), so connections already
// established keep theirs.
type certStore struct {
	set      TLSSettings
	ciphers  []uint16
	mu       sync.Mutex // serializes reloads
	cur      atomic.Pointer[certState]
	counters *reactor.TLSCounters
	// outer are the configurations listeners hold: plain TLS and mtls:.
	outer [2]*tls.Config
}

// certState is one load of the files.
type certState struct {
	cfgs     [2]*tls.Config // per listener kind: [0] -Z, [1] mtls:
	notAfter time.Time      // the leaf certificate's expiry
	loaded   time.Time
}

// certError is a failed load: reply is memcached's refresh_certs line,
// err the detail for the log.
type certError struct {
	reply string
	err   error
}

func (e *certError) Error() string { return e.err.Error() }
func (e *certError) Unwrap() error { return e.err }

// newCertStore loads the files of s; an error names the file at fault.
func newCertStore(s TLSSettings) (*certStore, error) {
	st := &certStore{set: s, counters: &reactor.TLSCounters{}}
	if s.Ciphers != "" {
		st.ciphers, _, _ = parseCiphers(s.Ciphers) // validated with the flags
	}
	for i := range st.outer {
		st.outer[i] = &tls.Config{
			MinVersion: st.minVersion(),
			GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
				return st.cur.Load().cfgs[i], nil
			},
		}
	}
	if err := st.reload(); err != nil {
		return nil, err
	}
	return st, nil
}

func (st *certStore) minVersion() uint16 {
	if st.set.MinVersion == "tlsv1.3" {
		return tls.VersionTLS13
	}
	return tls.VersionTLS12
}

// listenerConfig is the configuration of a TLS listener, mtls: or not.
func (st *certStore) listenerConfig(mtls bool) *tls.Config {
	if mtls {
		return st.outer[1]
	}
	return st.outer[0]
}

// reload reads the files again and swaps the new configuration in; on an
// error the current one stays.
func (st *certStore) reload() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	cert, err := loadKeyPair(st.set.ChainCert, st.set.Key, st.set.KeyFormat)
	if err != nil {
		return err
	}
	var cas *x509.CertPool
	if st.set.CACert != "" {
		if cas, err = loadCAs(st.set.CACert); err != nil {
			return err
		}
	}
	next := &certState{notAfter: cert.Leaf.NotAfter, loaded: time.Now()}
	auth := [...]tls.ClientAuthType{tls.NoClientCert, tls.VerifyClientCertIfGiven, tls.RequireAndVerifyClientCert, tls.RequireAndVerifyClientCert}[st.set.VerifyMode]
	for i := range next.cfgs {
		if i == 1 {
			auth = tls.RequireAndVerifyClientCert
		}
		next.cfgs[i] = &tls.Config{
			Certificates:           []tls.Certificate{cert},
			MinVersion:             st.minVersion(),
			CipherSuites:           st.ciphers,
			ClientAuth:             auth,
			ClientCAs:              cas,
			SessionTicketsDisabled: !st.set.SessionCache,
			// Go's TLS server never renegotiates: a client's attempt ends
			// its connection (memcached's ssl_callback does the same).
		}
	}
	st.cur.Store(next)
	return nil
}

// refresh is refresh_certs: "" on success, else memcached's error line.
func (st *certStore) refresh(log zerolog.Logger, why string) string {
	if err := st.reload(); err != nil {
		log.Error().Err(err).Str("trigger", why).Msg("TLS certificates not reloaded; the previous ones stay in use")
		var ce *certError
		if errors.As(err, &ce) {
			return ce.reply
		}
		return "Error validating the certificate"
	}
	cur := st.cur.Load()
	log.Info().Str("trigger", why).Time("not_after", cur.notAfter).Msg("TLS certificates reloaded")
	return ""
}

// loadKeyPair reads the certificate chain and the key, and checks that they
// belong together.
func loadKeyPair(chainFile, keyFile string, keyFormat int) (tls.Certificate, error) {
	chainErr := func(err error) error {
		return &certError{"Error loading the certificate chain: " + chainFile + " : " + err.Error(), fmt.Errorf("ssl_chain_cert %s: %w", chainFile, err)}
	}
	keyErr := func(err error) error {
		return &certError{"Error loading the key: " + keyFile + " : " + err.Error(), fmt.Errorf("ssl_key %s: %w", keyFile, err)}
	}
	data, err := os.ReadFile(chainFile)
	if err != nil {
		return tls.Certificate{}, chainErr(err)
	}
	var cert tls.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, b.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return tls.Certificate{}, chainErr(errors.New("no PEM certificate in the file"))
	}
	if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
		return tls.Certificate{}, chainErr(err)
	}
	kdata, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, keyErr(err)
	}
	der := kdata
	if keyFormat != 2 {
		der = nil
		for rest := kdata; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if strings.HasSuffix(b.Type, "PRIVATE KEY") {
				der = b.Bytes
				break
			}
		}
		if der == nil {
			return tls.Certificate{}, keyErr(errors.New("no PEM private key in the file (ssl_keyformat=2 reads DER)"))
		}
	}
	if cert.PrivateKey, err = parsePrivateKey(der); err != nil {
		return tls.Certificate{}, keyErr(err)
	}
	pub, ok := cert.PrivateKey.(crypto.Signer)
	if eq, ok2 := cert.Leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !ok2 || !eq.Equal(pub.Public()) {
		return tls.Certificate{}, &certError{"Error validating the certificate",
			fmt.Errorf("ssl_key %s does not match the certificate of ssl_chain_cert %s", keyFile, chainFile)}
	}
	return cert, nil
}

// parsePrivateKey parses a DER key: PKCS#8, PKCS#1 (RSA) or SEC 1 (EC).
func parsePrivateKey(der []byte) (crypto.PrivateKey, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("not a PKCS#8, PKCS#1 or EC private key")
}

// loadCAs reads the PEM CA certificates of ssl_ca_cert.
func loadCAs(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err == nil {
		pool := x509.NewCertPool()
		if pool.AppendCertsFromPEM(data) {
			return pool, nil
		}
		err = errors.New("no PEM certificate in the file")
	}
	return nil, &certError{"Error loading the CA certificate: " + file + " : " + err.Error(), fmt.Errorf("ssl_ca_cert %s: %w", file, err)}
}

// withTLSInfo fills the ssl_* part of "stats" in si.
func withTLSInfo(si handler.ServerInfo, st *certStore) handler.ServerInfo {
	if st == nil {
		return si
	}
	c := st.counters
	si.SSLEnabled = true
	si.SSLSessionCache = st.set.SessionCache
	si.SSLCertRefreshed = st.cur.Load().loaded
	si.Counters[handler.SSLHandshakeErrors] = c.HandshakeErrors.Load()
	si.Counters[handler.SSLProtoErrors] = c.ProtoErrors.Load()
	si.Counters[handler.SSLNewSessions] = c.NewSessions.Load()
	return si
}

// refreshCommand is the handler's refresh_certs hook; nil without -Z.
func (st *certStore) refreshCommand(log zerolog.Logger) func() string {
	if st == nil {
		return nil
	}
	return func() string { return st.refresh(log, "refresh_certs") }
}

// tlsCounters are the reactor's TLS counters; nil without -Z.
func (st *certStore) tlsCounters() *reactor.TLSCounters {
	if st == nil {
		return nil
	}
	return st.counters
}

// reloadCertsOnHangup is what SIGHUP does for TLS: reload the certificate,
// key and CAs as refresh_certs does.
func reloadCertsOnHangup(log zerolog.Logger, st *certStore) {
	if st == nil {
		log.Info().Str("signal", syscall.SIGHUP.String()).Msg("no TLS certificates to reload (-Z is off)")
		return
	}
	st.refresh(log, "SIGHUP")
}

// sslVerifyModeSetting is ssl_verify_mode as memcached prints it: OpenSSL's
// SSL_VERIFY_* bits (PEER 1, FAIL_IF_NO_PEER_CERT 2, CLIENT_ONCE 4).
func sslVerifyModeSetting(mode int) string {
	return strconv.Itoa([...]int{0, 1, 3, 7}[mode])
}
