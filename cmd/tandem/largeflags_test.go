package main

import "testing"

// TestLargeClientFlags: --large-client-flags serves 64-bit client flags in
// every mode (text, meta; a binary get returns their low 32 bits), and
// refuses a number over 64 bits as memcached built with
// --enable-large-client-flags does. Without the flag, flags are 32 bits
// (the transcripts compare that with the installed memcached).
func TestLargeClientFlags(t *testing.T) {
	const (
		req = "set k 18446744073709551615 0 1\r\nx\r\ngets k\r\n" +
			"ms m 2 F4294967296 T0\r\nab\r\nmg m f v\r\n" +
			"set n 18446744073709551616 0 2\r\nxy\r\n" +
			"append k 0 0 1\r\ny\r\nget k m\r\nmn\r\n"
		want = "STORED\r\nVALUE k 18446744073709551615 1 1\r\nx\r\nEND\r\n" +
			"HD\r\nVA 2 f4294967296\r\nab\r\n" +
			"CLIENT_ERROR bad command line format\r\n" + // the data line swallowed, as memcached 1.6.45 does
			"STORED\r\nVALUE k 18446744073709551615 2\r\nxy\r\nVALUE m 4294967296 2\r\nab\r\nEND\r\nMN\r\n"
	)
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "--large-client-flags")
		c := dial(t, s.Addr)
		if got := roundTrip(t, c, req, len(want)); got != want {
			t.Fatalf("got  %s\nwant %s", quote(got), quote(want))
		}
	})
}
