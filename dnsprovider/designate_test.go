package dnsprovider_test

// This file holds a SIMULATOR of OpenStack Keystone v3 (token issue) and
// Designate v2 (zones list; recordsets list, get, create, update, delete),
// built from the published API reference's JSON shapes. It is not a real
// Designate: it applies changes at once (status ACTIVE on the next read) and
// keeps everything in memory.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
)

type simRecordset struct {
	ID          string   `json:"id"`
	ZoneID      string   `json:"zone_id"`
	ProjectID   string   `json:"project_id"`
	Name        string   `json:"name"`
	ZoneName    string   `json:"zone_name"`
	Type        string   `json:"type"`
	Records     []string `json:"records"`
	TTL         int      `json:"ttl"`
	Status      string   `json:"status"`
	Action      string   `json:"action"`
	Description *string  `json:"description"`
	Version     int      `json:"version"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   *string  `json:"updated_at"`
	Links       struct {
		Self string `json:"self"`
	} `json:"links"`
}

type designateSim struct {
	srv  *httptest.Server
	mu   sync.Mutex
	rs   map[string]*simRecordset
	next int
	// writes counts create/update/delete calls; requests counts per region prefix.
	writes   int
	requests map[string]int
	// beforeGet, when set, runs before a recordset GET (to simulate a concurrent writer).
	beforeGet func(rs *simRecordset)
}

const (
	simZoneID  = "a86dba58-0043-4cc6-a1bb-69d5e86f3ca3"
	simProject = "4335d1f0-f793-11e2-b778-0800200c9a66"
	simToken   = "gAAAAABsimulated-token"
	simPass    = "designate-pass" // test-only credential
)

func newDesignateSim(t *testing.T) *designateSim {
	d := &designateSim{rs: map[string]*simRecordset{}, requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v3/auth/tokens", d.token)
	for _, region := range []string{"r1", "r2"} {
		mux.HandleFunc("/dns-"+region+"/", func(w http.ResponseWriter, r *http.Request) {
			d.mu.Lock()
			d.requests[region]++
			d.mu.Unlock()
			if r.Header.Get("X-Auth-Token") != simToken {
				http.Error(w, `{"code": 401, "type": "unauthorized", "message": "Authentication required"}`, http.StatusUnauthorized)
				return
			}
			if region == "r1" {
				// The primary region is down in this scenario.
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			d.designate(w, r, strings.TrimPrefix(r.URL.Path, "/dns-r2"))
		})
	}
	d.srv = httptest.NewServer(mux)
	t.Cleanup(d.srv.Close)
	return d
}

func (d *designateSim) token(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Auth struct {
			Identity struct {
				Password struct {
					User struct {
						Name     string `json:"name"`
						Password string `json:"password"`
					} `json:"user"`
				} `json:"password"`
			} `json:"identity"`
		} `json:"auth"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Auth.Identity.Password.User.Password != simPass {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}`)
		return
	}
	endpoint := func(region string) map[string]string {
		return map[string]string{"id": "ep-" + region, "interface": "public", "region": region, "region_id": region, "url": d.srv.URL + "/dns-" + map[string]string{"RegionOne": "r1", "RegionTwo": "r2"}[region] + "/"}
	}
	tok := map[string]any{"token": map[string]any{
		"methods":    []string{"password"},
		"expires_at": time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000000Z"),
		"issued_at":  time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"),
		"user":       map[string]any{"id": "u1", "name": body.Auth.Identity.Password.User.Name, "domain": map[string]string{"id": "default", "name": "Default"}},
		"project":    map[string]any{"id": simProject, "name": "drwatch", "domain": map[string]string{"id": "default", "name": "Default"}},
		"catalog": []any{
			map[string]any{"id": "svc-dns", "type": "dns", "name": "designate", "endpoints": []any{endpoint("RegionOne"), endpoint("RegionTwo")}},
			map[string]any{"id": "svc-id", "type": "identity", "name": "keystone", "endpoints": []any{map[string]string{"id": "ep-id", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": d.srv.URL + "/v3/"}}},
		},
	}}
	w.Header().Set("X-Subject-Token", simToken)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(tok)
}

func (d *designateSim) designate(w http.ResponseWriter, r *http.Request, path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	base := d.srv.URL + "/dns-r2/v2"
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/" && r.Method == "GET":
		// API version discovery at the endpoint root.
		_ = json.NewEncoder(w).Encode(map[string]any{"versions": map[string]any{"values": []any{
			map[string]any{"id": "v2", "status": "CURRENT", "links": []any{map[string]string{"href": d.srv.URL + "/dns-r2/v2/", "rel": "self"}}},
		}}})
	case len(parts) == 2 && parts[1] == "zones" && r.Method == "GET":
		zones := []any{}
		if n := r.URL.Query().Get("name"); n == "" || n == "example.test." {
			zones = append(zones, map[string]any{"id": simZoneID, "pool_id": "p1", "project_id": simProject, "name": "example.test.",
				"email": "hostmaster@example.test", "ttl": 3600, "serial": 1, "status": "ACTIVE", "action": "NONE", "description": nil,
				"masters": []string{}, "type": "PRIMARY", "transferred_at": nil, "version": 1, "created_at": "2026-01-01T00:00:00.000000", "updated_at": nil,
				"links": map[string]string{"self": base + "/zones/" + simZoneID}})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"zones": zones, "links": map[string]string{"self": base + "/zones"}, "metadata": map[string]int{"total_count": len(zones)}})
	case len(parts) == 4 && parts[2] == simZoneID && parts[3] == "recordsets" && r.Method == "GET":
		list := []*simRecordset{}
		for _, rs := range d.rs {
			list = append(list, rs)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"recordsets": list, "links": map[string]string{"self": base + "/zones/" + simZoneID + "/recordsets"}, "metadata": map[string]int{"total_count": len(list)}})
	case len(parts) == 4 && parts[2] == simZoneID && parts[3] == "recordsets" && r.Method == "POST":
		var in struct {
			Name    string   `json:"name"`
			Type    string   `json:"type"`
			TTL     int      `json:"ttl"`
			Records []string `json:"records"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || !strings.HasSuffix(in.Name, "example.test.") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"code": 400, "type": "invalid_object", "message": "Invalid Object"}`)
			return
		}
		for _, rs := range d.rs {
			if rs.Name == in.Name && rs.Type == in.Type {
				w.WriteHeader(http.StatusConflict)
				fmt.Fprint(w, `{"code": 409, "type": "duplicate_recordset", "message": "Duplicate RecordSet"}`)
				return
			}
		}
		d.next++
		d.writes++
		rs := &simRecordset{ID: fmt.Sprintf("f7b10e9b-0cae-4a91-b162-%012d", d.next), ZoneID: simZoneID, ProjectID: simProject, Name: in.Name,
			ZoneName: "example.test.", Type: in.Type, Records: in.Records, TTL: in.TTL, Status: "PENDING", Action: "CREATE", Version: 1,
			CreatedAt: "2026-01-01T00:00:00.000000"}
		rs.Links.Self = base + "/zones/" + simZoneID + "/recordsets/" + rs.ID
		d.rs[rs.ID] = rs
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(rs)
		rs.Status, rs.Action = "ACTIVE", "NONE"
	case len(parts) == 5 && parts[2] == simZoneID && parts[3] == "recordsets":
		rs, ok := d.rs[parts[4]]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"code": 404, "type": "recordset_not_found", "message": "Could not find RecordSet"}`)
			return
		}
		switch r.Method {
		case "GET":
			if d.beforeGet != nil {
				d.beforeGet(rs)
			}
			_ = json.NewEncoder(w).Encode(rs)
		case "PUT":
			var in struct {
				TTL     *int     `json:"ttl"`
				Records []string `json:"records"`
			}
			_ = json.NewDecoder(r.Body).Decode(&in)
			if in.TTL != nil {
				rs.TTL = *in.TTL
			}
			if in.Records != nil {
				rs.Records = in.Records
			}
			rs.Version++
			d.writes++
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(rs)
		case "DELETE":
			delete(d.rs, rs.ID)
			d.writes++
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(rs)
		}
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (d *designateSim) provider(t *testing.T, zone, region, password string) dnsprovider.Provider {
	t.Helper()
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := dnsprovider.New(dnsprovider.Config{Provider: dnsprovider.NameDesignate, Zone: zone, Designate: &dnsprovider.DesignateConfig{
		AuthURL: d.srv.URL + "/v3", Region: region, Username: "drwatch", UserDomainName: "Default",
		ProjectName: "drwatch", ProjectDomainName: "Default", PasswordFile: pwFile,
	}}, nil)
	if err != nil {
		t.Fatalf("New designate: %v", err)
	}
	return p
}

func TestDesignateSimulator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sim := newDesignateSim(t)
	p := sim.provider(t, "example.test.", "RegionTwo", simPass)
	if _, ok := p.(dnsprovider.CompareAndSwapper); ok {
		t.Fatalf("designate provider: got a CompareAndSwapper, want none (Designate cannot guard writes atomically)")
	}
	want := []dnsprovider.RRset{
		{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.10"}},
		{Name: "note", Type: "TXT", TTL: time.Minute, Values: []string{"hello world"}},
	}
	got, err := p.GetRecords(ctx, []dnsprovider.RRsetID{want[0].ID(), want[1].ID()})
	if err != nil || len(got) != 2 || len(got[0].Values) != 0 {
		t.Fatalf("read empty zone: got %v, %v; want two absent rrsets", got, err)
	}
	changed, err := p.SetRecords(ctx, want)
	if err != nil || len(changed) != 2 {
		t.Fatalf("create: got %d changed, %v; want 2, nil", len(changed), err)
	}
	got, err = p.GetRecords(ctx, []dnsprovider.RRsetID{want[0].ID(), want[1].ID()})
	if err != nil || got[0].Values[0] != "203.0.113.10" || got[1].Values[0] != "hello world" {
		t.Fatalf("read back: got %v, %v; want %v", got, err, want)
	}
	writes := sim.writes
	if changed, err := p.SetRecords(ctx, want); err != nil || len(changed) != 0 || sim.writes != writes {
		t.Fatalf("re-apply: got %d changed, %d new API writes, %v; want 0, 0, nil", len(changed), sim.writes-writes, err)
	}
	flip := []dnsprovider.RRset{{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{"198.51.100.10"}}}
	if changed, err := p.SetRecords(ctx, flip); err != nil || len(changed) != 1 {
		t.Fatalf("update: got %d changed, %v; want 1, nil", len(changed), err)
	}
	if sim.requests["r1"] != 0 || sim.requests["r2"] == 0 {
		t.Errorf("region routing: got %d requests to RegionOne, %d to RegionTwo; want 0 and some", sim.requests["r1"], sim.requests["r2"])
	}

	// Weak guard: a concurrent writer bumps the recordset's version between
	// our list and our update; the update is refused, not applied.
	sim.mu.Lock()
	sim.beforeGet = func(rs *simRecordset) { rs.Version++; rs.Records = []string{"192.0.2.66"} }
	sim.mu.Unlock()
	_, err = p.SetRecords(ctx, []dnsprovider.RRset{{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.10"}}})
	var ce *dnsprovider.ConflictError
	if !errors.As(err, &ce) || ce.Current[0].Values[0] != "192.0.2.66" {
		t.Fatalf("concurrent write: got %v, want *ConflictError carrying 192.0.2.66", err)
	}
	sim.mu.Lock()
	sim.beforeGet = nil
	sim.mu.Unlock()

	// Delete through an empty RRset.
	if changed, err := p.SetRecords(ctx, []dnsprovider.RRset{{Name: "note", Type: "TXT"}}); err != nil || len(changed) != 1 {
		t.Fatalf("delete: got %d, %v; want 1, nil", len(changed), err)
	}
}

func TestDesignateErrors(t *testing.T) {
	sim := newDesignateSim(t)
	tests := []struct {
		name, zone, region, password string
		wantIs                       error
	}{
		{"wrong_password", "example.test.", "RegionTwo", "wrong", dnsprovider.ErrAuth},
		{"zone_missing", "other.test.", "RegionTwo", simPass, dnsprovider.ErrWrongZone},
		{"region_without_endpoint", "example.test.", "RegionNine", simPass, dnsprovider.ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sim.provider(t, tt.zone, tt.region, tt.password)
			_, err := p.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "lms", Type: "A"}})
			if !errors.Is(err, tt.wantIs) || !dnsprovider.IsTerminal(err) {
				t.Fatalf("GetRecords: got %v (terminal=%v), want %v, terminal", err, dnsprovider.IsTerminal(err), tt.wantIs)
			}
			if strings.Contains(err.Error(), simPass) || strings.Contains(err.Error(), "wrong") && tt.password == "wrong" && strings.Contains(err.Error(), `"wrong"`) {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}
