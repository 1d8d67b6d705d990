package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// groupsDNSBackend is groupsBackend with a DNS check per group, as a
// watcher that checks every group's zone has: the default group's is the
// status's own.
type groupsDNSBackend struct {
	*groupsBackend
	checks map[string]DNSCheck
}

func (b groupsDNSBackend) Status(ctx context.Context) Status {
	st := b.groupsBackend.Status(ctx)
	st.DNS = b.checks[failover.DefaultGroup]
	return st
}

// GroupStatus is WatcherBackend.GroupStatus's, over b's core and checks.
func (b groupsDNSBackend) GroupStatus(ctx context.Context, g string) (Status, error) {
	st, err := GroupStatusOn(b.m, b.Status(ctx), g)
	if err != nil {
		return Status{}, err
	}
	return withGroupDNS(b, st, g), nil
}

func (b groupsDNSBackend) GroupView(name string) (failover.View, bool) { return b.m.GroupView(name) }

func (b groupsDNSBackend) GroupDNS(name string) (DNSCheck, *ReconcileStatus) {
	return b.checks[cmpOrDefault(name)], nil
}

// newGroupsDNSServer serves the API and the status page of groupsPolicy's
// cluster whose DNS serves the default group's and apps' records, and lms'
// record edited by hand.
func newGroupsDNSServer(t *testing.T) *httptest.Server {
	t.Helper()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	check := func(name, want, got string) DNSCheck {
		d := []failover.RRset{{Name: name + ".example.org.", Type: "A", TTL: 60, Values: []string{want}}}
		g := []failover.RRset{{Name: name + ".example.org.", Type: "A", TTL: 60, Values: []string{got}}}
		return DNSCheck{At: at, Desired: d, Match: want == got, Servers: []ServerCheck{{Server: "ns1.example.org:53", Matched: want == got, Got: g}}}
	}
	b := groupsDNSBackend{newGroupsBackend(t), map[string]DNSCheck{
		failover.DefaultGroup: check("www", "203.0.113.10", "203.0.113.10"),
		"apps":                check("apps", "203.0.113.2", "203.0.113.2"),
		"lms":                 check("lms", "203.0.113.1", "192.0.2.66"),
	}}
	s := NewServer(b, Options{Now: func() time.Time { return at.Add(time.Second) }})
	RegisterStatusPage(s, b)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// A group's status (?group=NAME) carries that group's DNS check: lms'
// mismatch shows on lms' status only, and the default group's status, by
// name or by none, keeps the default group's.
func TestGroupStatusCarriesTheGroupsDNSCheck(t *testing.T) {
	srv := newGroupsDNSServer(t)
	for path, want := range map[string]struct {
		name  string
		match bool
	}{
		"/api/v1/status?group=lms":     {"lms.example.org.", false},
		"/api/v1/status?group=apps":    {"apps.example.org.", true},
		"/api/v1/status?group=default": {"www.example.org.", true},
		"/api/v1/status":               {"www.example.org.", true},
	} {
		resp, body := pageGet(t, srv, path)
		var st Status
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.DNS.Desired) != 1 || st.DNS.Desired[0].Name != want.name || st.DNS.Match != want.match {
			t.Errorf("GET %s: dns %+v, want %s's check, match %v", path, st.DNS, want.name, want.match)
		}
	}
}

// A group's page shows its own DNS check: lms' records that do not match,
// with what its server serves; the default group's page ("/") still shows
// its own, matching.
func TestGroupPageShowsTheGroupsDNSCheck(t *testing.T) {
	srv := newGroupsDNSServer(t)
	_, lms := pageGet(t, srv, "/groups/lms")
	for _, want := range []string{"records do not match the desired state", "lms.example.org. 60 A 203.0.113.1", "lms.example.org. 60 A 192.0.2.66"} {
		if !strings.Contains(text(lms), want) {
			t.Errorf("lms' page lacks %q", want)
		}
	}
	if strings.Contains(text(lms), "www.example.org.") {
		t.Error("lms' page shows the default group's records")
	}
	for _, path := range []string{"/", "/groups/default"} {
		_, root := pageGet(t, srv, path)
		if page := text(root); !strings.Contains(page, "every server serves the desired records") || strings.Contains(page, "lms.example.org.") {
			t.Errorf("%s: want the default group's DNS check only", path)
		}
	}
}
