package handler

import (
	"bytes"
	"testing"

	"github.com/tandemcache/tandem/protocol"
	"github.com/tandemcache/tandem/protocol/transcript"
)

// TestTranscriptsInProcess replays every recorded memcached exchange
// through a session (parser + handler + cache) and compares the replies
// byte for byte. Cases run in order on one handler, each on a new session
// (a new connection), feeding the request in its recorded segments.
func TestTranscriptsInProcess(t *testing.T) {
	cases, err := transcript.Load()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newTestHandler(t, nil)
	for _, tc := range cases {
		s := h.NewSession("")
		var pending, out []byte
		closed := false
		var r protocol.Request
	feed:
		for _, seg := range tc.Segments {
			pending = append(pending, seg...)
			for len(pending) > 0 {
				n := s.Next(pending, &r)
				if n == 0 {
					break
				}
				pending = pending[n:]
				if r.Cmd == protocol.CmdNone {
					continue
				}
				var c bool
				out, c = s.Execute(&r, out)
				if c {
					closed = true
					break feed
				}
			}
		}
		if !bytes.Equal(out, tc.Want()) || closed != tc.Close {
			t.Errorf("%s: %s:\nrequest %q\n got %q (closed=%v)\nwant %q (closed=%v)",
				tc.File, tc.Name, short(tc.Request()), short(out), closed, short(tc.Want()), tc.Close)
		}
	}
}

func short(b []byte) []byte {
	if len(b) > 400 {
		return append(b[:400:400], "..."...)
	}
	return b
}
