package config

import (
	"path/filepath"
	"testing"
)

// Every example config under deploy/ validates. Referenced files live on the
// operator's machine, so their existence is not checked here.
func TestDeployExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("../../../deploy/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if filepath.Base(filepath.Dir(f)) == "prometheus" || filepath.Base(filepath.Dir(f)) == "grafana" {
			continue
		}
		n++
		if _, err := Load(f, Options{SkipFileChecks: true}); err != nil {
			t.Errorf("%s:\n%v", f, err)
		}
	}
	if n < 3 {
		t.Fatalf("found %d example configs under deploy/, want at least 3", n)
	}
}
