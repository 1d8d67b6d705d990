package probes

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/openstackauth"
)

// A key that several probe types declare (ca_file, cert_min_validity) is one
// field of the configuration file: every declaration carries the same tags,
// so the walker, the defaults and the reference agree whichever they read.
func TestSharedProbeKeysMeanOneThing(t *testing.T) {
	first := map[string]reflect.StructField{}
	shared := 0
	st := reflect.TypeOf(Spec{})
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		if !strings.Contains(f.Tag.Get("yaml"), ",inline") {
			continue
		}
		et := f.Type.Elem()
		for j := 0; j < et.NumField(); j++ {
			g := et.Field(j)
			key := strings.Split(g.Tag.Get("yaml"), ",")[0]
			if key == "" || key == "-" {
				continue
			}
			prev, ok := first[key]
			if !ok {
				first[key] = g
				continue
			}
			shared++
			if prev.Tag != g.Tag || prev.Type != g.Type {
				t.Errorf("%s.%s: key %s declared as %s `%s`, first as %s `%s`; want the same", et.Name(), g.Name, key, g.Type, g.Tag, prev.Type, prev.Tag)
			}
		}
	}
	if shared == 0 {
		t.Fatal("no key shared by two probe types; want ca_file and cert_min_validity")
	}
}

// A configured probe obeys the file's rules on top of its prober's: a name
// fit for a metric label, a positive timeout, an https kubernetes server
// with credentials, a connect_to with its port. The prober alone accepts
// what the file refuses, and says the same thing where both check.
func TestConfiguredProbeRules(t *testing.T) {
	kube := &KubernetesSpec{Server: "http://10.0.0.1:6443", Endpoint: "readyz"}
	if es := kube.Validate(); es != nil {
		t.Fatalf("prober's rules for an anonymous http server: got %v, want none", es)
	}
	tests := []struct {
		name string
		spec Spec
		want field.Errors
	}{
		{"kubernetes", Spec{Name: "k", Type: "kubernetes", Timeout: time.Second, Kubernetes: kube}, field.Errors{
			{Path: "server", Msg: `"http://10.0.0.1:6443" must be an https URL`},
			{Path: "", Msg: "needs credentials: token_file, client_cert_file + client_key_file, or kubeconfig"},
		}},
		{"http", Spec{Name: "Web", Type: "http", HTTP: &HTTPSpec{URL: "https://x/", ConnectTo: "10.0.0.1"}}, field.Errors{
			{Path: "name", Msg: `"Web" must be lower-case letters, digits and '-' (it is a metric label)`},
			{Path: "timeout", Msg: "0s must be > 0"},
			{Path: "connect_to", Msg: `"10.0.0.1" is not host:port`},
		}},
		{"unknown type stops", Spec{Name: "x", Type: "ftp"}, field.Errors{
			{Path: "type", Msg: `"ftp" must be http, tcp, kubernetes or octavia`},
		}},
		{"no type-specific fields", Spec{Name: "t", Type: "tcp", Timeout: time.Second}, field.Errors{
			{Path: "address", Msg: "required"},
		}},
		{"octavia vip_port default without check_vip", Spec{Name: "o", Type: "octavia", Timeout: time.Second,
			Octavia: &OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "c"}, LoadBalancer: "lb", VIPPort: 443}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.Validate(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate() = %#v, want %#v", got, tt.want)
			}
		})
	}
	if es := (&HTTPSpec{URL: "https://x/", ConnectTo: "10.0.0.1"}).Validate(); es != nil {
		t.Errorf("prober's rules for a bare connect_to host: got %v, want none", es)
	}
}

// A site's problems are relative to its probe list, each probe labelled as
// the configuration walker labels list items: by name, name#2, or index.
func TestValidateProbesLabelsEachProbe(t *testing.T) {
	ok := &TCPSpec{Address: "10.0.0.1:443"}
	specs := []Spec{
		{Name: "lms", Type: "tcp", Timeout: time.Second, Critical: new(false), TCP: ok},
		{Name: "lms", Type: "tcp", Timeout: time.Second, Critical: new(false), TCP: &TCPSpec{}},
		{Type: "tcp", Timeout: time.Second, Critical: new(false), TCP: ok},
	}
	want := field.Errors{
		{Path: "[lms#2].name", Msg: `duplicate probe name "lms"`},
		{Path: "[lms#2].address", Msg: "required"},
		{Path: "[2].name", Msg: "required"},
		{Path: "", Msg: "no critical probe: the site could never be judged"},
	}
	if got := ValidateProbes(specs); !reflect.DeepEqual(got, want) {
		t.Errorf("ValidateProbes = %#v, want %#v", got, want)
	}
	if got := ValidateProbes(nil); !reflect.DeepEqual(got, field.Errors{{Path: "", Msg: "required: at least one probe"}}) {
		t.Errorf("ValidateProbes(nil) = %#v, want the list required", got)
	}
}

// The file's vip_port default reaches the prober only with check_vip, which
// refuses a port it would not use; the configuration is left as it was.
func TestConfiguredSiteDropsUnusedVIPPort(t *testing.T) {
	in := []Spec{
		{Name: "lb", Type: "octavia", Octavia: &OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "c"}, LoadBalancer: "lb", VIPPort: 443}},
		{Name: "vip", Type: "octavia", Octavia: &OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "c"}, LoadBalancer: "lb", CheckVIP: true, VIPPort: 8443}},
	}
	got := ConfiguredSite("primary", in)
	if got.Site != "primary" || len(got.Probes) != 2 {
		t.Fatalf("got %+v, want site primary with 2 probes", got)
	}
	if p := got.Probes[0].Octavia.VIPPort; p != 0 {
		t.Errorf("without check_vip: got vip_port %d, want 0", p)
	}
	if p := got.Probes[1].Octavia.VIPPort; p != 8443 {
		t.Errorf("with check_vip: got vip_port %d, want 8443", p)
	}
	if es := got.Probes[0].Octavia.Validate(); es != nil {
		t.Errorf("prober refuses the scheduled spec: %v", es)
	}
	if in[0].Octavia.VIPPort != 443 {
		t.Errorf("ConfiguredSite changed its input: vip_port %d, want 443", in[0].Octavia.VIPPort)
	}
}
