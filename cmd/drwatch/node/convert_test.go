package node

import (
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/probes"
)

// Every probe of the example configs converts into a spec its prober accepts.
func TestExampleProbeSpecsValidate(t *testing.T) {
	cfg, err := config.Load("../../../deploy/examples/node-a.yaml", config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	type validator interface{ Validate() error }
	n := 0
	for _, site := range ProbeSpecs(cfg) {
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
		t.Fatal("no probes converted")
	}
	if _, err := probes.NewScheduler(ProbeSpecs(cfg), probes.SchedulerOptions{Interval: cfg.Policy.Interval}); err != nil {
		t.Errorf("scheduler refuses the example's probes: %v", err)
	}
}

// The replicated policy built from a config is valid and names every probe.
func TestPolicyFromExample(t *testing.T) {
	cfg, err := config.Load("../../../deploy/examples/node-a.yaml", config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	p := PolicyFrom(cfg)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 3 || p.Quorum != 2 || len(p.Records) != len(cfg.DNS.Records) {
		t.Errorf("got nodes %v quorum %d records %d", p.Nodes, p.Quorum, len(p.Records))
	}
}
