package protocol

import (
	"strings"
	"testing"
)

// TestKeyLengthBoundary: every command that takes a key accepts a 250-byte key and refuses a
// 251-byte one (memcached's KEY_MAX_LENGTH), in pure Go so that the suite catches an off-by-one
// where memcached is not installed for the differential tests.
func TestKeyLengthBoundary(t *testing.T) {
	commands := []struct{ name, line, data string }{
		{"get", "get %s", ""},
		{"gets", "gets %s", ""},
		{"gat", "gat 0 %s", ""},
		{"gats", "gats 0 %s", ""},
		{"set", "set %s 0 0 1", "x\r\n"},
		{"add", "add %s 0 0 1", "x\r\n"},
		{"replace", "replace %s 0 0 1", "x\r\n"},
		{"append", "append %s 0 0 1", "x\r\n"},
		{"prepend", "prepend %s 0 0 1", "x\r\n"},
		{"cas", "cas %s 0 0 1 1", "x\r\n"},
		{"delete", "delete %s", ""},
		{"incr", "incr %s 1", ""},
		{"decr", "decr %s 1", ""},
		{"touch", "touch %s 0", ""},
		{"mg", "mg %s v", ""},
		{"ms", "ms %s 1", "x\r\n"},
		{"md", "md %s", ""},
		{"ma", "ma %s", ""},
		{"me", "me %s", ""},
	}
	for _, c := range commands {
		for _, n := range []int{250, 251} {
			in := strings.Replace(c.line, "%s", strings.Repeat("k", n), 1) + "\r\n" + c.data
			got, err := parseAll(NewParser(testMaxValue), []byte(in))
			if err != "" {
				t.Fatalf("%s key %d: contract violation: %s", c.name, n, err)
			}
			refused := len(got) > 0 && strings.HasPrefix(got[0], "error ")
			if refused != (n > MaxKeyLen) {
				t.Errorf("%s with a %d-byte key: got %s, want it %s", c.name, n, quoteAll(got),
					map[bool]string{true: "refused", false: "accepted"}[n > MaxKeyLen])
			}
		}
	}
}
