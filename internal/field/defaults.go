package field

import (
	"reflect"
	"strconv"
	"strings"
	"time"
)

// SetDefaults sets every zero field of the struct *ptr, and of the structs
// it holds, from its `default` struct tag: the one place a section's
// defaults are written, which the configuration reference shows. A
// section's own package calls it to default a section built in code; the
// config loader calls ApplyDefaults, which leaves keys written in the file
// alone. A tag that does not parse as the field's type ("majority of
// peers", "20s, at most interval / 2"), or a string tag in parentheses
// ("(cluster_name)"), describes a default derived from other fields, which
// the section's package sets itself.
func SetDefaults(ptr any) {
	ApplyDefaults(reflect.ValueOf(ptr).Elem(), "", func(string) bool { return false })
}

// ApplyDefaults sets the zero fields of the struct v from their `default`
// tags, except those whose path (below path, by yaml name, list items
// named as Labels names them) present reports: a key present in a file is
// never defaulted, even when its value is zero. Optional sections
// (pointers) are defaulted only when set.
func ApplyDefaults(v reflect.Value, path string, present func(path string) bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		if inline(f) {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			ApplyDefaults(fv, path, present)
			continue
		}
		fp := Join(path, strings.Split(f.Tag.Get("yaml"), ",")[0])
		switch {
		case fv.Kind() == reflect.Struct && fv.Type() != durationType:
			ApplyDefaults(fv, fp, present)
			continue
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			labels := Labels{}
			for j := 0; j < fv.Len(); j++ {
				ApplyDefaults(fv.Index(j), fp+"["+labels.Next(itemName(fv.Index(j)), j)+"]", present)
			}
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct:
			if !fv.IsNil() {
				ApplyDefaults(fv.Elem(), fp, present)
			}
			continue
		}
		def, ok := f.Tag.Lookup("default")
		if !ok || !fv.IsZero() || present(fp) {
			continue
		}
		setLiteral(fv, def)
	}
}

var durationType = reflect.TypeOf(time.Duration(0))

// inline reports whether f is a struct (or pointer to one) whose fields
// sit at its parent's level (yaml ",inline").
func inline(f reflect.StructField) bool {
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && strings.Contains(f.Tag.Get("yaml"), ",inline")
}

// setLiteral sets fv from a literal default. Non-literal defaults (derived
// ones such as "majority of peers") do not parse and are left to derive.
func setLiteral(fv reflect.Value, def string) {
	switch {
	case fv.Type() == durationType:
		if d, err := time.ParseDuration(def); err == nil {
			fv.SetInt(int64(d))
		}
	case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Bool:
		if b, err := strconv.ParseBool(def); err == nil {
			fv.Set(reflect.ValueOf(&b))
		}
	case fv.Kind() == reflect.Bool:
		if b, err := strconv.ParseBool(def); err == nil {
			fv.SetBool(b)
		}
	case fv.Kind() == reflect.String:
		if !strings.HasPrefix(def, "(") {
			fv.SetString(def)
		}
	case fv.Kind() >= reflect.Int && fv.Kind() <= reflect.Int64:
		if n, err := strconv.ParseInt(def, 10, 64); err == nil {
			fv.SetInt(n)
		}
	case fv.Kind() >= reflect.Uint && fv.Kind() <= reflect.Uint64:
		if n, err := strconv.ParseUint(def, 10, 64); err == nil {
			fv.SetUint(n)
		}
	case fv.Kind() == reflect.Float32 || fv.Kind() == reflect.Float64:
		if x, err := strconv.ParseFloat(def, 64); err == nil {
			fv.SetFloat(x)
		}
	case fv.Kind() == reflect.Slice && strings.HasPrefix(def, "[") && strings.HasSuffix(def, "]"):
		parts := strings.Split(strings.Trim(def, "[]"), ",")
		out := reflect.MakeSlice(fv.Type(), 0, len(parts))
		for _, p := range parts {
			e := reflect.New(fv.Type().Elem()).Elem()
			setLiteral(e, strings.TrimSpace(p))
			out = reflect.Append(out, e)
		}
		fv.Set(out)
	}
}

// itemName is what a list item is called in paths: its Name or ID field.
func itemName(v reflect.Value) string {
	for _, f := range []string{"Name", "ID"} {
		if fv := v.FieldByName(f); fv.IsValid() && fv.Kind() == reflect.String {
			return fv.String()
		}
	}
	return ""
}
