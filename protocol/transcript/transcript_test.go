package transcript

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	text := "# comment\n=== one\n> set a 0 0 1\\r\\n\n> x\\r\\n\n~\n>* 2 get a\\r\\n\n< STORED\\r\\n\n<* 2 END\\r\\n\n! close\n\n=== two\n> \\x00\n"
	cs, err := Parse("f.txt", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("got %d cases, want 2", len(cs))
	}
	c := cs[0]
	if c.Name != "one" || len(c.Segments) != 2 || string(c.Segments[0]) != "set a 0 0 1\r\nx\r\n" ||
		string(c.Segments[1]) != "get a\r\nget a\r\n" || string(c.Reply) != "STORED\r\nEND\r\nEND\r\n" || !c.Close {
		t.Fatalf("case one parsed as %+v", c)
	}
	if string(cs[1].Request()) != "\x00" || cs[1].Close {
		t.Fatalf("case two parsed as %+v", cs[1])
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"before case", "> x\n", "before the first case"},
		{"bad escape", "=== a\n> \\q\n", "bad escape"},
		{"bad repeat", "=== a\n>* x y\n", "bad repeat"},
		{"unknown", "=== a\n? x\n", "unknown line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.txt", tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) = %v, want error containing %q", tc.text, err, tc.want)
			}
		})
	}
}

func TestLoadProjectTranscripts(t *testing.T) {
	cs, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 100 {
		t.Fatalf("loaded %d cases, want the recorded corpus (100+)", len(cs))
	}
}

func TestParseNewer(t *testing.T) {
	cs, err := Parse("f.txt", "=== a\n> \\r\\n\n< ERROR\\r\\n\n@ short line\n<+ CLIENT_ERROR bad command line format\\r\\n\n")
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	if string(c.Reply) != "ERROR\r\n" || string(c.Want()) != "CLIENT_ERROR bad command line format\r\n" || len(c.Newer) != 1 {
		t.Fatalf("parsed as %+v", c)
	}
	// "<+" alone: the newest memcached sends nothing.
	cs, err = Parse("f.txt", "=== a\n> x\n< ERROR\\r\\n\n@ swallow rejected data\n<+\n")
	if err != nil {
		t.Fatal(err)
	}
	if c := cs[0]; c.NewReply == nil || len(c.Want()) != 0 {
		t.Fatalf("parsed as %+v", c)
	}
	for _, text := range []string{
		"=== a\n> x\n< ERROR\\r\\n\n<+ OK\\r\\n\n",  // <+ without @
		"=== a\n> x\n< ERROR\\r\\n\n@ short line\n", // @ without <+
		"=== a\n> x\n@ no such difference\n<+ OK\n", // not in the table
	} {
		if _, err := Parse("f.txt", text); err == nil {
			t.Errorf("Parse(%q) accepted it", text)
		}
	}
}

// TestEveryDifferenceShown checks the table of differences against the
// project's transcripts: each difference is shown by at least one case
// (which the differential tests replay against memcached 1.6.18 too).
func TestEveryDifferenceShown(t *testing.T) {
	cs, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, c := range cs {
		for _, n := range c.Newer {
			shown[n] = true
		}
	}
	for _, d := range Differences {
		if !shown[d.Name] {
			t.Errorf("difference %q is shown by no transcript case", d.Name)
		}
	}
}
