package config

import (
	"path/filepath"
	"testing"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/probes"
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
		switch filepath.Base(filepath.Dir(f)) {
		case "prometheus", "grafana", "deb": // their tools' YAML (deb: nfpm's), not drwatch configs
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

// Every probe of the example configs decodes into a spec its prober accepts.
func TestExampleProbeSpecsValidate(t *testing.T) {
	cfg, err := Load("../../../deploy/examples/node-a.yaml", Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	type validator interface{ Validate() field.Errors }
	n := 0
	for _, site := range cfg.Sites.Specs() {
		for _, s := range site.Probes {
			var v validator
			switch {
			case s.HTTP != nil:
				v = s.HTTP
			case s.TCP != nil:
				v = s.TCP
			case s.Kubernetes != nil:
				v = s.Kubernetes
			case s.Octavia != nil:
				v = s.Octavia
			}
			if v == nil {
				t.Errorf("%s/%s: no type-specific spec", site.Site, s.Name)
				continue
			}
			n++
			if err := v.Validate(); err != nil {
				t.Errorf("%s/%s (%s): %v", site.Site, s.Name, s.Type, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no probes decoded")
	}
	if _, err := probes.NewScheduler(cfg.Sites.Specs(), probes.SchedulerOptions{Interval: cfg.Policy.Interval}); err != nil {
		t.Errorf("scheduler refuses the example's probes: %v", err)
	}
}
