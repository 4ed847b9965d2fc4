package handler

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tandemcache/tandem/protocol"
)

// Credentials are the users allowed to authenticate (--auth-file): binary
// connections with SASL PLAIN, text connections as memcached's -Y does. It
// is read-only after loading and safe for concurrent use.
type Credentials struct {
	users map[string]string
}

// ErrBadAuthFile is wrapped by the errors of ParseCredentials.
var ErrBadAuthFile = errors.New("handler: bad auth file")

// LoadCredentials reads an auth file (see ParseCredentials).
func LoadCredentials(path string) (*Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("handler: auth file: %w", err)
	}
	defer f.Close()
	return ParseCredentials(f)
}

// ParseCredentials reads memcached's auth file format: one "user:password"
// per line, the user up to the first colon, the password up to the end of
// the line (a trailing "\r" is dropped). Blank lines are skipped. A line
// without a colon is an error (memcached refuses to start on it), and so is
// a file without users. Unlike memcached, which keeps the first 8 entries,
// every line counts.
func ParseCredentials(r io.Reader) (*Credentials, error) {
	c := &Credentials{users: map[string]string{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			continue
		}
		user, pass, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: line %d has no user:password", ErrBadAuthFile, n)
		}
		c.users[user] = pass
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAuthFile, err)
	}
	if len(c.users) == 0 {
		return nil, fmt.Errorf("%w: no user:password lines", ErrBadAuthFile)
	}
	return c, nil
}

// Check reports whether user and password match an entry, in time that does
// not depend on how much of the password matched.
func (c *Credentials) Check(user, password []byte) bool {
	want, ok := c.users[string(user)]
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(want), password) == 1
}

// countAuth counts an authentication attempt (auth_cmds, auth_errors).
func (h *Handler) countAuth(ok bool) {
	h.count(AuthCmds, 1)
	if !ok {
		h.count(AuthErrors, 1)
	}
}

// textAuth answers an authentication attempt of a text connection.
func (h *Handler) textAuth(r *protocol.Request, out []byte) []byte {
	switch r.Auth {
	case protocol.AuthOK:
		h.countAuth(true)
		return append(out, protocol.RespStored...)
	case protocol.AuthFailed:
		h.countAuth(false)
		return appendLine(out, protocol.ReplyAuthFailed)
	case protocol.AuthBadFormat:
		return appendLine(out, protocol.ReplyAuthBadFormat)
	case protocol.AuthBadTermination:
		return appendLine(out, protocol.ReplyAuthBadTermination)
	}
	return appendLine(out, protocol.ReplyAuthRequired)
}
