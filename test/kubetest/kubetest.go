package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
	"k8s.io/client-go/kubernetes"
)

// DefaultVersion is the Kubernetes release whose kube-apiserver,
// kube-controller-manager and kube-scheduler the harness runs: all three come
// from one release, built by test/deps/build-kube.sh. Keep it in step with
// KUBE_VERSION there and in test/deps/parts/kube.sh. The module proxy serves
// every staging module the commands import at v1.33.13 and v1.34.x, but not
// at v1.31.x or v1.32.x.
const DefaultVersion = "v1.34.4"

// ErrNoBinary means a required program is not installed. Its message names
// what to install.
var ErrNoBinary = errors.New("binary not found")

// Cluster is a running etcd plus kube-apiserver. Its exported fields are
// read-only; its methods are safe for concurrent use.
type Cluster struct {
	// Server is the API server URL, https://127.0.0.1:<port>.
	Server string
	// CAFile is the PEM certificate that verifies Server (self-signed,
	// SANs 127.0.0.1 and localhost).
	CAFile string
	// TokenFile holds a bearer token for user "admin" in group system:masters.
	TokenFile string
	// BadTokenFile holds a well-formed token the server does not know: 401.
	BadTokenFile string
	// ClientCertFile and ClientKeyFile authenticate as user "admin-cert" in
	// group system:masters.
	ClientCertFile string
	ClientKeyFile  string
	// Kubeconfig has contexts "admin" (token, the current context),
	// "admin-cert" (client certificate) and "bad-token".
	Kubeconfig string
	// EtcdURL is the etcd client URL, http://127.0.0.1:<port>.
	EtcdURL string
	// Dir holds all state and logs (etcd.log, apiserver.log).
	Dir string

	version string // the release New started; controller managers match it

	mu        sync.Mutex
	etcdBin   string
	etcdPeer  int
	etcdPort  int
	etcd      *daemon.Process
	apiserver *daemon.Process
	closed    bool
	clientset kubernetes.Interface // Clientset's, built on first use
}

// Options tunes New. The zero value is ready to use.
type Options struct {
	// Version selects the cached kube-apiserver build; empty means DefaultVersion.
	Version string
	// Dir is the parent of the state directory; empty means os.TempDir().
	Dir string
	// DefaultTolerationSeconds, when positive, is the tolerationSeconds
	// the API server's DefaultTolerationSeconds admission gives every pod
	// for the not-ready and unreachable NoExecute taints: how long the
	// taint eviction controller waits before it evicts a pod from a node
	// that stopped reporting. Zero keeps the release's default, 300 s.
	DefaultTolerationSeconds int
}

// BinaryPath returns the cached kube-apiserver for version, or an error
// wrapping ErrNoBinary that says how to build it. DRWATCH_KUBE_APISERVER, when
// set, names the binary to use instead.
func BinaryPath(version string) (string, error) {
	return cachedBinary("kube-apiserver", "DRWATCH_KUBE_APISERVER", version)
}

// cachedBinary finds command (kube-apiserver, kube-controller-manager) of
// version where test/deps/build-kube.sh caches it, unless the environment
// variable env names another binary.
func cachedBinary(command, env, version string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	if version == "" {
		version = DefaultVersion
	}
	return inCache(command, version, fmt.Sprintf("KUBE_VERSION=%s test/deps/build-kube.sh %s (builds it once from the Go module proxy: 10-20 min on 2 idle cores, over an hour on a loaded machine)", version, command))
}

// inCache returns the path of file in the build cache of command at
// version, ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/<command>-<version>/, or
// an error wrapping ErrNoBinary that names make install-test-deps and
// build, the script that builds it.
func inCache(command, version, build string, file ...string) (string, error) {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%s: no cache dir: %w", command, err)
		}
		cache = filepath.Join(home, ".cache")
	}
	name := command
	if len(file) > 0 {
		name = file[0]
	}
	p := filepath.Join(cache, "drwatch", command+"-"+version, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s %s not built at %s: run make install-test-deps, or %s: %w",
			command, version, p, build, ErrNoBinary)
	}
	return p, nil
}

// Start starts a cluster for one test and stops it in t.Cleanup. It fails the
// test if a binary is missing or the cluster does not become ready.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := New(ctx, opts)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// New starts etcd and kube-apiserver and waits until /readyz answers ok.
// It suits TestMain (no testing.TB); the caller must Close the cluster. On
// error nothing is left running.
func New(ctx context.Context, opts Options) (_ *Cluster, err error) {
	apiserverBin, err := BinaryPath(opts.Version)
	if err != nil {
		return nil, err
	}
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd not found in PATH: install Debian package etcd-server (make install-test-deps): %w", ErrNoBinary)
	}
	dir, err := os.MkdirTemp(opts.Dir, "kubetest-")
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	version := opts.Version
	if version == "" {
		version = DefaultVersion
	}
	c := &Cluster{Dir: dir, etcdBin: etcdBin, version: version}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	ports, err := daemon.FreePorts(3)
	if err != nil {
		return nil, err
	}
	c.etcdPort, c.etcdPeer = ports[0], ports[1]
	apiPort := ports[2]
	c.EtcdURL = "http://127.0.0.1:" + strconv.Itoa(c.etcdPort)
	c.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if err := c.writeCredentials(); err != nil {
		return nil, err
	}
	if err := c.StartEtcd(ctx); err != nil {
		return nil, err
	}
	args := []string{
		"--etcd-servers=" + c.EtcdURL, "--etcd-prefix=/registry-test",
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--tls-cert-file=" + c.CAFile, "--tls-private-key-file=" + filepath.Join(dir, "serving.key"),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--client-ca-file=" + filepath.Join(dir, "client-ca.crt"),
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--api-audiences=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=RBAC",
		"--anonymous-auth=true",
		"--profiling=false",
		// No endpoint reconciler: it would try to publish 127.0.0.1 as the
		// kubernetes service endpoint, which the API server rejects.
		"--endpoint-reconciler-type=none",
		// Debian 12's etcd 3.4 has no progress notifications, so the API
		// server cannot serve watch-list streams (sendInitialEvents): it
		// answers them with an error event inside the watch, which
		// client-go 0.35+ reflectors (kwok's) retry with backoff instead of
		// listing, and their caches go stale. Refused up front, the stream
		// is replaced by a plain list and watch, as against any server
		// without the feature.
		"--feature-gates=WatchList=false",
	}
	if s := opts.DefaultTolerationSeconds; s > 0 {
		args = append(args, "--default-not-ready-toleration-seconds="+strconv.Itoa(s),
			"--default-unreachable-toleration-seconds="+strconv.Itoa(s))
	}
	c.apiserver, err = daemon.Start(apiserverBin, args, daemon.Options{LogPath: filepath.Join(dir, "apiserver.log"), Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// WaitReady polls /readyz until it answers ok, the API server exits, or ctx
// ends. Use it after StartEtcd to wait for the API server to recover.
func (c *Cluster) WaitReady(ctx context.Context) error {
	return waitOK(ctx, "kube-apiserver", c.Server+"/readyz", c.CAFile, filepath.Join(c.Dir, "apiserver.log"), func() *daemon.Process {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.apiserver
	})
}

// waitOK polls url, a health endpoint served with a certificate caFile
// verifies (or plain HTTP, caFile ""), until it answers 200 "ok", the
// process proc returns is gone or has exited, or ctx ends. Errors carry the
// tail of logPath.
func waitOK(ctx context.Context, name, url, caFile, logPath string, proc func() *daemon.Process) error {
	tr := &http.Transport{DisableKeepAlives: true}
	if caFile != "" {
		pool := x509.NewCertPool()
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("read ca: %w", err)
		}
		pool.AppendCertsFromPEM(ca)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var last string
	for {
		if p := proc(); p == nil || p.Exited() {
			return fmt.Errorf("%s exited: %s", name, daemon.Tail(logPath, 15))
		}
		resp, err := client.Get(url)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(b)) == "ok" {
				return nil
			}
			last = fmt.Sprintf("status %d", resp.StatusCode)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready (last: %s): %w; log: %s", name, last, ctx.Err(), daemon.Tail(logPath, 15))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StopEtcd stops etcd (TERM, then KILL after 5 s), keeping its data so that
// StartEtcd resumes the same cluster. Idempotent.
func (c *Cluster) StopEtcd() error {
	c.mu.Lock()
	p := c.etcd
	c.etcd = nil
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	p.Stop(5 * time.Second)
	return nil
}

// StartEtcd starts etcd on its old ports and data directory and waits until
// it reports healthy. A no-op when etcd runs.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("cluster closed")
	}
	if c.etcd != nil && !c.etcd.Exited() {
		return nil
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(c.etcdPeer)
	args := []string{
		"--name", "test", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", c.EtcdURL, "--advertise-client-urls", c.EtcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "test=" + peer, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
	}
	p, err := daemon.Start(c.etcdBin, args, daemon.Options{LogPath: filepath.Join(c.Dir, "etcd.log"), Dir: c.Dir})
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	c.etcd = p
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		if p.Exited() {
			return fmt.Errorf("etcd exited: %s", daemon.Tail(filepath.Join(c.Dir, "etcd.log"), 10))
		}
		resp, err := client.Get(c.EtcdURL + "/health")
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if strings.Contains(string(b), `"health":"true"`) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd not healthy: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops the API server and etcd and removes Dir. Idempotent. Set
// KUBETEST_KEEP=1 to keep Dir (logs) for debugging.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	api, etcd := c.apiserver, c.etcd
	c.apiserver, c.etcd = nil, nil
	c.mu.Unlock()
	if api != nil {
		api.Stop(10 * time.Second)
	}
	if etcd != nil {
		etcd.Stop(5 * time.Second)
	}
	if os.Getenv("KUBETEST_KEEP") == "" {
		os.RemoveAll(c.Dir)
	}
}

// writeCredentials creates the serving certificate, the client CA and an
// admin client certificate, the service-account key pair, the token file and
// the kubeconfig.
func (c *Cluster) writeCredentials() error {
	dir := c.Dir
	servingKey, servingDER, err := selfSigned("kube-apiserver", true, nil, nil)
	if err != nil {
		return err
	}
	c.CAFile = filepath.Join(dir, "serving.crt")
	if err := writePEM(c.CAFile, "CERTIFICATE", servingDER); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "serving.key"), servingKey); err != nil {
		return err
	}
	caKey, caDER, err := selfSigned("kubetest-client-ca", false, nil, nil)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "client-ca.crt"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fmt.Errorf("parse client ca: %w", err)
	}
	clientKey, clientDER, err := selfSigned("admin-cert", false, caCert, caKey)
	if err != nil {
		return err
	}
	c.ClientCertFile = filepath.Join(dir, "admin.crt")
	c.ClientKeyFile = filepath.Join(dir, "admin.key")
	if err := writePEM(c.ClientCertFile, "CERTIFICATE", clientDER); err != nil {
		return err
	}
	if err := writeKey(c.ClientKeyFile, clientKey); err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("sa key: %w", err)
	}
	if err := writePEM(filepath.Join(dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return fmt.Errorf("sa pub: %w", err)
	}
	if err := writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub); err != nil {
		return err
	}
	admin, bad := randomHex(16), randomHex(16)
	// token,user,uid,"group1,group2" (kube-apiserver --token-auth-file)
	tokens := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n", admin)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	c.TokenFile = filepath.Join(dir, "admin.token")
	c.BadTokenFile = filepath.Join(dir, "bad.token")
	if err := os.WriteFile(c.TokenFile, []byte(admin+"\n"), 0o600); err != nil {
		return fmt.Errorf("write token: %w", err)
	}
	if err := os.WriteFile(c.BadTokenFile, []byte(bad+"\n"), 0o600); err != nil {
		return fmt.Errorf("write token: %w", err)
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %[1]s
    certificate-authority: %[2]s
users:
- name: admin
  user:
    token: %[3]s
- name: admin-cert
  user:
    client-certificate: %[4]s
    client-key: %[5]s
- name: bad-token
  user:
    token: %[6]s
contexts:
- name: admin
  context: {cluster: kubetest, user: admin}
- name: admin-cert
  context: {cluster: kubetest, user: admin-cert}
- name: bad-token
  context: {cluster: kubetest, user: bad-token}
current-context: admin
`, c.Server, c.CAFile, admin, c.ClientCertFile, c.ClientKeyFile, bad)
	if err := os.WriteFile(c.Kubeconfig, []byte(kc), 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// selfSigned makes a P-256 key and a certificate for cn: a serving
// certificate for 127.0.0.1 and localhost when serving, else a CA (when
// parent is nil) or a client certificate in group system:masters signed by
// parent.
func selfSigned(cn string, serving bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("key for %s: %w", cn, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(48 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	switch {
	case serving:
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost", "kubernetes.default.svc"}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		// It is also its own CA: clients trust exactly this certificate.
		tmpl.IsCA = true
		tmpl.BasicConstraintsValid = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	case parent == nil:
		tmpl.IsCA = true
		tmpl.BasicConstraintsValid = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	default:
		tmpl.Subject.Organization = []string{"system:masters"}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate for %s: %w", cn, err)
	}
	return key, der, nil
}

func writePEM(path, typ string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key: %w", err)
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}
