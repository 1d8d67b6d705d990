package probes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/internal/regularfile"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubernetesSpec configures a kubernetes probe: one GET of the API server's
// /readyz?verbose (or /livez?verbose), with the failing checks named.
//
// Authentication is one of: TokenFile; ClientCertFile with ClientKeyFile;
// Kubeconfig (with an optional Context); or none (anonymous, which a default
// kube-apiserver allows for /readyz and /livez). Files are read on every run,
// so rotated tokens and certificates are picked up without a restart.
type KubernetesSpec struct {
	// Server is the API server URL, e.g. https://203.0.113.20:6443. With
	// Kubeconfig it is optional and, when set, overrides the cluster's server
	// (so one kubeconfig can probe one site's address).
	Server string `yaml:"server" types:"kubernetes" doc:"kubernetes: the API server URL."`
	// CAFile is the PEM bundle that signs the serving certificate. Empty means
	// the kubeconfig's CA, or else the system roots.
	CAFile string `yaml:"ca_file" types:"http,tcp,kubernetes,octavia" doc:"PEM bundle to trust instead of the system roots."`
	// TokenFile holds a bearer token. It is never logged.
	TokenFile string `yaml:"token_file" types:"kubernetes" doc:"kubernetes: a file holding a bearer token."`
	// ClientCertFile and ClientKeyFile are a PEM client certificate and key.
	ClientCertFile string `yaml:"client_cert_file" types:"kubernetes" doc:"kubernetes: client certificate (with client_key_file)."`
	ClientKeyFile  string `yaml:"client_key_file" types:"kubernetes" doc:"kubernetes: client key."`
	// Kubeconfig is a kubeconfig file; Context picks a context in it (empty
	// means its current-context). Exec and auth-provider plugins are refused:
	// a probe must not run programs.
	Kubeconfig string `yaml:"kubeconfig" types:"kubernetes" doc:"kubernetes: a kubeconfig file, instead of server + credentials."`
	Context    string `yaml:"context" types:"kubernetes" doc:"kubernetes: the kubeconfig context."`
	// Endpoint is "readyz" (the default) or "livez".
	Endpoint string `yaml:"endpoint" types:"kubernetes" default:"readyz" doc:"kubernetes: readyz or livez."`
}

// Validate reports every problem with the spec at once, with paths relative
// to the probe. It is pure: it reads no file.
func (k *KubernetesSpec) Validate() field.Errors { return k.validate(false) }

// configured is the configuration file's rules (validate).
func (k *KubernetesSpec) configured() field.Errors { return k.validate(true) }

// files are the kubeconfig alone when set, else the CA bundle and the
// credentials: the token, or the client certificate and key when no token
// goes with them (Validate refuses both).
func (k *KubernetesSpec) files() []field.File {
	if k.Kubeconfig != "" {
		return optionalFile("kubeconfig", k.Kubeconfig)
	}
	out := optionalFile("ca_file", k.CAFile)
	if k.TokenFile != "" && (k.ClientCertFile != "" || k.ClientKeyFile != "") {
		return out
	}
	out = append(out, optionalFile("token_file", k.TokenFile)...)
	out = append(out, optionalFile("client_cert_file", k.ClientCertFile)...)
	return append(out, optionalFile("client_key_file", k.ClientKeyFile)...)
}

// validate checks the spec; configured adds the configuration file's rules:
// an endpoint named, an https server, explicit credentials, and a
// kubeconfig used alone (no server override).
func (k *KubernetesSpec) validate(configured bool) field.Errors {
	var es field.Errors
	if k.Endpoint != "readyz" && k.Endpoint != "livez" && (configured || k.Endpoint != "") {
		es.Add("endpoint", "%q must be readyz or livez", k.Endpoint)
	}
	if k.Kubeconfig != "" {
		set := map[string]string{"token_file": k.TokenFile, "client_cert_file": k.ClientCertFile, "client_key_file": k.ClientKeyFile}
		if configured {
			set["server"] = k.Server
		} else if k.Server != "" {
			k.checkServer(&es, false)
		}
		for _, f := range []string{"server", "token_file", "client_cert_file", "client_key_file"} {
			if set[f] != "" {
				es.Add(f, "set either kubeconfig or server and credentials, not both")
			}
		}
		return es
	}
	if k.Context != "" {
		es.Add("context", "set only with kubeconfig")
	}
	if required(&es, "server", k.Server) {
		k.checkServer(&es, configured)
	}
	switch {
	case k.TokenFile != "" && (k.ClientCertFile != "" || k.ClientKeyFile != ""):
		es.Add("token_file", "set either token_file or client_cert_file/client_key_file, not both")
	case k.TokenFile != "":
	case k.ClientCertFile != "" || k.ClientKeyFile != "":
		required(&es, "client_cert_file", k.ClientCertFile)
		required(&es, "client_key_file", k.ClientKeyFile)
	case configured:
		es.Add("", "needs credentials: token_file, client_cert_file + client_key_file, or kubeconfig")
	}
	return es
}

// checkServer checks the server URL: https, or also http unless httpsOnly.
func (k *KubernetesSpec) checkServer(es *field.Errors, httpsOnly bool) {
	u, err := url.Parse(k.Server)
	if err != nil || u.Host == "" || u.Scheme != "https" && (httpsOnly || u.Scheme != "http") {
		es.Add("server", "%q must be an https URL", k.Server)
	}
}

// kubeMaxBody bounds what we read of a verbose health answer; a real one is
// about 2 KiB.
const kubeMaxBody = 64 << 10

// kubeMaxNamed bounds the failing checks named in Reason and Detail.
const kubeMaxNamed = 5

// ProbeKubernetes is the kubernetes prober. It never retries and keeps no
// state between runs: every run reads its credential files and dials afresh.
//
// Failures: ClassConfig for an unusable spec or credential file; ClassAuth for
// 401/403 (our credentials, not the site); ClassCheckFailed when the server
// answers that some checks fail (Detail["failed_checks"]); ClassDNS,
// ClassRefused, ClassTimeout and ClassTLS for the connection; ClassStatus for
// any other unexpected status.
func ProbeKubernetes(ctx context.Context, spec Spec, logger *slog.Logger) Result {
	start := time.Now()
	res := kubeProbe(ctx, spec)
	res.Duration = time.Since(start)
	if logger != nil {
		logger.Debug("kubernetes probe", "probe", spec.Name, "ok", res.OK, "class", string(res.Class), "reason", res.Reason)
	}
	return res
}

func kubeProbe(ctx context.Context, spec Spec) Result {
	ks := spec.Kubernetes
	if ks == nil {
		return kubeFail(ClassConfig, "config", "kubernetes probe without a kubernetes spec")
	}
	if es := ks.Validate(); es != nil {
		return kubeFail(ClassConfig, "config", strings.ReplaceAll(es.Error(), "\n", "; "))
	}
	endpoint := ks.Endpoint
	if endpoint == "" {
		endpoint = "readyz"
	}
	conn, err := kubeConnConfig(ks)
	if err != nil {
		return kubeFail(ClassConfig, "config", err.Error())
	}
	if _, hasDeadline := ctx.Deadline(); !hasDeadline {
		timeout := spec.Timeout
		if timeout <= 0 {
			timeout = probeDefaultTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}

	// A fresh transport per run: no pooled connection hides a dead
	// listener, and the phases below time a real dial and handshake.
	transport := &http.Transport{
		TLSClientConfig:        conn.tls,
		DisableKeepAlives:      true,
		ForceAttemptHTTP2:      false,
		MaxResponseHeaderBytes: 64 << 10,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport: transport,
		// A health endpoint that redirects is misconfigured; report the
		// redirect status rather than follow it somewhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	url := strings.TrimRight(conn.server, "/") + "/" + endpoint + "?verbose"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return kubeFail(ClassConfig, "config", fmt.Sprintf("server %q: %v", conn.server, err))
	}
	req.Header.Set("Accept", "text/plain")
	if conn.token != "" {
		req.Header.Set("Authorization", "Bearer "+conn.token)
	} else if conn.username != "" {
		req.SetBasicAuth(conn.username, conn.password)
	}

	// The http prober's phase timer and classifier: one vocabulary of
	// phases, classes and reasons for every HTTP-based probe.
	timer := &connPhaseTimer{}
	req = req.WithContext(httptrace.WithClientTrace(ctx, timer.trace()))
	resp, err := client.Do(req)
	if err != nil {
		res := connClassify(ctx, err, timer)
		res.Phases = timer.phases()
		return res
	}
	defer resp.Body.Close()
	timer.beginPhase("body")
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, kubeMaxBody))
	timer.endPhase("body", readErr)
	res := kubeJudge(endpoint, resp.StatusCode, body)
	if readErr != nil && res.OK {
		timer.markFailing("body")
		res = connClassify(ctx, readErr, timer)
	}
	res.Phases = timer.phases()
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		res.CertExpiry = resp.TLS.PeerCertificates[0].NotAfter
	}
	return res
}

// kubeJudge turns one answer into a Result. It is separate from the I/O so
// that it can be tested with any status and body.
func kubeJudge(endpoint string, status int, body []byte) Result {
	detail := map[string]string{"endpoint": endpoint, "status_code": strconv.Itoa(status)}
	switch status {
	case http.StatusUnauthorized:
		res := kubeFail(ClassAuth, "auth", "authentication failed")
		res.Detail = detail
		return res
	case http.StatusForbidden:
		res := kubeFail(ClassAuth, "auth", "forbidden")
		res.Detail = detail
		return res
	}
	checks := kubeParseVerbose(body)
	var failed []string
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	if len(checks) > 0 {
		detail["checks"] = strconv.Itoa(len(checks))
	}
	if len(failed) > 0 {
		named := kubeBoundedList(failed, kubeMaxNamed)
		detail["failed_checks"] = named
		res := kubeFail(ClassCheckFailed, "check", fmt.Sprintf("%s: %s failed", endpoint, strings.ReplaceAll(named, ",", ", ")))
		res.Detail = detail
		return res
	}
	if status != http.StatusOK {
		res := kubeFail(ClassStatus, "status", fmt.Sprintf("%s: unexpected status %d", endpoint, status))
		res.Detail = detail
		return res
	}
	return Result{OK: true, Detail: detail}
}

// kubeCheck is one line of a verbose health answer.
type kubeCheck struct {
	Name string
	OK   bool
}

// kubeMaxCheckName bounds a check name we keep; real ones are short
// ("poststarthook/start-apiextensions-controllers").
const kubeMaxCheckName = 96

// kubeParseVerbose parses the body of /readyz?verbose or /livez?verbose:
//
//	[+]ping ok
//	[-]etcd failed: reason withheld
//	[+]informer-sync excluded: ok
//	readyz check failed
//
// Lines that are not check lines are ignored, so a proxy's error page yields
// no checks rather than nonsense. Names are kept printable and bounded
// because they end up in metrics-adjacent detail and logs.
func kubeParseVerbose(body []byte) []kubeCheck {
	var checks []kubeCheck
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), kubeMaxBody)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var ok bool
		switch {
		case strings.HasPrefix(line, "[+]"):
			ok = true
		case strings.HasPrefix(line, "[-]"):
			ok = false
		default:
			continue
		}
		rest := line[3:]
		// "[-]x failed: reason" is the failure form; only the sign matters,
		// it is what the server derives from the check's error.
		name, _, _ := strings.Cut(rest, " ")
		name = kubeCleanName(name)
		if name == "" {
			continue
		}
		checks = append(checks, kubeCheck{Name: name, OK: ok})
	}
	return checks
}

// kubeCleanName keeps the characters Kubernetes uses in check names and
// drops the rest, bounded in length.
func kubeCleanName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= kubeMaxCheckName {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '-', r == '_', r == '/', r == '.', r == ':':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// kubeBoundedList joins the first max names with commas and says how many
// more there were.
func kubeBoundedList(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ",")
	}
	return strings.Join(names[:max], ",") + fmt.Sprintf(",(+%d more)", len(names)-max)
}

func kubeFail(class Class, phase, reason string) Result {
	return Result{Class: class, Phase: phase, Reason: reason}
}

// kubeConn is what one run needs to talk to the server, resolved from the
// spec and its files.
type kubeConn struct {
	server   string
	tls      *tls.Config
	token    string
	username string
	password string
}

// kubeConnConfig resolves the spec into a server URL, a TLS config and a
// credential. Errors never contain the credential itself.
func kubeConnConfig(ks *KubernetesSpec) (kubeConn, error) {
	if ks.Kubeconfig != "" {
		return kubeConnFromKubeconfig(ks)
	}
	if ks.Server == "" {
		return kubeConn{}, errors.New("server is empty")
	}
	c := kubeConn{server: ks.Server, tls: &tls.Config{MinVersion: tls.VersionTLS12}}
	if ks.CAFile != "" {
		pool, err := connLoadCA(ks.CAFile)
		if err != nil {
			return kubeConn{}, err
		}
		c.tls.RootCAs = pool
	}
	if (ks.ClientCertFile == "") != (ks.ClientKeyFile == "") {
		return kubeConn{}, errors.New("client_cert_file and client_key_file must be set together")
	}
	if ks.TokenFile != "" && ks.ClientCertFile != "" {
		return kubeConn{}, errors.New("token_file and client_cert_file are exclusive")
	}
	if ks.ClientCertFile != "" {
		cert, err := regularfile.KeyPair("client_cert_file", ks.ClientCertFile, "client_key_file", ks.ClientKeyFile)
		if err != nil {
			return kubeConn{}, err
		}
		c.tls.Certificates = []tls.Certificate{cert}
	}
	if ks.TokenFile != "" {
		tok, err := kubeReadToken("token_file", ks.TokenFile)
		if err != nil {
			return kubeConn{}, err
		}
		c.token = tok
	}
	return c, nil
}

func kubeConnFromKubeconfig(ks *KubernetesSpec) (kubeConn, error) {
	overrides := &clientcmd.ConfigOverrides{CurrentContext: ks.Context}
	if ks.Server != "" {
		overrides.ClusterInfo.Server = ks.Server
	}
	if ks.CAFile != "" {
		overrides.ClusterInfo.CertificateAuthority = ks.CAFile
	}
	cfg, err := kubeconfig.RESTConfig("kubeconfig", ks.Kubeconfig, overrides)
	if err != nil {
		return kubeConn{}, err
	}
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return kubeConn{}, errors.New("kubeconfig: exec and auth-provider credentials are not supported")
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return kubeConn{}, fmt.Errorf("kubeconfig: tls: %w", err)
	}
	if tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	c := kubeConn{server: cfg.Host, tls: tlsCfg, token: cfg.BearerToken, username: cfg.Username, password: cfg.Password}
	if cfg.BearerTokenFile != "" {
		tok, err := kubeReadToken("kubeconfig: tokenFile", cfg.BearerTokenFile)
		if err != nil {
			return kubeConn{}, err
		}
		c.token = tok
	}
	if c.server == "" {
		return kubeConn{}, errors.New("kubeconfig: no server")
	}
	return c, nil
}

// kubeReadToken reads the bearer token in the file the field named field
// holds; errors name the field, never the path or the token.
func kubeReadToken(field, path string) (string, error) {
	b, err := regularfile.Read(field, path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s: empty", field)
	}
	if strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("%s: more than one line", field)
	}
	return tok, nil
}
