package dnsprovider_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/libdns/libdns"
	"github.com/mittwald/go-powerdns/pdnshttp"
)

// fakeLibdns is a libdns provider with function fields (a boundary we do not own).
type fakeLibdns struct {
	get func(ctx context.Context, zone string) ([]libdns.Record, error)
	set func(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error)
	del func(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error)
}

func (f *fakeLibdns) GetRecords(ctx context.Context, zone string) ([]libdns.Record, error) {
	return f.get(ctx, zone)
}
func (f *fakeLibdns) SetRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	return f.set(ctx, zone, recs)
}
func (f *fakeLibdns) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	return f.del(ctx, zone, recs)
}

func TestLibdnsAdapter(t *testing.T) {
	var sets, dels [][]libdns.Record
	zone := []libdns.Record{
		libdns.RR{Name: "www", Type: "A", TTL: time.Minute, Data: "192.0.2.1"},
		libdns.RR{Name: "www", Type: "A", TTL: time.Minute, Data: "192.0.2.2"},
		libdns.RR{Name: "_drwatch", Type: "TXT", TTL: time.Minute, Data: `"gen=3"`}, // PowerDNS keeps the quotes
		libdns.RR{Name: "old", Type: "A", TTL: time.Minute, Data: "192.0.2.9"},
	}
	f := &fakeLibdns{
		get: func(context.Context, string) ([]libdns.Record, error) { return zone, nil },
		set: func(_ context.Context, _ string, r []libdns.Record) ([]libdns.Record, error) {
			sets = append(sets, r)
			return r, nil
		},
		del: func(_ context.Context, _ string, r []libdns.Record) ([]libdns.Record, error) {
			dels = append(dels, r)
			return r, nil
		},
	}
	p := dnsprovider.NewLibdns("fake", "example.test", f, nil)
	got, err := p.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "www.example.test.", Type: "a"}, {Name: "_drwatch", Type: "TXT"}, {Name: "none", Type: "A"}})
	if err != nil || len(got[0].Values) != 2 || got[1].Values[0] != "gen=3" || len(got[2].Values) != 0 {
		t.Fatalf("GetRecords: got %v, %v; want www x2, gen=3 unquoted, none absent", got, err)
	}
	changed, err := p.SetRecords(context.Background(), []dnsprovider.RRset{
		{Name: "www", Type: "A", TTL: time.Minute, Values: []string{"192.0.2.2", "192.0.2.1"}}, // same, other order
		{Name: "new", Type: "A", TTL: time.Minute, Values: []string{"192.0.2.5"}},
		{Name: "old", Type: "A"}, // delete
	})
	if err != nil || len(changed) != 2 {
		t.Fatalf("SetRecords: got %d changed, %v; want 2, nil", len(changed), err)
	}
	if len(sets) != 1 || len(sets[0]) != 1 || sets[0][0].RR().Name != "new" {
		t.Errorf("libdns SetRecords calls: got %v, want one call with only new", sets)
	}
	if len(dels) != 1 || len(dels[0]) != 1 || dels[0][0].RR().Data != "192.0.2.9" {
		t.Errorf("libdns DeleteRecords calls: got %v, want one call deleting old", dels)
	}
}

func TestLibdnsErrorClasses(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		auth      bool
		retryable bool
	}{
		{"pdns_401", pdnshttp.ErrUnexpectedStatus{StatusCode: 401, ErrResponse: pdnshttp.ErrResponse{Message: "Unauthorized"}}, true, false},
		{"pdns_500", pdnshttp.ErrUnexpectedStatus{StatusCode: 500}, false, true},
		{"pdns_422", pdnshttp.ErrUnexpectedStatus{StatusCode: 422}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLibdns{get: func(context.Context, string) ([]libdns.Record, error) { return nil, tt.err }}
			_, err := dnsprovider.NewLibdns("powerdns", "example.test.", f, nil).GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "www", Type: "A"}})
			if errors.Is(err, dnsprovider.ErrAuth) != tt.auth || dnsprovider.IsRetryable(err) != tt.retryable {
				t.Errorf("%v: got auth=%v retryable=%v, want %v %v", err, errors.Is(err, dnsprovider.ErrAuth), dnsprovider.IsRetryable(err), tt.auth, tt.retryable)
			}
		})
	}
}
