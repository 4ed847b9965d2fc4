package main

// Tests of what ships besides the server's code: the release build
// (docs/deploy/release.sh), the container image (docs/deploy/Containerfile,
// built by docs/deploy/image.sh) and the systemd unit
// (docs/deploy/tandem.service). The release and image tests build for
// minutes, so they run only with TANDEM_TEST_PACKAGING=1, which .ci/test sets
// in a step of their own.

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/cmd/testenv"
)

const packagingEnv = "TANDEM_TEST_PACKAGING"

const repoRoot = "../.."

func needPackagingTests(t *testing.T) {
	t.Helper()
	if os.Getenv(packagingEnv) == "" {
		t.Skipf("SKIPPED: builds for minutes; set %s=1 to run it (.ci/test does)", packagingEnv)
	}
}

// headCommit is what the release scripts stamp: the short HEAD, "-dirty"
// with uncommitted changes, "unknown" outside git.
func headCommit(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", repoRoot, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.TrimSpace(string(st))) > 0 {
		rev += "-dirty"
	}
	return rev
}

// checkStatic fails unless path is a statically linked ELF for machine m.
func checkStatic(t *testing.T, path string, m elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != m {
		t.Errorf("%s: machine %v, want %v", path, f.Machine, m)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (has an interpreter): CGO_ENABLED=0 missing?", path)
		}
	}
}

// checkServes starts bin on a free loopback port and checks a version round
// trip: the binary serves, not only prints its version.
func checkServes(t *testing.T, bin string) {
	t.Helper()
	s := startServerArgs(t, bin, "-p", "0", "-l", "127.0.0.1", "--log-format", "json", "-m", "16")
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := roundTrip(t, c, "version\r\n", len(sentinelReply)); got != sentinelReply {
		t.Fatalf("%s: version answered %q, want %q", bin, got, sentinelReply)
	}
}

// maxTrackedFile bounds the size of a file in the repository: the largest
// legitimate one is a benchmark result of ~0.6 MB, and a memory file or a
// binary committed by accident (a 128 MiB memory file once was) makes every
// clone pay for it.
const maxTrackedFile = 4 << 20

// TestNoLargeFiles fails on a tracked file above maxTrackedFile. It skips
// outside a git checkout (a source tarball).
func TestNoLargeFiles(t *testing.T) {
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("SKIPPED: not a git checkout, or no git: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fi, err := os.Lstat(filepath.Join(repoRoot, name))
		if err != nil {
			continue // deleted in the working tree
		}
		if fi.Mode().IsRegular() && fi.Size() > maxTrackedFile {
			t.Errorf("%s is %d bytes, above %d: committed by accident? (git rm it, or raise the bound if it belongs)", name, fi.Size(), maxTrackedFile)
		}
	}
}

// TestReleaseBuild runs the release script for linux/amd64 and linux/arm64
// and checks the checksums, the tarball's contents, the stamp in --version
// and a version round trip (amd64, which this machine runs), and that the
// arm64 binary is a static arm64 executable.
func TestReleaseBuild(t *testing.T) {
	needPackagingTests(t)
	out := t.TempDir()
	const v = "0.0.0-releasetest"
	rev := headCommit(t) // before the build, as the script reads it
	cmd := exec.Command("bash", filepath.Join(repoRoot, "docs/deploy/release.sh"), "--arch", "amd64 arm64", "--version", v, "--out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}
	name := "tandem-" + v + "-linux-amd64"

	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's format", line)
		}
		b, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", file)
		}
		listed[file] = true
	}
	arm := "tandem-" + v + "-linux-arm64"
	for _, f := range []string{name, name + ".tar.gz", arm, arm + ".tar.gz"} {
		if !listed[f] {
			t.Errorf("SHA256SUMS does not list %s:\n%s", f, sums)
		}
	}

	checkStatic(t, filepath.Join(out, arm), elf.EM_AARCH64)
	bin := filepath.Join(out, name)
	checkStatic(t, bin, elf.EM_X86_64)
	got, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("tandem %s (commit %s, memcached protocol %s)\n", v, rev, protocolVersion)
	if string(got) != want {
		t.Errorf("--version of the release binary: %q, want %q", got, want)
	}

	// The tarball: one directory with the binary and its documents.
	f, err := os.Open(bin + ".tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want 0:0", h.Name, h.Uid, h.Gid)
		}
		files[h.Name] = true
	}
	for _, want := range []string{"tandem", "tandem.1", "tandem.service", "tandem-memory.mount", "tandem-warm-restart.conf", "LICENSE", "CHANGELOG.md"} {
		if !files[name+"/"+want] {
			t.Errorf("%s.tar.gz lacks %s/%s (has %v)", name, name, want, files)
		}
	}
	checkServes(t, bin)

	// Reproducible: the same commit builds the same bytes, tarballs included.
	out2 := t.TempDir()
	cmd = exec.Command("bash", filepath.Join(repoRoot, "docs/deploy/release.sh"), "--arch", "amd64 arm64", "--version", v, "--out", out2)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh, second run: %v\n%s", err, b)
	}
	if now := headCommit(t); now != rev {
		t.Logf("the tree changed between the two builds (%s, then %s): not compared", rev, now)
		return
	}
	if sums2, err := os.ReadFile(filepath.Join(out2, "SHA256SUMS")); err != nil || string(sums2) != string(sums) {
		t.Errorf("two release builds of one commit differ (%v):\n%s\n%s", err, sums, sums2)
	}
}

// TestContainerImage builds the image with docs/deploy/image.sh --offline
// (no registry is reachable here), exports its filesystem (podman cannot
// start containers on these machines: crun refuses the cgroup and rlimit
// setup), and checks the image's configuration and its binary.
func TestContainerImage(t *testing.T) {
	needPackagingTests(t)
	podman := testenv.NeedTool(t, "podman", "podman")
	tag := "localhost/tandem-imagetest:" + rand.Text()[:8]
	const v = "0.0.0-imagetest"
	rev := headCommit(t) // before the build, as the script reads it
	build := exec.Command("bash", filepath.Join(repoRoot, "docs/deploy/image.sh"), "--offline", "--tag", tag, "--version", v)
	// The script chooses chroot isolation itself where cgroups are v1 or
	// hybrid (crun refuses them). No intermediate images are kept, so the
	// test leaves only the builder.
	build.Env = append(os.Environ(), "BUILDAH_ISOLATION=", "BUILDAH_LAYERS=false")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("image.sh: %v\n%s", err, b)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", tag).Run() })

	cfg, err := exec.Command(podman, "image", "inspect", "--format",
		"{{.Config.User}}|{{range $p, $_ := .Config.ExposedPorts}}{{$p}} {{end}}|{{json .Config.Entrypoint}}|{{json .Config.Cmd}}|{{json .Config.Env}}", tag).Output()
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimSpace(string(cfg)), "|")
	if len(parts) != 5 {
		t.Fatalf("podman image inspect: %q", cfg)
	}
	if user := parts[0]; user == "" || user == "0" || strings.HasPrefix(user, "0:") || user == "root" {
		t.Errorf("image runs as %q, want a non-root user", user)
	}
	if strings.TrimSpace(parts[1]) != "11211/tcp" {
		t.Errorf("image exposes %q, want 11211/tcp", parts[1])
	}
	if want := `["/usr/local/bin/tandem"]`; parts[2] != want {
		t.Errorf("image entrypoint %s, want %s (a -l of the command line must not add to the image's)", parts[2], want)
	}
	if want := `"` + listenEnv + `=0.0.0.0"`; !strings.Contains(parts[4], want) {
		t.Errorf("image environment %s, want %s (every interface of the container without -l)", parts[4], want)
	}

	ctr, err := exec.Command(podman, "create", tag).Output()
	if err != nil {
		t.Fatalf("podman create: %v", err)
	}
	id := strings.TrimSpace(string(ctr))
	t.Cleanup(func() { _ = exec.Command(podman, "rm", "-f", id).Run() })
	root := t.TempDir()
	export := exec.Command(podman, "export", id)
	untar := exec.Command("tar", "-x", "-C", root)
	pipe, err := export.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := export.Run(); err != nil {
		t.Fatalf("podman export: %v", err)
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar -x: %v", err)
	}

	bin := filepath.Join(root, "usr/local/bin/tandem")
	checkStatic(t, bin, elf.EM_X86_64)
	got, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("tandem %s (commit %s, memcached protocol %s)\n", v, rev, protocolVersion)
	if string(got) != want {
		t.Errorf("--version of the image's binary: %q, want %q", got, want)
	}
	// The image holds the binary and its license, nothing else.
	var extra []string
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if rel, _ := filepath.Rel(root, p); rel != "usr/local/bin/tandem" && rel != "usr/share/doc/tandem/LICENSE" {
				extra = append(extra, rel)
			}
		}
		return nil
	})
	if len(extra) > 0 {
		t.Errorf("image has files besides the binary and LICENSE: %v", extra)
	}
	checkServes(t, bin)
}

// TestSystemdUnit checks docs/deploy/tandem.service with systemd-analyze
// verify (against the test's binary, put where ExecStart looks), and the
// settings the docs promise: unix sockets (-s) allowed, no GOMEMLIMIT that
// would cap the Go heap at the process's whole budget.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join(repoRoot, "docs/deploy/tandem.service"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(unit)
	for _, want := range []string{"AF_UNIX", "ExecStart=/usr/local/bin/tandem "} {
		if !strings.Contains(text, want) {
			t.Errorf("tandem.service lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^Environment=.*GOMEMLIMIT`).MatchString(text) {
		t.Errorf("tandem.service sets GOMEMLIMIT: tandem derives it from -m, and the slab pages are outside the Go heap")
	}
	// Every flag on the ExecStart line is one of tandem's.
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "ExecStart=/usr/local/bin/tandem "); ok {
			if _, _, err := parseFlags(strings.Fields(line)); err != nil {
				t.Errorf("tandem.service ExecStart: %v", err)
			}
		}
	}

	analyze := testenv.NeedTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	local := strings.ReplaceAll(text, "/usr/local/bin/tandem", binPath)
	path := filepath.Join(dir, "tandem.service")
	if err := os.WriteFile(path, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	// verify also reads the units this one names (network.target, ...); a
	// complaint about one of the machine's own units is not the test's.
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || strings.Contains(string(out), "tandem") {
		t.Fatalf("systemd-analyze verify tandem.service: %v\n%s", err, out)
	}
	if len(out) > 0 {
		t.Logf("systemd-analyze verify, about other units:\n%s", out)
	}
}

// TestSystemdWarmRestartUnits checks the warm-restart example of docs/operations.md: the
// drop-in's ExecStart parses and points -e into the mount's tmpfs, and systemd-analyze verify
// accepts tandem.service with the drop-in and the mount unit under the name systemd gives it.
func TestSystemdWarmRestartUnits(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, "docs/deploy", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	service, dropIn, mount := read("tandem.service"), read("tandem-warm-restart.conf"), read("tandem-memory.mount")
	where := regexp.MustCompile(`(?m)^Where=(.*)$`).FindStringSubmatch(mount)
	if where == nil {
		t.Fatal("tandem-memory.mount has no Where=")
	}
	found := false
	for line := range strings.Lines(dropIn) {
		if args, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecStart=/usr/local/bin/tandem "); ok {
			cfg, _, err := parseFlags(strings.Fields(args))
			if err != nil {
				t.Fatalf("warm-restart drop-in ExecStart: %v", err)
			}
			if filepath.Dir(cfg.MemoryFile) != where[1] {
				t.Errorf("the drop-in's -e %q is not on the mount's tmpfs %q", cfg.MemoryFile, where[1])
			}
			found = true
		}
	}
	if !found {
		t.Fatal("the warm-restart drop-in has no tandem ExecStart")
	}

	analyze := testenv.NeedTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	local := func(s string) []byte { return []byte(strings.ReplaceAll(s, "/usr/local/bin/tandem", binPath)) }
	mountName := `var-lib-tandem\x2dmemory.mount`
	if out, err := exec.Command("systemd-escape", "-p", "--suffix=mount", where[1]).Output(); err == nil {
		mountName = strings.TrimSpace(string(out))
	}
	if !strings.Contains(dropIn, mountName) {
		t.Errorf("the drop-in does not require the mount by its unit name %q", mountName)
	}
	for name, body := range map[string][]byte{
		"tandem.service": local(service), "tandem.service.d/warm-restart.conf": local(dropIn), mountName: []byte(mount),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// By name, so that verify reads the drop-in from the unit path.
	cmd := exec.Command(analyze, "verify", "tandem.service", mountName)
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "tandem") {
		t.Fatalf("systemd-analyze verify with the warm-restart drop-in and mount: %v\n%s", err, out)
	}
}
