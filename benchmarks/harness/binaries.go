package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ErrUnavailable marks a target whose server binary could not be obtained;
// the harness skips such targets and says why.
var ErrUnavailable = errors.New("harness: server unavailable")

// BuildTandem builds ./cmd/tandem of the module rooted at repo into dir and
// returns the binary's path. It builds as docs/deploy/release.sh does (static,
// -trimpath), so that RSS is measured on the binary users run: a cgo build
// maps the C library too (1.1-1.9 MB more at peak, docs/benchmarks-appendix.md 12a).
func BuildTandem(ctx context.Context, repo, dir string) (string, error) {
	srcs, _ := filepath.Glob(filepath.Join(repo, "cmd", "tandem", "*.go"))
	if len(srcs) == 0 {
		return "", fmt.Errorf("%w: %s has no Go files yet", ErrUnavailable, filepath.Join(repo, "cmd", "tandem"))
	}
	out := filepath.Join(dir, "tandem")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./cmd/tandem")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: go build ./cmd/tandem: %v\n%s", ErrUnavailable, err, lastLines(string(b), 15))
	}
	return out, nil
}

// FindMemcached returns the path of the memcached binary. When it is missing
// and install is set and the harness runs as root, it installs the Debian
// package first (progress goes to log).
func FindMemcached(ctx context.Context, install bool, log io.Writer) (string, error) {
	return findOrInstall(ctx, "memcached", "memcached", install, log)
}

// FindMemcslap returns the path of libmemcached's memcslap, installing
// Debian's libmemcached-tools as FindMemcached installs memcached.
func FindMemcslap(ctx context.Context, install bool, log io.Writer) (string, error) {
	return findOrInstall(ctx, "memcslap", "libmemcached-tools", install, log)
}

// findOrInstall returns the path of bin, from PATH or /usr/bin, installing
// the Debian package pkg when it is missing, install is set and the harness
// runs as root.
func findOrInstall(ctx context.Context, bin, pkg string, install bool, log io.Writer) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	if p := "/usr/bin/" + bin; fileExists(p) {
		return p, nil
	}
	if !install {
		return "", fmt.Errorf("%w: %s is not installed (apt-get install -y %s)", ErrUnavailable, bin, pkg)
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%w: %s is not installed and the harness is not root: "+
			"run `sudo apt-get install -y %s`", ErrUnavailable, bin, pkg)
	}
	fmt.Fprintf(log, "harness: %s missing: apt-get install -y %s\n", bin, pkg)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	install1 := func() error {
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", pkg)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		return cmd.Run()
	}
	if err := install1(); err != nil {
		upd := exec.CommandContext(ctx, "apt-get", "update")
		upd.Stdout, upd.Stderr = log, log
		_ = upd.Run()
		if err := install1(); err != nil {
			return "", fmt.Errorf("%w: apt-get install %s: %v", ErrUnavailable, pkg, err)
		}
	}
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s still missing after apt-get install %s", ErrUnavailable, bin, pkg)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// lastLines returns at most n trailing lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// serverModule is the module path of the server, whose root holds
// cmd/tandem. The benchmarks module (github.com/tandemcache/tandem/benchmarks)
// lives below it.
const serverModule = "github.com/tandemcache/tandem"

// FindRepo walks up from dir to the directory holding the server module's
// go.mod (passing the benchmarks module's own go.mod on the way).
func FindRepo(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && modulePath(b) == serverModule {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("harness: no tandem go.mod above %s (use --repo)", dir)
		}
	}
}

// modulePath returns the path of a go.mod's module directive, or "".
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`)
		}
	}
	return ""
}
