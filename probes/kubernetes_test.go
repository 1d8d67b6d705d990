package probes

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/kubetest"
)

const kubeReadyBody = `[+]ping ok
[+]log ok
[+]etcd ok
[+]etcd-readiness ok
[+]informer-sync ok
[+]poststarthook/start-apiserver-admission-initializer ok
[+]shutdown ok
readyz check passed
`

const kubeEtcdDownBody = `[+]ping ok
[+]log ok
[-]etcd failed: reason withheld
[-]etcd-readiness failed: reason withheld
[+]informer-sync ok
[+]poststarthook/start-apiserver-admission-initializer ok
[+]shutdown ok
readyz check failed
`

func TestKubeParseVerbose(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantChecks int
		wantFailed []string
	}{
		{"all ok", kubeReadyBody, 7, nil},
		{"etcd down", kubeEtcdDownBody, 7, []string{"etcd", "etcd-readiness"}},
		{"excluded counts as ok", "[+]etcd excluded: ok\n[+]ping ok\n", 2, nil},
		{"crlf and indentation", "  [-]etcd failed: x\r\n[+]ping ok\r\n", 2, []string{"etcd"}},
		{"plain ok has no checks", "ok", 0, nil},
		{"html error page", "<html><body>502 Bad Gateway</body></html>", 0, nil},
		{"empty", "", 0, nil},
		{"sign without name", "[-]\n[+] ok\n", 0, nil},
		{"hostile name cleaned", "[-]et\x00cd<script> failed\n", 1, []string{"etcdscript"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := kubeParseVerbose([]byte(tt.body))
			var failed []string
			for _, c := range checks {
				if !c.OK {
					failed = append(failed, c.Name)
				}
			}
			if len(checks) != tt.wantChecks {
				t.Errorf("got %d checks, want %d", len(checks), tt.wantChecks)
			}
			if !slices.Equal(failed, tt.wantFailed) {
				t.Errorf("got failed %q, want %q", failed, tt.wantFailed)
			}
		})
	}
}

func TestKubeJudge(t *testing.T) {
	many := "[-]a failed\n[-]b failed\n[-]c failed\n[-]d failed\n[-]e failed\n[-]f failed\n[-]g failed\n"
	tests := []struct {
		name       string
		endpoint   string
		status     int
		body       string
		wantOK     bool
		wantClass  Class
		wantReason string
		wantFailed string
	}{
		{"ready", "readyz", 200, kubeReadyBody, true, ClassNone, "", ""},
		{"plain ok", "readyz", 200, "ok", true, ClassNone, "", ""},
		{"etcd down", "readyz", 500, kubeEtcdDownBody, false, ClassCheckFailed, "readyz: etcd, etcd-readiness failed", "etcd,etcd-readiness"},
		{"livez etcd down", "livez", 500, "[-]etcd failed: reason withheld\nlivez check failed\n", false, ClassCheckFailed, "livez: etcd failed", "etcd"},
		{"unauthorized", "readyz", 401, `{"kind":"Status","code":401}`, false, ClassAuth, "authentication failed", ""},
		{"forbidden", "readyz", 403, `{"kind":"Status","code":403}`, false, ClassAuth, "forbidden", ""},
		{"bad gateway", "readyz", 502, "<html>bad gateway</html>", false, ClassStatus, "readyz: unexpected status 502", ""},
		{"failure in a 200", "readyz", 200, "[-]etcd failed\n", false, ClassCheckFailed, "readyz: etcd failed", "etcd"},
		{"many failures bounded", "readyz", 500, many, false, ClassCheckFailed, "readyz: a, b, c, d, e, (+2 more) failed", "a,b,c,d,e,(+2 more)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := kubeJudge(tt.endpoint, tt.status, []byte(tt.body))
			if res.OK != tt.wantOK || res.Class != tt.wantClass {
				t.Fatalf("got ok=%v class=%q (%s), want ok=%v class=%q", res.OK, res.Class, res.Reason, tt.wantOK, tt.wantClass)
			}
			if res.Reason != tt.wantReason {
				t.Errorf("got reason %q, want %q", res.Reason, tt.wantReason)
			}
			if got := res.Detail["failed_checks"]; got != tt.wantFailed {
				t.Errorf("got failed_checks %q, want %q", got, tt.wantFailed)
			}
		})
	}
}

// FuzzParseReadyz checks that the verbose parser never panics and that what
// it returns is bounded and printable, whatever the server (or a proxy in
// front of it) sends.
func FuzzParseReadyz(f *testing.F) {
	f.Add([]byte(kubeReadyBody))
	f.Add([]byte(kubeEtcdDownBody))
	f.Add([]byte("[+]ok\n[-]"))
	f.Fuzz(func(t *testing.T, body []byte) {
		checks := kubeParseVerbose(body)
		if len(checks) > strings.Count(string(body), "[")+1 {
			t.Fatalf("got %d checks from %d brackets", len(checks), strings.Count(string(body), "["))
		}
		for _, c := range checks {
			if c.Name == "" || len(c.Name) > kubeMaxCheckName {
				t.Fatalf("got name %q, want 1..%d bytes", c.Name, kubeMaxCheckName)
			}
			if strings.ContainsAny(c.Name, " \t\r\n,") {
				t.Fatalf("got name %q with separator characters", c.Name)
			}
		}
		status := 200
		if len(body) > 0 && body[0]&1 == 1 {
			status = 500
		}
		res := kubeJudge("readyz", status, body)
		if res.OK && res.Class != ClassNone {
			t.Fatalf("got ok with class %q", res.Class)
		}
		if len(res.Reason) > 1024 {
			t.Fatalf("got reason of %d bytes", len(res.Reason))
		}
	})
}

// kubeTestPKI is a throwaway CA with helpers to write PEM files.
type kubeTestPKI struct {
	dir    string
	caKey  *ecdsa.PrivateKey
	caCert *x509.Certificate
	caFile string
}

func newKubeTestPKI(t *testing.T) *kubeTestPKI {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &kubeTestPKI{dir: dir, caKey: key, caCert: cert, caFile: filepath.Join(dir, "ca.crt")}
	kubeWriteFile(t, p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return p
}

// issue returns a leaf for 127.0.0.1 (server) or a client certificate, and
// the paths of its PEM files.
func (p *kubeTestPKI) issue(t *testing.T, name string, server bool) (tls.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	cf, kf := filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	kubeWriteFile(t, cf, certPEM)
	kubeWriteFile(t, kf, keyPEM)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair, cf, kf
}

func kubeWriteFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// kubeFakeAPIServer serves /readyz and /livez like kube-apiserver: it
// accepts one bearer token or a client certificate from pki, answers 401 for
// another token, and serves body with status for an authenticated caller.
func kubeFakeAPIServer(t *testing.T, pki *kubeTestPKI, token string, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" && r.URL.Path != "/livez" {
			http.NotFound(w, r)
			return
		}
		if _, ok := r.URL.Query()["verbose"]; !ok {
			http.Error(w, "want ?verbose", http.StatusBadRequest)
			return
		}
		auth := r.Header.Get("Authorization")
		switch {
		case auth == "Bearer "+token:
		case auth != "":
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		case r.TLS != nil && len(r.TLS.PeerCertificates) > 0:
		default:
			http.Error(w, "forbidden: anonymous", http.StatusForbidden)
			return
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	serverCert, _, _ := pki.issue(t, "server", true)
	pool := x509.NewCertPool()
	pool.AddCert(pki.caCert)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	// The untrusted-server case makes the handshake fail on purpose.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestProbeKubernetesAuthModes(t *testing.T) {
	pki := newKubeTestPKI(t)
	const token = "s3cret-token-value"
	srv := kubeFakeAPIServer(t, pki, token, 200, kubeReadyBody)
	dir := t.TempDir()
	goodToken, badToken := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	kubeWriteFile(t, goodToken, []byte(token+"\n"))
	kubeWriteFile(t, badToken, []byte("not-the-token"))
	_, certFile, keyFile := pki.issue(t, "client", false)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kubeWriteFile(t, kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, certificate-authority: %q}
users:
- name: tok
  user: {token: %q}
- name: tokfile
  user: {tokenFile: %q}
- name: cert
  user: {client-certificate: %q, client-key: %q}
- name: wrong
  user: {token: "wrong"}
- name: plugin
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}
contexts:
- {name: tok, context: {cluster: c, user: tok}}
- {name: tokfile, context: {cluster: c, user: tokfile}}
- {name: cert, context: {cluster: c, user: cert}}
- {name: wrong, context: {cluster: c, user: wrong}}
- {name: plugin, context: {cluster: c, user: plugin}}
current-context: tok
`, srv.URL, pki.caFile, token, goodToken, certFile, keyFile)))

	tests := []struct {
		name      string
		spec      KubernetesSpec
		wantClass Class
	}{
		{"token file", KubernetesSpec{Server: srv.URL, CAFile: pki.caFile, TokenFile: goodToken}, ClassNone},
		{"wrong token", KubernetesSpec{Server: srv.URL, CAFile: pki.caFile, TokenFile: badToken}, ClassAuth},
		{"client cert", KubernetesSpec{Server: srv.URL, CAFile: pki.caFile, ClientCertFile: certFile, ClientKeyFile: keyFile}, ClassNone},
		{"anonymous forbidden", KubernetesSpec{Server: srv.URL, CAFile: pki.caFile}, ClassAuth},
		{"livez", KubernetesSpec{Server: srv.URL, CAFile: pki.caFile, TokenFile: goodToken, Endpoint: "livez"}, ClassNone},
		{"kubeconfig current context", KubernetesSpec{Kubeconfig: kubeconfig}, ClassNone},
		{"kubeconfig token file", KubernetesSpec{Kubeconfig: kubeconfig, Context: "tokfile"}, ClassNone},
		{"kubeconfig cert", KubernetesSpec{Kubeconfig: kubeconfig, Context: "cert"}, ClassNone},
		{"kubeconfig wrong token", KubernetesSpec{Kubeconfig: kubeconfig, Context: "wrong"}, ClassAuth},
		{"kubeconfig server override", KubernetesSpec{Kubeconfig: kubeconfig, Server: srv.URL + "/"}, ClassNone},
		{"kubeconfig exec refused", KubernetesSpec{Kubeconfig: kubeconfig, Context: "plugin"}, ClassConfig},
		{"kubeconfig unknown context", KubernetesSpec{Kubeconfig: kubeconfig, Context: "nope"}, ClassConfig},
		{"kubeconfig missing", KubernetesSpec{Kubeconfig: filepath.Join(dir, "nope")}, ClassConfig},
		{"token file missing", KubernetesSpec{Server: srv.URL, CAFile: pki.caFile, TokenFile: filepath.Join(dir, "nope")}, ClassConfig},
		{"cert without key", KubernetesSpec{Server: srv.URL, CAFile: pki.caFile, ClientCertFile: certFile}, ClassConfig},
		{"bad endpoint", KubernetesSpec{Server: srv.URL, CAFile: pki.caFile, Endpoint: "healthz"}, ClassConfig},
		{"no server", KubernetesSpec{TokenFile: goodToken}, ClassConfig},
		{"untrusted server", KubernetesSpec{Server: srv.URL, TokenFile: goodToken}, ClassTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			res := ProbeKubernetes(t.Context(), Spec{Name: "k", Type: "kubernetes", Timeout: 10 * time.Second, Kubernetes: &spec}, nil)
			if res.Class != tt.wantClass || res.OK != (tt.wantClass == ClassNone) {
				t.Fatalf("got ok=%v class=%q reason=%q, want class %q", res.OK, res.Class, res.Reason, tt.wantClass)
			}
			if strings.Contains(res.Reason, token) {
				t.Fatalf("reason %q leaks the token", res.Reason)
			}
			if res.OK {
				for _, phase := range []string{"connect", "tls", "first_byte"} {
					if _, ok := res.Phases[phase]; !ok {
						t.Errorf("got phases %v, want %q timed", res.Phases, phase)
					}
				}
				if res.CertExpiry.IsZero() {
					t.Errorf("got zero CertExpiry, want the serving certificate's NotAfter")
				}
			}
		})
	}
}

func TestProbeKubernetesCheckFailed(t *testing.T) {
	pki := newKubeTestPKI(t)
	srv := kubeFakeAPIServer(t, pki, "tok", 500, kubeEtcdDownBody)
	tokenFile := filepath.Join(t.TempDir(), "tok")
	kubeWriteFile(t, tokenFile, []byte("tok"))
	res := ProbeKubernetes(t.Context(), Spec{Kubernetes: &KubernetesSpec{Server: srv.URL, CAFile: pki.caFile, TokenFile: tokenFile}}, nil)
	if res.Class != ClassCheckFailed || res.Reason != "readyz: etcd, etcd-readiness failed" {
		t.Fatalf("got class %q reason %q, want %q with etcd named", res.Class, res.Reason, ClassCheckFailed)
	}
	if res.Detail["failed_checks"] != "etcd,etcd-readiness" {
		t.Errorf("got failed_checks %q, want %q", res.Detail["failed_checks"], "etcd,etcd-readiness")
	}
}

func TestProbeKubernetesNetworkErrors(t *testing.T) {
	// A port that was just free: nothing listens, so the dial is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "https://" + l.Addr().String()
	l.Close()

	// A listener that accepts and never speaks: the TLS handshake hangs
	// until the deadline.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		silent.Close()
		for c := range accepted {
			c.Close()
		}
	})

	// A plain-HTTP server where TLS is expected.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(plain.Close)

	tests := []struct {
		name      string
		server    string
		timeout   time.Duration
		wantClass Class
	}{
		{"refused", refusedURL, 5 * time.Second, ClassRefused},
		{"blackhole", "https://" + silent.Addr().String(), 200 * time.Millisecond, ClassTimeout},
		{"not tls", strings.Replace(plain.URL, "http://", "https://", 1), 5 * time.Second, ClassTLS},
		{"bad url", "https://127.0.0.1:bad", 5 * time.Second, ClassConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.timeout)
			defer cancel()
			res := ProbeKubernetes(ctx, Spec{Kubernetes: &KubernetesSpec{Server: tt.server}}, nil)
			if res.Class != tt.wantClass {
				t.Fatalf("got class %q phase %q reason %q, want %q", res.Class, res.Phase, res.Reason, tt.wantClass)
			}
		})
	}
}

// TestProbeKubernetesRealAPIServer runs the prober against a real
// kube-apiserver and etcd (test/kubetest).
func TestProbeKubernetesRealAPIServer(t *testing.T) {
	c := kubetest.Shared(t)
	probe := func(ks KubernetesSpec) Result {
		return ProbeKubernetes(t.Context(), Spec{Name: "kube", Type: "kubernetes", Timeout: 15 * time.Second, Kubernetes: &ks}, nil)
	}
	tests := []struct {
		name      string
		spec      KubernetesSpec
		wantClass Class
	}{
		{"readyz admin token", KubernetesSpec{Server: c.Server, CAFile: c.CAFile, TokenFile: c.TokenFile}, ClassNone},
		{"livez admin token", KubernetesSpec{Server: c.Server, CAFile: c.CAFile, TokenFile: c.TokenFile, Endpoint: "livez"}, ClassNone},
		{"client certificate", KubernetesSpec{Server: c.Server, CAFile: c.CAFile, ClientCertFile: c.ClientCertFile, ClientKeyFile: c.ClientKeyFile}, ClassNone},
		{"kubeconfig", KubernetesSpec{Kubeconfig: c.Kubeconfig}, ClassNone},
		{"kubeconfig cert context", KubernetesSpec{Kubeconfig: c.Kubeconfig, Context: "admin-cert"}, ClassNone},
		{"anonymous", KubernetesSpec{Server: c.Server, CAFile: c.CAFile}, ClassNone},
		{"bad token", KubernetesSpec{Server: c.Server, CAFile: c.CAFile, TokenFile: c.BadTokenFile}, ClassAuth},
		{"kubeconfig bad token", KubernetesSpec{Kubeconfig: c.Kubeconfig, Context: "bad-token"}, ClassAuth},
		{"untrusted", KubernetesSpec{Server: c.Server, TokenFile: c.TokenFile}, ClassTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := probe(tt.spec)
			if res.Class != tt.wantClass || res.OK != (tt.wantClass == ClassNone) {
				t.Fatalf("got ok=%v class=%q phase=%q reason=%q detail=%v, want class %q", res.OK, res.Class, res.Phase, res.Reason, res.Detail, tt.wantClass)
			}
			if res.OK && res.Detail["checks"] == "" {
				t.Errorf("got detail %v, want the verbose checks counted", res.Detail)
			}
		})
	}

	t.Run("etcd stopped", func(t *testing.T) {
		if err := c.StopEtcd(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := c.StartEtcd(ctx); err != nil {
				t.Errorf("restart etcd: %v", err)
				return
			}
			if err := c.WaitReady(ctx); err != nil {
				t.Errorf("kube-apiserver after etcd restart: %v", err)
			}
		})
		spec := KubernetesSpec{Server: c.Server, CAFile: c.CAFile, TokenFile: c.TokenFile}
		var last Result
		kubeEventually(t, time.Minute, "readyz failing on etcd", func() bool {
			last = probe(spec)
			return last.Class == ClassCheckFailed && slices.Contains(strings.Split(last.Detail["failed_checks"], ","), "etcd")
		})
		if !strings.HasPrefix(last.Reason, "readyz: etcd") || !strings.HasSuffix(last.Reason, " failed") {
			t.Errorf("got reason %q, want it to name etcd (readyz: etcd ... failed)", last.Reason)
		}
		t.Logf("etcd down: %s (detail %v)", last.Reason, last.Detail)
	})
}

func TestKubernetesSpecValidate(t *testing.T) {
	tests := []struct {
		name    string
		spec    KubernetesSpec
		wantErr string // substring; empty means valid
	}{
		{"token", KubernetesSpec{Server: "https://127.0.0.1:6443", TokenFile: "/t"}, ""},
		{"kubeconfig", KubernetesSpec{Kubeconfig: "/k", Context: "c"}, ""},
		{"no server", KubernetesSpec{TokenFile: "/t"}, "server: required"},
		{"bad scheme", KubernetesSpec{Server: "ftp://x"}, `server: "ftp://x" must be an https URL`},
		{"no host", KubernetesSpec{Server: "https://"}, `server: "https://" must be an https URL`},
		{"bad endpoint", KubernetesSpec{Server: "https://h", Endpoint: "healthz"}, "endpoint"},
		{"context alone", KubernetesSpec{Server: "https://h", Context: "c"}, "context: set only with kubeconfig"},
		{"kubeconfig with token", KubernetesSpec{Kubeconfig: "/k", TokenFile: "/t"}, "token_file: set either kubeconfig or server and credentials, not both"},
		{"cert without key", KubernetesSpec{Server: "https://h", ClientCertFile: "/c"}, "client_key_file: required"},
		{"token and cert", KubernetesSpec{Server: "https://h", TokenFile: "/t", ClientCertFile: "/c", ClientKeyFile: "/k"}, "token_file: set either token_file or client_cert_file/client_key_file, not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}
