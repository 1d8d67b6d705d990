package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ErrNoChromium means no Chromium binary was found in PATH.
var ErrNoChromium = errors.New("chromium not found in PATH: install Debian package chromium (make install-test-deps)")

// BrowseOptions tune one headless Chromium run.
type BrowseOptions struct {
	// Screenshot, when set, is the PNG file to write.
	Screenshot string
	// Dark asks for prefers-color-scheme: dark (--force-dark-mode).
	Dark bool
	// Width and Height are the window size in CSS px (default 1280×1800).
	Width, Height int
	// Settle is how long of virtual time the page's scripts get before the
	// DOM is dumped (default 3s; --virtual-time-budget, so a page that
	// refreshes itself is dumped after its first refreshes, without waiting
	// that long in real time).
	Settle time.Duration
	// Timeout bounds the whole run (default 90s: the first start on a
	// loaded machine is slow).
	Timeout time.Duration
	// Zoom, when set, is the page zoom (written into the fresh profile as
	// Chromium's default zoom level): the viewport is then Width/Zoom CSS
	// px wide, media queries included. Headless Chromium makes no window
	// narrower than 500 px (a narrower Width is laid out at 500 and the
	// screenshot cropped), so a phone's 390 px viewport is Width 500 with
	// Zoom 500/390.
	Zoom float64
	// IgnoreCertErrors accepts a certificate from a private CA (a test
	// cluster's own), which Chromium would otherwise stop at.
	IgnoreCertErrors bool
}

// Chromium returns the path of a Chromium binary, or ErrNoChromium.
func Chromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// BrowseContext loads url in a fresh headless Chromium (own profile in a
// temp dir, no background networking, every host name except 127.0.0.1 and
// localhost unresolvable) and returns the DOM serialised after scripts ran.
// The browser runs in its own process group, killed as a whole when the
// run ends or ctx is done, so no renderer outlives the call.
func BrowseContext(ctx context.Context, url string, o BrowseOptions) (string, error) {
	bin, err := Chromium()
	if err != nil {
		return "", err
	}
	if o.Width <= 0 {
		o.Width = 1280
	}
	if o.Height <= 0 {
		o.Height = 1800
	}
	if o.Settle <= 0 {
		o.Settle = 3 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 90 * time.Second
	}
	profile, err := os.MkdirTemp("", "drwatch-chromium-")
	if err != nil {
		return "", fmt.Errorf("chromium profile dir: %w", err)
	}
	defer os.RemoveAll(profile)
	if o.Zoom > 0 && o.Zoom != 1 {
		if err := writeZoom(profile, o.Zoom); err != nil {
			return "", err
		}
	}
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--disable-domain-reliability",
		"--metrics-recording-only", "--mute-audio", "--hide-scrollbars",
		// Containers often give /dev/shm 64 MB, too little for Chromium.
		"--disable-dev-shm-usage",
		// Loopback only: nothing this page loads may leave the machine.
		"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost",
		"--user-data-dir=" + profile,
		"--window-size=" + strconv.Itoa(o.Width) + "," + strconv.Itoa(o.Height),
		"--virtual-time-budget=" + strconv.FormatInt(o.Settle.Milliseconds(), 10),
	}
	if o.Dark {
		args = append(args, "--force-dark-mode", "--blink-settings=preferredColorScheme=0")
	}
	if o.Screenshot != "" {
		args = append(args, "--screenshot="+o.Screenshot)
	}
	if o.IgnoreCertErrors {
		args = append(args, "--ignore-certificate-errors")
	}
	args = append(args, "--dump-dom", url)

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "HOME="+profile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		// Chromium's zygote and renderers share its process group; make
		// sure none is left behind even when the browser exited cleanly.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		return "", fmt.Errorf("chromium %s: %w; stderr tail: %s", url, err, tail(stderr.String(), 1500))
	}
	if stdout.Len() == 0 {
		return "", fmt.Errorf("chromium %s: empty DOM; stderr tail: %s", url, tail(stderr.String(), 1500))
	}
	return stdout.String(), nil
}

// Browse is BrowseContext for tests: it fails t, naming the Debian
// package, when Chromium is missing, and fails on any other error.
func Browse(t testing.TB, url string, o BrowseOptions) string {
	t.Helper()
	dom, err := BrowseContext(t.Context(), url, o)
	if err != nil {
		t.Fatalf("browse: %v", err)
	}
	return dom
}

// ArtifactDir is where a test keeps files a human should look at
// (screenshots): $DRWATCH_ARTIFACTS/<test name> when that is set, else
// t.ArtifactDir() (kept under -outputdir with go test -artifacts, removed
// after the test otherwise).
func ArtifactDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv("DRWATCH_ARTIFACTS")
	if root == "" {
		return t.ArtifactDir()
	}
	dir := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifact dir: %v", err)
	}
	return dir
}

// writeZoom sets the default zoom of the profile in dir to zoom. Chromium
// stores it as a level, each step a factor of 1.2.
func writeZoom(dir string, zoom float64) error {
	prefs, err := json.Marshal(map[string]any{"partition": map[string]any{
		"default_zoom_level": map[string]float64{"x": math.Log(zoom) / math.Log(1.2)}}})
	if err != nil {
		return fmt.Errorf("chromium zoom: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "Default"), 0o700); err != nil {
		return fmt.Errorf("chromium zoom: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Default", "Preferences"), prefs, 0o600); err != nil {
		return fmt.Errorf("chromium zoom: %w", err)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
