package probes

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Every inline section of Spec belongs to exactly one line of the probe
// types table, and Probers holds exactly the table's probers: a section
// added without its line (or a line naming another type's field) is
// caught here, not by a probe silently decoded with no settings.
func TestEveryProbeSectionIsOneTableLine(t *testing.T) {
	full := func() Spec {
		return Spec{HTTP: &HTTPSpec{}, TCP: &TCPSpec{}, Kubernetes: &KubernetesSpec{}, Octavia: &OctaviaSpec{}}
	}
	st := reflect.TypeOf(Spec{})
	var sections []string
	for i := 0; i < st.NumField(); i++ {
		if f := st.Field(i); f.Type.Kind() == reflect.Pointer && strings.Contains(f.Tag.Get("yaml"), ",inline") {
			sections = append(sections, f.Name)
		}
	}
	claimed := map[string]string{}
	for _, pt := range probeTypes {
		s := full()
		pt.section.clear(&s)
		v := reflect.ValueOf(s)
		var cleared []string
		for _, name := range sections {
			if v.FieldByName(name).IsNil() {
				cleared = append(cleared, name)
			}
		}
		if len(cleared) != 1 {
			t.Errorf("type %s: clears sections %v, want exactly one", pt.name, cleared)
			continue
		}
		if other, dup := claimed[cleared[0]]; dup {
			t.Errorf("type %s: section %s is already type %s's", pt.name, cleared[0], other)
		}
		claimed[cleared[0]] = pt.name
		if got := reflect.ValueOf(Probers[pt.name]).Pointer(); got != reflect.ValueOf(pt.probe).Pointer() {
			t.Errorf("Probers[%s] is not the table's prober", pt.name)
		}
	}
	for _, name := range sections {
		if _, ok := claimed[name]; !ok {
			t.Errorf("Spec.%s: no line of the probe types table, want one", name)
		}
	}
	if len(Probers) != len(probeTypes) {
		t.Errorf("got %d probers, want the table's %d", len(Probers), len(probeTypes))
	}
	if got := typeNames(); got != "http, tcp, kubernetes or octavia" {
		t.Errorf("got type names %q, want the table's in order", got)
	}
}

// A probe's files are those its prober reads for the shape its settings
// choose, by field path relative to the probe; a probe of another type's
// section, or of an unknown type, names none.
func TestProbeFilesAreThoseOfItsType(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want []string
	}{
		{"http", Spec{Type: "http", HTTP: &HTTPSpec{CAFile: "/ca"}}, []string{"ca_file=/ca"}},
		{"tcp without a CA", Spec{Type: "tcp", TCP: &TCPSpec{}}, nil},
		{"kubeconfig alone", Spec{Type: "kubernetes", Kubernetes: &KubernetesSpec{Kubeconfig: "/kc", CAFile: "/ca", TokenFile: "/t"}}, []string{"kubeconfig=/kc"}},
		{"kubernetes token", Spec{Type: "kubernetes", Kubernetes: &KubernetesSpec{CAFile: "/ca", TokenFile: "/t"}}, []string{"ca_file=/ca", "token_file=/t"}},
		{"kubernetes client certificate", Spec{Type: "kubernetes", Kubernetes: &KubernetesSpec{ClientCertFile: "/c", ClientKeyFile: "/k"}}, []string{"client_cert_file=/c", "client_key_file=/k"}},
		{"octavia by cloud", Spec{Type: "octavia", Octavia: &OctaviaSpec{}}, nil},
		{"type without its section", Spec{Type: "octavia", HTTP: &HTTPSpec{CAFile: "/ca"}}, nil},
		{"unknown type", Spec{Type: "icmp", HTTP: &HTTPSpec{CAFile: "/ca"}}, nil},
	} {
		var got []string
		for _, f := range tc.spec.Files() {
			got = append(got, f.Field+"="+f.Path)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
