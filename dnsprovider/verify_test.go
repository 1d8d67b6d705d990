package dnsprovider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/dnstest"
)

// TestVerifyNamesLaggingServer: with a fixed list of two authoritative
// servers where one never gets the update, Verify reports the other's
// propagation and names the laggard.
func TestVerifyNamesLaggingServer(t *testing.T) {
	lagging, err := dnstest.Start("127.0.0.1:0", testZone)
	if err != nil {
		t.Fatal(err)
	}
	defer lagging.Close()
	if err := lagging.Seed("lag 60 IN A 203.0.113.10"); err != nil {
		t.Fatal(err)
	}
	p := newEmbeddedProvider(t, "_drwatch-lag", false)
	want := []dnsprovider.RRset{{Name: "lag", Type: "A", TTL: time.Minute, Values: []string{"198.51.100.10"}}}
	if _, err := p.SetRecords(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	v, err := dnsprovider.NewVerifier(testZone, dnsprovider.VerifyConfig{
		Servers: []string{embedded.Addr(), lagging.Addr()}, Timeout: 400 * time.Millisecond, Interval: 20 * time.Millisecond,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.Verify(context.Background(), want)
	if err != nil {
		t.Fatalf("Verify: got %v, want nil", err)
	}
	byServer := map[string]dnsprovider.ServerResult{}
	for _, s := range res.Servers {
		byServer[s.Server] = s
	}
	if s := byServer[embedded.Addr()]; !s.Matched || s.After <= 0 {
		t.Errorf("up-to-date server: got matched=%v after=%s, want matched with a propagation time", s.Matched, s.After)
	}
	lag := byServer[lagging.Addr()]
	if lag.Matched || len(lag.Got) != 1 || lag.Got[0].Values[0] != "203.0.113.10" {
		t.Errorf("lagging server: got matched=%v got=%v, want unmatched serving 203.0.113.10", lag.Matched, lag.Got)
	}
	if res.OK() || !errors.Is(res.Err(), dnsprovider.ErrNotPropagated) || !strings.Contains(res.Err().Error(), lagging.Addr()) || strings.Contains(res.Err().Error(), embedded.Addr()) {
		t.Errorf("Err: got %v, want ErrNotPropagated naming only %s", res.Err(), lagging.Addr())
	}
	// Check is a single pass for `drwatch dns check`.
	res, err = v.Check(context.Background(), want)
	if err != nil || res.OK() || !byServerMatched(res, embedded.Addr()) {
		t.Errorf("Check: got ok=%v err=%v, want not ok with %s matched", res.OK(), err, embedded.Addr())
	}
}

func byServerMatched(v *dnsprovider.Verification, server string) bool {
	for _, s := range v.Servers {
		if s.Server == server {
			return s.Matched
		}
	}
	return false
}

// TestSwapTooLarge: an update that cannot fit in one DNS message is refused
// up front (terminal), never split into non-atomic pieces.
func TestSwapTooLarge(t *testing.T) {
	p := newEmbeddedProvider(t, "_drwatch-big", false).(dnsprovider.CompareAndSwapper)
	var exp, des []dnsprovider.RRset
	for i := range 1500 {
		name := fmt.Sprintf("big-record-name-%d", i)
		exp = append(exp, dnsprovider.RRset{Name: name, Type: "A"})
		des = append(des, dnsprovider.RRset{Name: name, Type: "A", TTL: time.Minute, Values: []string{"192.0.2.1"}})
	}
	err := p.Swap(context.Background(), exp, des, 0, 1)
	if !errors.Is(err, dnsprovider.ErrTooLarge) || !dnsprovider.IsTerminal(err) {
		t.Fatalf("Swap of 1500 rrsets: got %v, want ErrTooLarge (terminal)", err)
	}
}

// TestCheckCountsTTL: a server that serves the desired values with another
// TTL does not match; resolvers would cache the answer for the wrong time.
func TestCheckCountsTTL(t *testing.T) {
	srv, err := dnstest.Start("127.0.0.1:0", testZone)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Seed("lms 60 IN A 203.0.113.10"); err != nil {
		t.Fatal(err)
	}
	v, err := dnsprovider.NewVerifier(testZone, dnsprovider.VerifyConfig{Servers: []string{srv.Addr()}, Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ttl  time.Duration
		want bool
	}{{5 * time.Second, false}, {time.Minute, true}} {
		res, err := v.Check(context.Background(), []dnsprovider.RRset{{Name: "lms", Type: "A", TTL: tc.ttl, Values: []string{"203.0.113.10"}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.OK() != tc.want {
			t.Errorf("desired ttl %s against served 60s: got match %v, want %v", tc.ttl, res.OK(), tc.want)
		}
	}
}
