package all

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
)

var settingsType = reflect.TypeOf(remediate.Settings{})

// sections returns the path under remediations: of every section that
// holds a repair's mode and caps (embeds remediate.Settings), each with
// the address of those settings inside cfg.
func sections(v reflect.Value, path string, out map[string]*remediate.Settings) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type == settingsType {
			out[path] = v.Field(i).Addr().Interface().(*remediate.Settings)
			continue
		}
		if f.Type.Kind() != reflect.Struct {
			continue
		}
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		p := name
		if path != "" {
			p = path + "." + name
		}
		sections(v.Field(i), p, out)
	}
}

// Every section of the remediations config that configures a repair has
// exactly one entry in Repairs, whose Settings point at that section's, and
// whose name is its own. Look-alike: the sections that configure no repair
// (kubernetes, the credentials) have none.
func TestEveryRepairSectionIsListedOnce(t *testing.T) {
	var cfg remediate.Config
	want := map[string]*remediate.Settings{}
	sections(reflect.ValueOf(&cfg).Elem(), "", want)
	got := map[string]bool{}
	var names []string
	for _, r := range Repairs {
		if got[r.Section] {
			t.Errorf("%s: section %s listed twice", r.Name, r.Section)
		}
		got[r.Section] = true
		names = append(names, r.Name)
		if s, ok := want[r.Section]; !ok {
			t.Errorf("%s: section %q holds no repair settings", r.Name, r.Section)
		} else if r.Settings(&cfg) != s {
			t.Errorf("%s: Settings point elsewhere than remediations.%s", r.Name, r.Section)
		}
		if r.Build == nil || r.Name == "" {
			t.Errorf("%q: no name or no Build", r.Section)
		}
	}
	for s := range want {
		if !got[s] {
			t.Errorf("remediations.%s configures a repair that Repairs does not list", s)
		}
	}
	if slices.Contains(names, "") || len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		t.Errorf("names %v: want each once", names)
	}
	if _, ok := want["kubernetes"]; ok {
		t.Error("remediations.kubernetes counted as a repair section")
	}
}
