package config

import (
	"github.com/drwatch/drwatch/internal/field"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// applyDefaults fills zero fields from their `default` struct tags. Tags that
// describe a derived value ("majority of peers") are resolved by derive,
// after decoding, because they depend on other fields. Type-specific probe
// fields get their default only on probes of that type: a decoded probe
// holds only its own type's struct.
//
// A key present in the file is never defaulted, even when its value is zero:
// "fall: 0" is an error to report, not a request for the default.
func applyDefaults(v reflect.Value, path string, present func(string) bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		if isInline(f) {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			applyDefaults(fv, path, present)
			continue
		}
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		fp := joinPath(path, name)
		switch {
		case fv.Kind() == reflect.Struct && fv.Type() != durationType:
			applyDefaults(fv, fp, present)
			continue
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			labels := field.Labels{}
			for j := 0; j < fv.Len(); j++ {
				applyDefaults(fv.Index(j), fp+"["+labels.Next(itemName(fv.Index(j)), j)+"]", present)
			}
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct:
			if !fv.IsNil() {
				applyDefaults(fv.Elem(), fp, present)
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

func hasType(list, t string) bool {
	for _, s := range strings.Split(list, ",") {
		if s == t {
			return true
		}
	}
	return false
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
		fv.SetString(def)
	case fv.Kind() >= reflect.Int && fv.Kind() <= reflect.Int64:
		if n, err := strconv.ParseInt(def, 10, 64); err == nil {
			fv.SetInt(n)
		}
	case fv.Kind() >= reflect.Uint && fv.Kind() <= reflect.Uint64:
		if n, err := strconv.ParseUint(def, 10, 64); err == nil {
			fv.SetUint(n)
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

// derive resolves the defaults that depend on other fields.
func derive(c *Config, present func(string) bool) {
	c.Policy = c.Policy.WithDerivedDefaults(len(c.Peers), func(path string) bool { return present("policy." + path) })
	if c.DNS.RFC2136 != nil {
		// One exchange may take at most an interval (1s..5s): a query lost
		// while the server is down must not delay the retry after it returns.
		c.DNS.RFC2136.Timeout = min(max(c.Policy.Interval, time.Second), 5*time.Second)
	}
	deriveDrill(c, present)
	for _, site := range []struct {
		path string
		s    *Site
	}{{"sites.primary", &c.Sites.Primary}, {"sites.backup", &c.Sites.Backup}} {
		labels := field.Labels{}
		for i := range site.s.Probes {
			p := &site.s.Probes[i]
			pp := site.path + ".probes[" + labels.Next(p.Name, i) + "]"
			if !present(pp + ".timeout") {
				p.Timeout = c.Policy.Timeout
			}
		}
	}
}
