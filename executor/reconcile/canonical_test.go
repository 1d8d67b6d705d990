package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// servedDNS is a provider without compare-and-swap that serves fixed RRsets
// and counts writes.
type servedDNS struct {
	served map[dnsprovider.RRsetID]dnsprovider.RRset
	writes int
}

func (s *servedDNS) Zone() string { return zone }

func (s *servedDNS) GetRecords(_ context.Context, want []dnsprovider.RRsetID) ([]dnsprovider.RRset, error) {
	out := make([]dnsprovider.RRset, len(want))
	for i, id := range want {
		out[i] = dnsprovider.RRset{Name: id.Name, Type: id.Type}
		if s, ok := s.served[id]; ok {
			out[i] = s
		}
	}
	return out, nil
}

func (s *servedDNS) SetRecords(_ context.Context, sets []dnsprovider.RRset) ([]dnsprovider.RRset, error) {
	s.writes++
	return sets, nil
}

// DNS that serves the desired records in another presentation (an IPv6
// address written out in full and upper case, a CNAME target in another
// case) holds the desired records: the reconciler reports a match and
// writes nothing, as the provider's own compare and the decision core's
// would.
func TestServedRecordsInAnotherPresentationMatch(t *testing.T) {
	fc := &fakeCluster{m: failover.New()}
	fc.step(t, failover.Command{Payload: failover.SetPolicy{Policy: failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 2, Rise: 2, Interval: time.Second,
		Sites: map[failover.Site]failover.SitePolicy{
			failover.Primary: {Probes: []failover.ProbeRef{{Name: "lms", Critical: true}}},
			failover.Backup:  {Probes: []failover.ProbeRef{{Name: "lms", Critical: true}}},
		},
		Zone: zone,
		Records: []failover.Record{
			{Name: "v6", Type: "AAAA", TTL: 60, Primary: []string{"2001:db8::1"}, Backup: []string{"2001:db8::2"}},
			{Name: "www", Type: "CNAME", TTL: 60, Primary: []string{"lms.example.test."}, Backup: []string{"Studio.Example.Test."}},
		},
	}}})
	fc.step(t, failover.Command{Payload: failover.Failover{To: failover.Backup, Reason: "test", Actor: "alice", Force: true}})
	dns := &servedDNS{served: map[dnsprovider.RRsetID]dnsprovider.RRset{
		{Name: "v6", Type: "AAAA"}:   {Name: "v6", Type: "AAAA", TTL: time.Minute, Values: []string{"2001:DB8:0:0:0:0:0:2"}},
		{Name: "www", Type: "CNAME"}: {Name: "www", Type: "CNAME", TTL: time.Minute, Values: []string{"STUDIO.example.test."}},
	}}
	rec, err := New(Config{Node: "a", State: fc.m, Cluster: fc, DNS: dns, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	if rep := rec.Last(); !rep.Match {
		t.Errorf("served %v against desired %v: got match false, want true", rep.Actual, fc.m.Desired().Records)
	}
	if dns.writes != 0 {
		t.Errorf("got %d writes of records DNS already holds, want 0", dns.writes)
	}
	if d := fc.m.Desired(); !d.Done {
		t.Errorf("desired gen %d not done after a pass that found it served", d.Gen)
	}
}
