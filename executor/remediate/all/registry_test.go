package all

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
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
	var cfg Config
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
		} else if r.Settings(repair.SectionOf(&cfg, r)) != s {
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

// Every section of the remediations config that configures a repair is its
// repair package's own type, with its own Validate (a repair.Section), so
// that a new repair leaves executor/remediate alone. Look-alike: the part
// that belongs to no repair (interval, kubernetes) stays remediate.Config,
// inline, and is no section.
func TestEveryRepairSectionIsItsRepairPackagesOwn(t *testing.T) {
	section := reflect.TypeOf((*repair.Section)(nil)).Elem()
	common := reflect.TypeOf(remediate.Config{})
	ct := reflect.TypeOf(Config{})
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		if f.Type == common {
			if !f.Anonymous || !strings.Contains(f.Tag.Get("yaml"), ",inline") {
				t.Errorf("%s: want remediate.Config embedded inline", f.Name)
			}
			continue
		}
		if !f.Type.Implements(section) {
			t.Errorf("%s (%s): not a repair.Section", f.Name, f.Type)
		}
		if f.Type.PkgPath() == common.PkgPath() {
			t.Errorf("%s: its type %s is executor/remediate's, want its repair package's", f.Name, f.Type)
		}
		key := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if !slices.ContainsFunc(Repairs, func(r repair.Repair) bool { return strings.Split(r.Section, ".")[0] == key }) {
			t.Errorf("remediations.%s: no repair of Repairs is configured there", key)
		}
	}
}
