package dnsprovider

import (
	"reflect"
	"slices"
	"testing"
)

// Every provider section of Config (its Sections) belongs to exactly one line of the
// providers table, and Names is the table's order: a section added
// without its line would be neither validated, nor built, nor refused
// when another provider is selected.
func TestEveryProviderSectionIsOneTableLine(t *testing.T) {
	ct := reflect.TypeOf(Sections{})
	claimed := map[string]string{}
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		var c Config
		reflect.ValueOf(&c.Sections).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		var set []string
		for _, p := range providers {
			if p.section.set(&c) {
				set = append(set, p.name)
			}
		}
		if len(set) != 1 {
			t.Errorf("Sections.%s: lines %v hold it, want exactly one", f.Name, set)
			continue
		}
		if other, dup := claimed[set[0]]; dup {
			t.Errorf("provider %s holds Sections.%s and Sections.%s, want one section", set[0], other, f.Name)
		}
		claimed[set[0]] = f.Name
	}
	if len(claimed) != len(providers) {
		t.Errorf("got %d sections held by the table, want one for each of its %d lines", len(claimed), len(providers))
	}
	want := []string{"rfc2136", "powerdns", "cloudflare", "route53", "digitalocean", "hetzner", "desec", "designate"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("got names %v, want %v", got, want)
	}
}
