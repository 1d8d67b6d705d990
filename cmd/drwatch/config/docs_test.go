package config

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/dnsprovider"
)

// docs/configuration.md is generated from the config structs; this keeps them in step.
func TestReferenceMatchesDocs(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	const path = "../../../docs/configuration.md"
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (regenerate: go run ./cmd/drwatch config docs > docs/configuration.md)", path, err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("%s is out of date; regenerate: go run ./cmd/drwatch config docs > docs/configuration.md", path)
	}
}

// Each DNS provider's rows in the reference are the fields of that
// provider's own struct, at the provider's own path (a mapping, not a list),
// with that struct's defaults and meanings; no row of one provider speaks of
// another provider.
func TestReferenceProviderRowsComeFromOwnStruct(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // field path -> cells: type, default, meaning
	for _, line := range strings.Split(b.String(), "\n") {
		inner, ok := strings.CutPrefix(line, "| `dns.")
		if !ok {
			continue
		}
		cells := strings.SplitN(strings.TrimSuffix(inner, " |"), "|", 4) // the meaning may hold `\|`
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows["dns."+strings.TrimSuffix(cells[0], "`")] = cells[1:]
	}
	dnsFields := yamlFields(reflect.TypeOf(DNS{}))
	for _, provider := range dnsprovider.Names() {
		t.Run(provider, func(t *testing.T) {
			f, ok := dnsFields[provider]
			if !ok || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
				t.Fatalf("dns.%s: got field %v, want a pointer to the provider's struct", provider, f.Type)
			}
			prefix := "dns." + provider
			if got := rows[prefix]; len(got) != 3 || got[0] != "mapping" {
				t.Errorf("%s: got row %q, want type mapping", prefix, got)
			}
			want := yamlFields(f.Type.Elem())
			var got []string
			for path := range rows {
				if rest, ok := strings.CutPrefix(path, prefix); ok && rest != "" {
					got = append(got, path)
				}
			}
			sort.Strings(got)
			wantPaths := make([]string, 0, len(want))
			for name := range want {
				wantPaths = append(wantPaths, prefix+"."+name)
			}
			sort.Strings(wantPaths)
			if !slices.Equal(got, wantPaths) {
				t.Fatalf("rows: got %v, want %v (the fields of %s)", got, wantPaths, f.Type.Elem())
			}
			for name, sf := range want {
				path := prefix + "." + name
				row := rows[path]
				if def := sf.Tag.Get("default"); def != "" && row[1] != "`"+def+"`" {
					t.Errorf("%s default: got %q, want `%s`", path, row[1], def)
				}
				if doc := sf.Tag.Get("doc"); doc == "" || !strings.Contains(row[2], doc) {
					t.Errorf("%s meaning: got %q, want %s's doc %q", path, row[2], f.Type.Elem(), doc)
				}
				for _, other := range dnsprovider.Names() {
					if other != provider && strings.Contains(strings.ToLower(row[2]), other) {
						t.Errorf("%s meaning: got %q, which speaks of provider %s", path, row[2], other)
					}
				}
			}
		})
	}
}

// The TSIG key is matched by name as DNS names are: with or without the
// trailing dot, so the reference says the dot is optional.
func TestReferenceSaysKeyNameDotIsOptional(t *testing.T) {
	f, _ := reflect.TypeOf(dnsprovider.RFC2136Config{}).FieldByName("KeyName")
	if doc := f.Tag.Get("doc"); !strings.Contains(doc, "trailing dot is optional") {
		t.Errorf("dns.rfc2136.key_name: got doc %q, want it to say the trailing dot is optional", doc)
	}
}
