package deploytest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// The paths a drwatch package, or the service it installs, writes outside
// the package's own file list. The test installs the package for real, so
// it refuses to start where any of them exists and it did not make it.
var (
	pkgConfigDir = "/etc/drwatch"
	pkgDataDirs  = []string{"/var/lib/drwatch", "/var/lib/private/drwatch"}
	pkgBinary    = "/usr/bin/drwatch"
	pkgUnit      = "/lib/systemd/system/drwatch.service"
)

// testMarker is in every file this test writes outside its temporary
// directory, and testVersion in the versions of the packages it builds, so
// that what an interrupted run left behind (a go test -timeout panic runs
// no clean-up) is told apart from a real installation.
const (
	testMarker  = "written by the drwatch package test (test/deploytest)"
	testVersion = "~pkgtest"
)

// The package `make deb` builds installs everything the operator needs
// (binary, unit, completions, man pages, examples, /etc/drwatch with a
// root-only private/), starts nothing, keeps an operator's config and the
// Raft data across an upgrade, and leaves after a purge only what the
// operator wrote in /etc/drwatch. There is no systemd running here (it is
// not PID 1), so the unit is checked with systemd-analyze verify, not
// started, and the maintainer scripts' systemd calls are recorded by a
// stand-in (dpkgAsUnderSystemd).
func TestDebianPackageInstallUpgradePurge(t *testing.T) {
	if testing.Short() {
		t.Skip("installs a Debian package as root; make test runs it")
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test installs the drwatch package with dpkg -i and must run as root (make test does, as CI does)")
	}
	for bin, pkg := range map[string]string{"dpkg": "dpkg", "dpkg-deb": "dpkg", "dpkg-query": "dpkg",
		"lintian": "lintian", "systemd-analyze": "systemd", "unshare": "util-linux", "make": "make", "git": "git"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found: apt-get install %s (make install-test-deps installs it)", bin, pkg)
		}
	}
	lockAgainstOtherRuns(t)
	clearLeftoversOfAnInterruptedRun(t)
	refuseToTouchARealInstallation(t)
	// systemd keeps the state of DynamicUser= units in /var/lib/private,
	// which the test makes when the machine has none yet.
	_, err := os.Stat("/var/lib/private")
	madePrivate := errors.Is(err, fs.ErrNotExist)
	t.Cleanup(func() {
		purgeEverything(t)
		if madePrivate {
			os.Remove("/var/lib/private")
		}
	})

	tmp := t.TempDir()
	deb1 := buildPackage(t, tmp, "1")
	deb2 := buildPackage(t, tmp, "2")

	t.Run("lintian finds no error and no warning", func(t *testing.T) {
		out, err := exec.Command("lintian", "--fail-on", "error,warning", "--pedantic", "-I", deb1).CombinedOutput()
		t.Logf("lintian %s:\n%s", filepath.Base(deb1), out)
		if err != nil {
			t.Errorf("lintian: got %v, want no error or warning tag", err)
		}
	})
	t.Run("the package holds no conffile", func(t *testing.T) {
		// The config is the operator's, written from the examples: nothing
		// under /etc is a package file, so no upgrade can replace it or stop
		// at a conffile prompt.
		list := run(t, "dpkg-deb", "-c", deb1)
		for _, l := range strings.Split(list, "\n") {
			f := strings.Fields(l)
			if len(f) > 0 && strings.Contains(l, "./etc/") && !strings.HasPrefix(f[0], "d") {
				t.Errorf("got a file under /etc in the package: %s", l)
			}
		}
		dir := filepath.Join(tmp, "control")
		run(t, "dpkg-deb", "-e", deb1, dir)
		if b, err := os.ReadFile(filepath.Join(dir, "conffiles")); err == nil && len(bytes.TrimSpace(b)) > 0 {
			t.Errorf("got conffiles %q, want none", b)
		}
	})

	out, calls := dpkgAsUnderSystemd(t, tmp, "-i", deb1)
	t.Run("install", func(t *testing.T) {
		if !strings.Contains(out, "drwatch: not started") {
			t.Errorf("dpkg -i: got %q, want the postinst to say the watcher is not started", out)
		}
		if want := []string{"systemctl --system daemon-reload"}; !slices.Equal(calls, want) {
			t.Errorf("dpkg -i with no config: got systemd calls %q, want only %q: nothing enabled or started", calls, want)
		}
		checkInstalled(t, "1")
		if _, err := os.Stat(filepath.Join(pkgConfigDir, "drwatch.yaml")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("/etc/drwatch/drwatch.yaml: got %v, want no config before the operator writes one", err)
		}
		unit, err := os.ReadFile(pkgUnit)
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(filepath.Join(root, "deploy/systemd/drwatch.service"))
		if err != nil {
			t.Fatal(err)
		}
		if want := bytes.ReplaceAll(src, []byte("/usr/local/bin/drwatch"), []byte(pkgBinary)); !bytes.Equal(unit, want) {
			t.Errorf("%s: got a unit that differs from deploy/systemd/drwatch.service in more than the binary's path", pkgUnit)
		}
	})
	t.Run("systemd-analyze verify", func(t *testing.T) {
		// Other units on the machine may draw remarks; only ours count.
		out, err := exec.Command("systemd-analyze", "verify", pkgUnit).CombinedOutput()
		var ours []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "drwatch.service") || strings.Contains(l, pkgUnit) {
				ours = append(ours, l)
			}
		}
		if err != nil || len(ours) > 0 {
			t.Errorf("systemd-analyze verify %s: got %v, %q, want exit 0 and nothing about drwatch.service\n%s", pkgUnit, err, ours, out)
		}
	})
	t.Run("config validate on the packaged example", func(t *testing.T) {
		example := "/usr/share/doc/drwatch/examples/node-a.yaml"
		run(t, pkgBinary, "config", "validate", "--config", example, "--no-file-checks")
		// The look-alike: the same example with a key the schema lacks is
		// refused, so the pass above was a real check.
		b, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(tmp, "bad.yaml")
		if err := os.WriteFile(bad, append(b, "no_such_key: 1\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(pkgBinary, "config", "validate", "--config", bad, "--no-file-checks").CombinedOutput(); err == nil {
			t.Errorf("config validate on an example with an unknown key: got exit 0 (%s), want a refusal", out)
		}
	})

	// What an operator writes, and what the running service would make.
	var example []byte
	example, err = os.ReadFile("/usr/share/doc/drwatch/examples/node-b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	config := append([]byte("# "+testMarker+"\n"), bytes.Replace(example, []byte("id: b"), []byte("id: b # edited"), 1)...)
	secret := []byte(testMarker + "\n")
	data := []byte(testMarker + ": raft data\n")
	writeFile(t, filepath.Join(pkgConfigDir, "drwatch.yaml"), config, 0o644)
	writeFile(t, filepath.Join(pkgConfigDir, "private/tokens"), secret, 0o600)
	// systemd makes StateDirectory= of a DynamicUser= unit this way.
	if err := os.MkdirAll("/var/lib/private/drwatch", 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, "/var/lib/private/drwatch/raft.db", data, 0o600)
	if err := os.Symlink("private/drwatch", "/var/lib/drwatch"); err != nil {
		t.Fatal(err)
	}
	operatorFiles := map[string][]byte{
		filepath.Join(pkgConfigDir, "drwatch.yaml"):   config,
		filepath.Join(pkgConfigDir, "private/tokens"): secret,
	}
	dataFiles := map[string][]byte{"/var/lib/drwatch/raft.db": data}

	out, calls = dpkgAsUnderSystemd(t, tmp, "-i", deb2)
	t.Run("upgrade leaves the running watcher alone", func(t *testing.T) {
		// The stand-in systemctl answers is-active with "active": a watcher
		// with a config runs, and the upgrade must still not restart it.
		want := []string{"systemctl --system daemon-reload", "systemctl is-active --quiet drwatch.service"}
		if !slices.Equal(calls, want) {
			t.Errorf("dpkg -i (upgrade): got systemd calls %q, want only %q: no restart", calls, want)
		}
		if !strings.Contains(out, "the running watcher is still 0"+testVersion+"1") {
			t.Errorf("dpkg -i (upgrade): got %q, want the postinst to say the running watcher still runs the old version", out)
		}
	})
	t.Run("upgrade keeps the config, the secrets and the data", func(t *testing.T) {
		checkInstalled(t, "2")
		checkFiles(t, operatorFiles)
		checkFiles(t, dataFiles)
		run(t, pkgBinary, "config", "validate", "--config", filepath.Join(pkgConfigDir, "drwatch.yaml"), "--no-file-checks")
	})

	files := packageFiles(t)
	_, calls = dpkgAsUnderSystemd(t, tmp, "-r", "drwatch")
	t.Run("remove keeps the config and the data", func(t *testing.T) {
		if want := []string{"deb-systemd-invoke stop drwatch.service", "systemctl --system daemon-reload"}; !slices.Equal(calls, want) {
			t.Errorf("dpkg -r: got systemd calls %q, want %q", calls, want)
		}
		for _, f := range files {
			if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: got %v after dpkg -r, want it removed", f, err)
			}
		}
		checkFiles(t, operatorFiles)
		checkFiles(t, dataFiles)
	})

	_, calls = dpkgAsUnderSystemd(t, tmp, "-P", "drwatch")
	t.Run("purge leaves only what the operator wrote", func(t *testing.T) {
		if len(calls) > 0 {
			t.Errorf("dpkg -P: got systemd calls %q, want none", calls)
		}
		if out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", "drwatch").Output(); err == nil && string(out) != "not-installed" {
			t.Errorf("dpkg-query: got status %q after purge, want drwatch unknown or not-installed", out)
		}
		for _, d := range pkgDataDirs {
			if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: got %v after purge, want the Raft data gone", d, err)
			}
		}
		for _, d := range []string{"/usr/share/doc/drwatch"} {
			if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: got %v after purge, want it gone", d, err)
			}
		}
		var left []string
		filepath.WalkDir(pkgConfigDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				left = append(left, p)
			}
			return nil
		})
		want := []string{filepath.Join(pkgConfigDir, "drwatch.yaml"), filepath.Join(pkgConfigDir, "private/tokens")}
		if !slices.Equal(left, want) {
			t.Errorf("%s after purge: got %v, want only the operator's files %v", pkgConfigDir, left, want)
		}
		checkFiles(t, operatorFiles)
	})
}

// dpkgAsUnderSystemd runs dpkg with the maintainer scripts seeing a running
// systemd, and returns dpkg's output and the systemctl and
// deb-systemd-invoke calls they made. No systemd runs here, so in a private
// mount namespace /run/systemd/system exists (the scripts' test for a
// running systemd, as debhelper's) and both commands are a stand-in that
// records its arguments and succeeds; outside the namespace nothing changes.
func dpkgAsUnderSystemd(t *testing.T, tmp string, args ...string) (string, []string) {
	t.Helper()
	log := filepath.Join(tmp, "systemd-calls")
	fake := filepath.Join(tmp, "fake-systemctl")
	script := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> " + log + "\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	setup := `mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system &&
mount --bind "$0" /usr/bin/systemctl && mount --bind "$0" /usr/bin/deb-systemd-invoke && exec dpkg "$@"`
	out := run(t, "unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", setup, fake}, args...)...)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			calls = append(calls, l)
		}
	}
	return out, calls
}

// lockAgainstOtherRuns serialises this test across concurrent go test runs
// on one machine (worktrees of one repository): there is one dpkg database.
func lockAgainstOtherRuns(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/run/lock/drwatch-package-test.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock: %v", err)
	}
	t.Cleanup(func() { f.Close() })
}

// installedVersion is the version of the drwatch package dpkg knows in any
// state but not-installed, or "".
func installedVersion() string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status} ${Version}", "drwatch").Output()
	status, version, _ := strings.Cut(string(out), " ")
	if err != nil || status == "not-installed" {
		return ""
	}
	return version
}

// clearLeftoversOfAnInterruptedRun purges a package of ours and removes
// what this test wrote, each only when it carries the test's marks.
func clearLeftoversOfAnInterruptedRun(t *testing.T) {
	t.Helper()
	if v := installedVersion(); strings.Contains(v, testVersion) {
		t.Logf("purging drwatch %s, left by an interrupted run of this test", v)
		run(t, "dpkg", "-P", "drwatch")
	}
	if b, err := os.ReadFile(filepath.Join(pkgConfigDir, "drwatch.yaml")); err == nil && bytes.Contains(b, []byte(testMarker)) {
		t.Logf("removing %s, left by an interrupted run of this test", pkgConfigDir)
		os.RemoveAll(pkgConfigDir)
	}
	if b, err := os.ReadFile("/var/lib/private/drwatch/raft.db"); err == nil && bytes.Contains(b, []byte(testMarker)) {
		t.Log("removing /var/lib/private/drwatch, left by an interrupted run of this test")
		for _, d := range pkgDataDirs {
			os.RemoveAll(d)
		}
	}
}

// refuseToTouchARealInstallation fails when a drwatch this test did not
// install is on the machine: the test would replace it and then purge it.
func refuseToTouchARealInstallation(t *testing.T) {
	t.Helper()
	if v := installedVersion(); v != "" {
		t.Fatalf("the drwatch package %s is installed here; this test installs and purges drwatch, so it runs only on a machine without one", v)
	}
	for _, p := range append([]string{pkgConfigDir, pkgBinary, pkgUnit, "/etc/systemd/system/drwatch.service"}, pkgDataDirs...) {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists: a drwatch is installed here by hand; this test installs and purges the package, so it runs only on a machine without one", p)
		}
	}
}

// purgeEverything undoes the test, pass or fail: the package and what the
// test wrote as the operator and as the service.
func purgeEverything(t *testing.T) {
	if v := installedVersion(); v != "" {
		if out, err := exec.Command("dpkg", "-P", "drwatch").CombinedOutput(); err != nil {
			t.Errorf("clean-up: dpkg -P drwatch: %v\n%s", err, out)
		}
	}
	for _, p := range append([]string{pkgConfigDir}, pkgDataDirs...) {
		if err := os.RemoveAll(p); err != nil {
			t.Errorf("clean-up: %v", err)
		}
	}
}

// buildPackage runs make deb with the binary and the package stamped n
// (version pkgtestN), into its own directory, and returns the .deb.
func buildPackage(t *testing.T, tmp, n string) string {
	t.Helper()
	dir := filepath.Join(tmp, "deb"+n)
	version := "0" + testVersion + n
	run(t, "make", "-C", root, "deb", "VERSION=pkgtest"+n, "DEB_VERSION="+version,
		"BIN="+filepath.Join(dir, "drwatch"), "DEB_DIR="+dir)
	deb := filepath.Join(dir, "drwatch_"+version+"_"+goarch(t)+".deb")
	st, err := os.Stat(deb)
	if err != nil {
		t.Fatalf("make deb: %v", err)
	}
	t.Logf("%s: %d bytes", filepath.Base(deb), st.Size())
	return deb
}

func goarch(t *testing.T) string {
	return strings.TrimSpace(run(t, "go", "env", "GOARCH"))
}

// checkInstalled checks what package n installed.
func checkInstalled(t *testing.T, n string) {
	t.Helper()
	if v := installedVersion(); v != "0"+testVersion+n {
		t.Errorf("dpkg-query: got version %q, want %q", v, "0"+testVersion+n)
	}
	if out := run(t, pkgBinary, "version"); !strings.HasPrefix(out, "drwatch pkgtest"+n+" ") {
		t.Errorf("drwatch version: got %q, want the binary stamped pkgtest%s", out, n)
	}
	for _, f := range []string{pkgUnit,
		"/usr/share/bash-completion/completions/drwatch", "/usr/share/zsh/vendor-completions/_drwatch",
		"/usr/share/man/man1/drwatch.1.gz", "/usr/share/man/man1/drwatch-config-validate.1.gz",
		"/usr/share/doc/drwatch/examples/node-a.yaml", "/usr/share/doc/drwatch/copyright"} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: got %v, want a non-empty file", f, err)
		}
	}
	if b, err := os.ReadFile("/usr/share/bash-completion/completions/drwatch"); err != nil || !regexp.MustCompile(`complete .*drwatch`).Match(b) {
		t.Errorf("bash completion: got %v, want a script that registers drwatch", err)
	}
	for dir, mode := range map[string]fs.FileMode{pkgConfigDir: 0o755, filepath.Join(pkgConfigDir, "private"): 0o700} {
		st, err := os.Stat(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if sys := st.Sys().(*syscall.Stat_t); !st.IsDir() || st.Mode().Perm() != mode || sys.Uid != 0 {
			t.Errorf("%s: got %v uid %d, want a directory %v owned by root", dir, st.Mode(), sys.Uid, mode)
		}
	}
}

// packageFiles lists the files dpkg installed for drwatch (not directories,
// nor links to them: /lib is one on a merged-/usr system).
func packageFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, f := range strings.Split(run(t, "dpkg", "-L", "drwatch"), "\n") {
		if st, err := os.Stat(f); err == nil && !st.IsDir() {
			files = append(files, f)
		}
	}
	if !slices.Contains(files, pkgBinary) {
		t.Fatalf("dpkg -L drwatch: got %v, want %s among them", files, pkgBinary)
	}
	return files
}

func checkFiles(t *testing.T, want map[string][]byte) {
	t.Helper()
	for path, content := range want {
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s: got %v (%d bytes), want it unchanged", path, err, len(got))
		}
	}
}

func writeFile(t *testing.T, path string, b []byte, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}

// run runs a command and fails the test, with its output, if it fails.
// dpkg does not wait for its lock, so while another dpkg or apt holds it
// (make install-test-deps in another run on the machine), the command is
// tried again, for up to ten minutes.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var out []byte
	var err error
	poll.UntilEvery(t, 10*time.Minute, time.Second, func() bool {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err = cmd.CombinedOutput()
		return err == nil || !bytes.Contains(out, []byte("locked by another process"))
	}, "the dpkg lock was free to run %s %s", name, strings.Join(args, " "))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
