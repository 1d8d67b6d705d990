package config

import "testing"

// The replicated policy built from a config is valid and names every probe.
func TestReplicatedPolicyFromExample(t *testing.T) {
	cfg, err := Load("../../../deploy/examples/node-a.yaml", Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.ReplicatedPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 3 || p.Quorum != 2 || len(p.Records) != len(cfg.DNS.Records) {
		t.Errorf("got nodes %v quorum %d records %d", p.Nodes, p.Quorum, len(p.Records))
	}
}
