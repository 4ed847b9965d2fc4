package main

// tlsCollector serves the TLS metrics: handshakes, their failures, protocol
// errors, and the certificate's expiry (operators alert on it) and load
// time. The counters are the reactor's own, never reset by "stats reset".
type tlsCollector struct {
	st                                     *certStore
	handshakes, errors, timeouts, protoErr *family
	expiry, loaded                         *family
}

// registerTLS adds the TLS metrics; nothing without -Z or metrics.
func (m *metrics) registerTLS(st *certStore) {
	if m == nil || st == nil {
		return
	}
	d := newFamily
	tc := &tlsCollector{
		st:         st,
		handshakes: d("tandem_tls_handshakes_total", "TLS handshakes completed, by whether they resumed a session.", "resumed"),
		errors:     d("tandem_tls_handshake_errors_total", "TLS handshakes that failed or timed out (ssl_handshake_errors)."),
		timeouts:   d("tandem_tls_handshake_timeouts_total", "TLS handshakes closed at --tls-handshake-timeout (included in tandem_tls_handshake_errors_total)."),
		protoErr:   d("tandem_tls_proto_errors_total", "TLS connections closed on a protocol error after the handshake (ssl_proto_errors)."),
		expiry:     d("tandem_tls_cert_expiry_timestamp_seconds", "Expiry (NotAfter) of the served certificate, unix seconds."),
		loaded:     d("tandem_tls_cert_loaded_timestamp_seconds", "When the certificate was last loaded (start, refresh_certs, SIGHUP), unix seconds."),
	}
	m.extra = append(m.extra, tc.collect)
}

// collect adds the TLS samples to e.
func (c *tlsCollector) collect(e *expo) {
	n := c.st.counters
	cur := c.st.cur.Load()
	counter := func(d *family, v uint64, labels ...string) {
		e.add(d, counterValue, float64(v), labels...)
	}
	counter(c.handshakes, n.NewSessions.Load(), "false")
	counter(c.handshakes, n.Resumed.Load(), "true")
	counter(c.errors, n.HandshakeErrors.Load())
	counter(c.timeouts, n.HandshakeTimeouts.Load())
	counter(c.protoErr, n.ProtoErrors.Load())
	e.add(c.expiry, gaugeValue, float64(cur.notAfter.Unix()))
	e.add(c.loaded, gaugeValue, float64(cur.loaded.Unix()))
}
