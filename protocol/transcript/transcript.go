// Package transcript reads recorded exchanges with memcached: request bytes
// and the exact reply memcached 1.6.18 sent, used to check tandem against
// memcached in-process and end to end. The format is described in
// protocol/testdata/transcripts/README.md.
package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Case is one recorded exchange.
type Case struct {
	File, Name string
	// Segments are the request bytes, split where the recording paused
	// (write one, wait ~100 ms, write the next).
	Segments [][]byte
	// Reply is what memcached 1.6.18 sent.
	Reply []byte
	// NewReply is, when it differs from Reply, what the newest memcached
	// sends and tandem must send ("<+" lines); Newer names the differences
	// (entries of Differences) that make it differ ("@" lines).
	NewReply []byte
	Newer    []string
	// Close is set when memcached closed the connection after Reply.
	Close bool
}

// Want returns the reply tandem must send: NewReply when the case has one,
// else Reply.
func (c *Case) Want() []byte {
	if c.NewReply != nil {
		return c.NewReply
	}
	return c.Reply
}

// Request returns all request bytes.
func (c *Case) Request() []byte {
	var b []byte
	for _, s := range c.Segments {
		b = append(b, s...)
	}
	return b
}

// Dir returns the transcripts folder, found from the calling test's
// working directory by walking up to the module root.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "protocol", "testdata", "transcripts")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("transcript: protocol/testdata/transcripts not found above %s", dir)
		}
		dir = parent
	}
}

// LoadDir reads every *.txt file of dir, in name order, cases in file order.
func LoadDir(dir string) ([]Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("transcript: no *.txt in %s", dir)
	}
	sort.Strings(paths)
	var cases []Case
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		cs, err := Parse(filepath.Base(p), string(data))
		if err != nil {
			return nil, err
		}
		cases = append(cases, cs...)
	}
	return cases, nil
}

// Load reads the project's transcripts (see Dir).
func Load() ([]Case, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	return LoadDir(dir)
}

// Parse reads one transcript file's text; file names the errors.
func Parse(file, text string) ([]Case, error) {
	var cases []Case
	var c *Case
	var seg []byte
	flush := func() error {
		if c == nil {
			return nil
		}
		if (c.NewReply != nil) != (len(c.Newer) > 0) {
			return fmt.Errorf("%s: case %q: a newest reply (<+) needs the differences it shows (@), and @ a newest reply", file, c.Name)
		}
		c.Segments = append(c.Segments, seg)
		cases = append(cases, *c)
		return nil
	}
	for i, line := range strings.Split(text, "\n") {
		ln := i + 1
		var err error
		var s string
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "=== "):
			err = flush()
			c = &Case{File: file, Name: line[4:]}
			seg = nil
		case c == nil:
			return nil, fmt.Errorf("%s:%d: %q before the first case", file, ln, line)
		case strings.HasPrefix(line, "> "):
			s, err = unquote(line[2:])
			seg = append(seg, s...)
		case strings.HasPrefix(line, ">* "):
			s, err = repeat(line[3:])
			seg = append(seg, s...)
		case line == "~":
			c.Segments = append(c.Segments, seg)
			seg = nil
		case strings.HasPrefix(line, "< "):
			s, err = unquote(line[2:])
			c.Reply = append(c.Reply, s...)
		case strings.HasPrefix(line, "<* "):
			s, err = repeat(line[3:])
			c.Reply = append(c.Reply, s...)
		case strings.HasPrefix(line, "<+ "):
			s, err = unquote(line[3:])
			c.NewReply = append(c.NewReply, s...)
		case line == "<+":
			// The newest memcached sends nothing (noreply).
			if c.NewReply == nil {
				c.NewReply = []byte{}
			}
		case strings.HasPrefix(line, "<+* "):
			s, err = repeat(line[4:])
			c.NewReply = append(c.NewReply, s...)
		case strings.HasPrefix(line, "@ "):
			if _, ok := Lookup(line[2:]); !ok {
				err = fmt.Errorf("%q is not in the table of differences (newer.go)", line[2:])
			}
			c.Newer = append(c.Newer, line[2:])
		case line == "! close":
			c.Close = true
		default:
			err = fmt.Errorf("unknown line %q", line)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, ln, err)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return cases, nil
}

func unquote(s string) (string, error) {
	v, err := strconv.Unquote(`"` + s + `"`)
	if err != nil {
		return "", fmt.Errorf("bad escape in %q: %w", s, err)
	}
	return v, nil
}

func repeat(s string) (string, error) {
	count, text, ok := strings.Cut(s, " ")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 0 {
		return "", fmt.Errorf("bad repeat %q", s)
	}
	v, err := unquote(text)
	return strings.Repeat(v, n), err
}
