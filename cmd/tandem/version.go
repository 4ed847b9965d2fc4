package main

// commit is the source revision the binary was built from, stamped by the
// release build (docs/deploy/release.sh) with -ldflags "-X main.commit=...",
// as version can be. Empty in a plain go build or go install.
var commit string

// versionLine is what --version prints: tandem's release, the commit when
// stamped, and the memcached protocol version the server reports.
func versionLine() string {
	if commit == "" {
		return "tandem " + version + " (memcached protocol " + protocolVersion + ")"
	}
	return "tandem " + version + " (commit " + commit + ", memcached protocol " + protocolVersion + ")"
}
