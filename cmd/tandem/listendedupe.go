package main

import "strconv"

// listenEnv names the environment variable that replaces -l's default
// (127.0.0.1) when no -l is given. The container image sets it to 0.0.0.0,
// so that a command line with its own -l (a compose file written for
// memcached) listens where that -l says, and only there.
const listenEnv = "TANDEM_LISTEN"

// dedupeListen drops a -l value that names a listener already given
// (memcached 1.6.18 skips a repeated -l too): two identical values, or two
// that resolve to the same TLS kind and host:port with -p filling in, such
// as "0.0.0.0" and "0.0.0.0:11211". Values that do not parse are kept for
// Validate to report.
func dedupeListen(listen []string, port int) []string {
	seen := make(map[string]bool, len(listen))
	out := listen[:0:0]
	for _, l := range listen {
		key := l
		one := Config{Port: port, Listen: []string{l}}
		if addrs, err := one.ListenAddrs(); err == nil {
			kind, _ := splitListen(l)
			key = strconv.Itoa(int(kind)) + "|" + addrs[0]
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, l)
	}
	return out
}
