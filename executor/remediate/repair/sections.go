package repair

import (
	"reflect"
	"strings"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/field"
)

// A config that repairs are assembled from is a struct (executor/remediate/all's
// Config, or a test's smaller one) that embeds remediate.Config, inline,
// and holds each repair section as a field whose yaml name is the
// section's key. The functions below find the sections by their type, so
// that such a struct needs no code of its own.

var (
	commonType  = reflect.TypeOf(remediate.Config{})
	sectionType = reflect.TypeOf((*Section)(nil)).Elem()
)

// keyed is a pointer to one section of a config, and its key.
type keyed struct {
	key string
	ptr any
}

// sectionsOf returns the remediate.Config the struct *cfg embeds (a zero
// one when it has none) and a pointer to each of its sections, in field
// order.
func sectionsOf(cfg any) (*remediate.Config, []keyed) {
	v := reflect.ValueOf(cfg).Elem()
	common := &remediate.Config{}
	var out []keyed
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		switch {
		case f.Type == commonType:
			common = v.Field(i).Addr().Interface().(*remediate.Config)
		case f.Type.Implements(sectionType):
			out = append(out, keyed{key: strings.Split(f.Tag.Get("yaml"), ",")[0], ptr: v.Field(i).Addr().Interface()})
		}
	}
	return common, out
}

// Defaults sets every zero field of the config *cfg from its `default` tag
// (field.SetDefaults), then each section's defaults derived from its other
// fields ([Deriver]).
func Defaults(cfg any) {
	field.SetDefaults(cfg)
	_, sections := sectionsOf(cfg)
	for _, s := range sections {
		if d, ok := s.ptr.(Deriver); ok {
			d.DeriveDefaults()
		}
	}
}

// Validate returns every problem of the config *cfg at once: its
// remediate.Config's, then each section's under the section's key, in
// field order; paths are relative to remediations:.
func Validate(cfg any) field.Errors {
	common, sections := sectionsOf(cfg)
	errs := common.Validate()
	for _, s := range sections {
		errs.Append(s.key, s.ptr.(Section).Validate())
	}
	return errs
}

// SectionOf returns a pointer to the section of the config *cfg that holds
// r's settings (the first element of r.Section is its key), or nil.
func SectionOf(cfg any, r Repair) any {
	key, _, _ := strings.Cut(r.Section, ".")
	_, sections := sectionsOf(cfg)
	for _, s := range sections {
		if s.key == key {
			return s.ptr
		}
	}
	return nil
}
