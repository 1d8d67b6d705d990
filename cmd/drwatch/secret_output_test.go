package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
)

// secretConfigs are valid configurations in which every secret-bearing
// field is a ${Type.key} placeholder. Between them they hold every such
// field of the config structs (checked by reflection below).
var secretConfigs = map[string]string{
	"rfc2136": `
node: { id: a, data_dir: /var/lib/drwatch, raft_addr: 10.1.0.5:7400, api_addr: 10.1.0.5:7480 }
tls: { ca_file: ${TLS.ca_file}, cert_file: ${TLS.cert_file}, key_file: ${TLS.key_file} }
peers:
  - { id: a, raft_addr: 10.1.0.5:7400, api_addr: 10.1.0.5:7480 }
  - { id: b, raft_addr: 10.2.0.5:7400, api_addr: 10.2.0.5:7480 }
  - { id: c, raft_addr: 10.3.0.5:7400, api_addr: 10.3.0.5:7480 }
api: { tokens_file: ${API.tokens_file} }
policy: { interval: 2s, timeout: 1500ms, fall: 3, rise: 5, quorum: 2 }
sites:
  primary:
    probes:
      - { name: kube-token, type: kubernetes, server: "https://203.0.113.20:6443", ca_file: ${KubernetesSpec.ca_file}, token_file: ${KubernetesSpec.token_file} }
      - { name: lb-appcred, type: octavia, auth_url: "https://keystone.example.org:5000/v3", loadbalancer: ingress,
          application_credential_id_file: ${Credentials.application_credential_id_file},
          application_credential_secret_file: ${Credentials.application_credential_secret_file}, ca_file: ${Credentials.ca_file} }
      - { name: web, type: http, url: "https://lms.example.org/heartbeat", ca_file: ${HTTPSpec.ca_file} }
  backup:
    probes:
      - { name: kube-cert, type: kubernetes, server: "https://198.51.100.20:6443",
          client_cert_file: ${KubernetesSpec.client_cert_file}, client_key_file: ${KubernetesSpec.client_key_file} }
      - { name: kube-kubeconfig, type: kubernetes, kubeconfig: ${KubernetesSpec.kubeconfig} }
      - { name: lb-cloud, type: octavia, cloud: region2, clouds_file: ${Credentials.clouds_file}, loadbalancer: ingress }
      - { name: web-tls, type: tcp, address: "198.51.100.10:443", tls: true, ca_file: ${TCPSpec.ca_file} }
dns:
  provider: rfc2136
  rfc2136: { server: "ns1.example.net:53", key_name: drwatch., key_file: ${RFC2136Config.key_file} }
  zone: example.org.
  break_glass: { key_file: ${BreakGlass.key_file} }
  records:
    - { name: lms, type: A, ttl: 60, primary: [203.0.113.10], backup: [198.51.100.10] }
remediations:
  kubernetes:
    primary: { kubeconfig_file: ${Cluster.kubeconfig_file} }
    backup: { kubeconfig_file: ${Cluster.kubeconfig_file} }
  octavia_stuck_lb: { auth_url: "https://keystone.example.org:5000/v3",
    application_credential_id_file: ${Credentials.application_credential_id_file},
    application_credential_secret_file: ${Credentials.application_credential_secret_file},
    ca_file: ${Credentials.ca_file} }
  openstack: { cloud: region1, clouds_file: ${Credentials.clouds_file} }
hooks:
  pre_failover:
    - { name: notify, url: "https://hooks.example.org/drwatch", secret_file: ${Hook.secret_file} }
`,
	"powerdns": `dns:
  provider: powerdns
  powerdns: { url: "https://pdns.example.net:8081", api_token_file: ${PowerDNSConfig.api_token_file} }
`,
	"cloudflare": `dns:
  provider: cloudflare
  cloudflare: { api_token_env: ${APIToken.api_token_env} }
`,
	"powerdns-env": `dns:
  provider: powerdns
  powerdns: { url: "https://pdns.example.net:8081", api_token_env: ${PowerDNSConfig.api_token_env} }
`,
	"hetzner": `dns:
  provider: hetzner
  hetzner: { api_token_file: ${APIToken.api_token_file} }
`,
	"route53": `dns:
  provider: route53
  route53: { region: eu-west-1, access_key_id_file: ${Route53Config.access_key_id_file}, secret_access_key_file: ${Route53Config.secret_access_key_file} }
`,
	"designate-appcred": `dns:
  provider: designate
  designate: { auth_url: "https://keystone.example.org:5000/v3", region: r2, application_credential_id: abc,
    application_credential_secret_file: ${DesignateConfig.application_credential_secret_file} }
`,
	"designate-password": `dns:
  provider: designate
  designate: { auth_url: "https://keystone.example.org:5000/v3", region: r2, username: drwatch, project_name: dns,
    password_file: ${DesignateConfig.password_file} }
`,
}

// secretPlaceholder matches a ${Type.key} placeholder of secretConfigs,
// or a ${Group.Type.key} one of a failover group's sections.
var secretPlaceholder = regexp.MustCompile(`\$\{((?:[A-Za-z0-9]+\.)+[a-z_]+)\}`)

func init() {
	secretConfigs["groups"] = groupSecretSection(secretConfigs["rfc2136"])
	// A group's records at a provider of its own: each DNS-only
	// configuration's provider section, in the group's dns section.
	for _, name := range dnsOnlySecretConfigs {
		secretConfigs["group-"+name] = groupProviderSection(secretConfigs[name])
	}
	secretConfigs["group-rfc2136"] = groupProviderSection(`dns:
  provider: rfc2136
  rfc2136: { server: "ns1.wiki.example.net:53", key_name: wiki., key_file: ${RFC2136Config.key_file} }
`)
}

// dnsOnlySecretConfigs are the secretConfigs that hold only a dns section.
var dnsOnlySecretConfigs = []string{"powerdns", "cloudflare", "powerdns-env", "hetzner", "route53", "designate-appcred", "designate-password"}

// groupProviderSection is a groups section of one failover group whose
// records are at the provider of dns (a dns-only configuration), each
// placeholder in it scoped to the group: a secret pasted into a group's
// own provider section is checked at the group's path.
func groupProviderSection(dns string) string {
	body := strings.TrimPrefix(strings.TrimSuffix(dns, "\n"), "dns:\n")
	body = strings.ReplaceAll(body, "${", "${Group.")
	return `groups:
  - name: wiki
    sites:
      primary: { probes: [{ name: wiki, type: tcp, address: "203.0.113.30:443" }] }
      backup: { probes: [{ name: wiki, type: tcp, address: "198.51.100.30:443" }] }
    dns:
      records:
        - { name: wiki, type: A, ttl: 60, primary: [203.0.113.30], backup: [198.51.100.30] }
    ` + strings.ReplaceAll(body, "\n", "\n    ") + "\n"
}

// groupSecretSection is a groups section of one failover group whose own
// sites, remediations and hooks are those of base, each placeholder in
// them scoped to the group (${Group.Type.key}) and each name its own: a
// secret pasted into a group's section is checked at the group's path.
func groupSecretSection(base string) string {
	block := func(key, next string) string {
		start, end := strings.Index(base, "\n"+key+":\n"), strings.Index(base, "\n"+next)
		if end < 0 {
			end = len(base)
		}
		body := strings.TrimSuffix(base[start+len(key)+3:end], "\n")
		body = strings.ReplaceAll(body, "${", "${Group.")
		body = strings.ReplaceAll(body, "{ name: ", "{ name: g-")
		return "    " + key + ":\n    " + strings.ReplaceAll(body, "\n", "\n    ") + "\n"
	}
	return "groups:\n  - name: wiki\n" + block("sites", "dns:") + block("remediations", "hooks:") + block("hooks", "\x00") +
		"    dns:\n      records:\n        - { name: wiki, type: A, ttl: 60, primary: [203.0.113.30], backup: [198.51.100.30] }\n"
}

// secretConfigText returns the named configuration; the DNS-only ones
// replace the dns section of the rfc2136 one, and groups adds its section
// to it.
func secretConfigText(name string) string {
	base := secretConfigs["rfc2136"]
	switch name {
	case "rfc2136":
		return base
	case "groups":
		return base + secretConfigs[name]
	}
	if strings.HasPrefix(name, "group-") {
		return base + secretConfigs[name]
	}
	start := strings.Index(base, "\ndns:\n")
	end := strings.Index(base, "\nremediations:\n")
	records := "  zone: example.org.\n  records:\n    - { name: lms, type: A, ttl: 60, primary: [203.0.113.10], backup: [198.51.100.10] }\n"
	return base[:start+1] + secretConfigs[name] + records + base[end+1:]
}

// secretBearingFields lists, as Type.key, every field of the configuration
// whose value names where a secret is kept: *_file, *_env and kubeconfig;
// those of a failover group's sections as Group.Type.key, for they are
// the top-level sections' types checked at another path.
func secretBearingFields(t reflect.Type, scope string, seen map[reflect.Type]bool, out map[string]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		secretBearingFields(t.Elem(), scope, seen, out)
		return
	case reflect.Struct:
	default:
		return
	}
	if t == reflect.TypeOf(config.Group{}) && scope == "" {
		scope, seen = "Group.", map[reflect.Type]bool{}
	}
	if seen[t] {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if f.Type.Kind() == reflect.String && (strings.HasSuffix(key, "_file") || strings.HasSuffix(key, "_env") || key == "kubeconfig") {
			out[scope+t.Name()+"."+key] = true
		}
		secretBearingFields(f.Type, scope, seen, out)
	}
}

// secretForms is every spelling of s that would leak it.
func secretForms(s string) []string {
	b := []byte(s)
	return []string{s, base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)), url.QueryEscape(s), url.PathEscape(s)}
}

// A secret pasted into any secret-bearing field (instead of the path or
// variable name that belongs there) appears in no output of validate or
// serve, in any encoding; the error names the field instead.
func TestSecretInFileFieldIsNeverPrinted(t *testing.T) {
	covered := map[string][]string{}
	for name := range secretConfigs {
		for _, m := range secretPlaceholder.FindAllStringSubmatch(secretConfigs[name], -1) {
			if !slices.Contains(covered[m[1]], name) {
				covered[m[1]] = append(covered[m[1]], name)
			}
		}
	}
	want := map[string]bool{}
	secretBearingFields(reflect.TypeOf(config.Config{}), "", map[reflect.Type]bool{}, want)
	for f := range want {
		if len(covered[f]) == 0 {
			t.Errorf("secret-bearing field %s is in no test configuration: add it to secretConfigs", f)
		}
	}
	for f := range covered {
		if !want[f] {
			t.Errorf("placeholder %s names no secret-bearing field of the config structs", f)
		}
	}

	files := newSecretConfigFiles(t)
	expand, write := files.expand, files.write
	for name := range secretConfigs {
		if _, stderr, code := run(t, "config", "validate", "-c", write(expand(secretConfigText(name), "", ""))); code != 0 {
			t.Fatalf("test bug: configuration %s without a secret: got exit %d, want 0:\n%s", name, code, stderr)
		}
	}

	shapes := map[string]func(raw []byte) string{
		"token": func(raw []byte) string { return "alice:" + base64.RawURLEncoding.EncodeToString(raw) },
		"jwt": func(raw []byte) string {
			return "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkcndhdGNoIn0." + base64.RawURLEncoding.EncodeToString(raw)
		},
		"base64": func(raw []byte) string { return base64.StdEncoding.EncodeToString(raw) },
		"hex":    func(raw []byte) string { return hex.EncodeToString(raw) },
	}
	for field, names := range covered {
		for shape, mk := range shapes {
			raw := make([]byte, 24)
			if _, err := rand.Read(raw); err != nil {
				t.Fatal(err)
			}
			secret := mk(raw)
			cfg := write(expand(secretConfigText(names[0]), field, secret))
			key := field[strings.LastIndex(field, ".")+1:]
			for _, args := range [][]string{{"config", "validate", "-c", cfg}, {"serve", "-c", cfg}} {
				out, stderr, code := run(t, args...)
				if code == 0 {
					t.Errorf("%s with a %s in %s: got exit 0, want a refusal", args[0], shape, field)
				}
				all := out + stderr
				for _, form := range secretForms(secret) {
					if strings.Contains(all, form) {
						t.Errorf("%s with a %s in %s: output holds the secret (as %q):\n%s", args[0], shape, field, form, all)
						break
					}
				}
				if !strings.Contains(all, key+": ") {
					t.Errorf("%s with a %s in %s: output does not name the field:\n%s", args[0], shape, field, all)
				}
				if strings.HasPrefix(field, "Group.") && !strings.Contains(all, "groups[wiki].") {
					t.Errorf("%s with a %s in %s: output does not name the group's field by its path:\n%s", args[0], shape, field, all)
				}
			}
		}
	}
}

// The CLI's own file flags, and the tls files of a --config it reads
// without checking them, are not quoted either when a secret was pasted
// into them.
func TestSecretInClientFileFlagIsNeverPrinted(t *testing.T) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	secret := "alice:" + base64.RawURLEncoding.EncodeToString(raw)
	dir := t.TempDir()
	cfgText := strings.NewReplacer("tls: { ca_file: /etc/drwatch/ca.crt", "tls: { ca_file: \""+secret+"\"").Replace(validExampleConfig(t))
	cfg := filepath.Join(dir, "drwatch.yaml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	ep := []string{"--endpoint", "https://127.0.0.1:1"}
	for name, args := range map[string][]string{
		"--ca-file":    append([]string{"status", "--ca-file", secret}, ep...),
		"--cert-file":  append([]string{"status", "--cert-file", secret, "--key-file", secret + "k"}, ep...),
		"--token-file": append([]string{"resume", "--reason", "r", "--yes", "--token-file", secret}, ep...),
		"--config":     {"status", "--config", cfg},
	} {
		out, stderr, code := run(t, args...)
		if code == 0 {
			t.Errorf("%s: got exit 0, want a failure", name)
		}
		for _, form := range secretForms(secret) {
			if strings.Contains(out+stderr, form) {
				t.Errorf("%s with a secret: output holds it (as %q):\n%s%s", name, form, out, stderr)
				break
			}
		}
	}
}

// validExampleConfig is config/testdata/valid.yaml.
func validExampleConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("config/testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "tls: { ca_file: /etc/drwatch/ca.crt") {
		t.Fatal("test bug: valid.yaml changed shape")
	}
	return string(b)
}
