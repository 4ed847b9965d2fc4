package reactor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// Listening: every mode listens on Config.Addrs (TCP) and Config.UnixSocket
// the same way memcached does with -l/-p and -s/-a.

// prepareUnixSocket makes path free for a new socket: a stale socket file
// (nobody answers on it) is removed; a live one, or a file that is not a
// socket, is an error.
func prepareUnixSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reactor: unix socket %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("reactor: unix socket %s: the path exists and is not a socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("reactor: unix socket %s: another server is listening on it", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("reactor: removing the stale unix socket %s: %w", path, err)
	}
	return nil
}

// bindError names the address a failed listen was for, like Go's net
// errors ("listen tcp 127.0.0.1:11211: bind: address already in use"). gnet
// reports the first failure without the address, so each address is tried
// again with the standard library to find it.
func bindError(cfg *Config, err error) error {
	for _, a := range cfg.Addrs {
		ln, lerr := net.Listen("tcp", a)
		if lerr != nil {
			return fmt.Errorf("reactor: %w", lerr)
		}
		ln.Close()
	}
	return fmt.Errorf("reactor: listen: %w", err)
}
