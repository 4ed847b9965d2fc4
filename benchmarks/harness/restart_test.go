package harness

import (
	"strings"
	"testing"
)

// TestTailBufferMarkers: a marker is timestamped once, also when it
// arrives in pieces, and survives the tail's trimming.
func TestTailBufferMarkers(t *testing.T) {
	b := &tailBuffer{max: 64, markers: []string{"tandem listening", "warm restart:"}}
	for _, p := range []string{`{"message":"warm rest`, `art: items restored"}` + "\n", strings.Repeat("x", 100),
		`{"message":"tandem listening"}` + "\n"} {
		b.Write([]byte(p))
	}
	w, ok1 := b.seen("warm restart:")
	l, ok2 := b.seen("tandem listening")
	if !ok1 || !ok2 || l.Before(w) {
		t.Errorf("seen: warm restart %v %v, listening %v %v", w, ok1, l, ok2)
	}
	b.Write([]byte("tandem listening again"))
	if l2, _ := b.seen("tandem listening"); !l2.Equal(l) {
		t.Errorf("second listening line moved the mark from %v to %v", l, l2)
	}
	if _, ok := b.seen("cold start:"); ok {
		t.Error("seen a marker that never came")
	}
}

func TestLogLine(t *testing.T) {
	out := `{"level":"info","memory_file":"/dev/shm/x","reason":"no metadata file","message":"cold start: the memory file's items were not restored"}
{"level":"info","items":1000000,"took":253.4,"message":"warm restart: items restored from the memory file"}
not json
`
	tests := []struct {
		name, msg string
		want      logFields
		ok        bool
	}{
		{"warm", "warm restart:", logFields{Items: 1000000, Took: 253.4}, true},
		{"cold", "cold start:", logFields{Reason: "no metadata file"}, true},
		{"absent", "memory file saved", logFields{}, false},
	}
	for _, tc := range tests {
		got, ok := logLine(out, tc.msg)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: logLine(%q) = %+v, %v; want %+v, %v", tc.name, tc.msg, got, ok, tc.want, tc.ok)
		}
	}
}
