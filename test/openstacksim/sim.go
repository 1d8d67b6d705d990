package openstacksim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Route is one Neutron extra route.
type Route struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

// Router is a Neutron router (the attributes the simulator keeps).
type Router struct {
	ID       string
	Name     string
	Routes   []Route
	Revision int
}

// AddressPair is one entry of a port's allowed_address_pairs.
type AddressPair struct {
	IPAddress  string `json:"ip_address"`
	MACAddress string `json:"mac_address,omitempty"`
}

// Port is a Neutron port. FixedIPs are bare addresses; SecurityGroups are IDs.
type Port struct {
	ID                  string
	Name                string
	NetworkID           string
	DeviceID            string
	MACAddress          string
	FixedIPs            []string
	SecurityGroups      []string
	AllowedAddressPairs []AddressPair
	Revision            int
}

// SecurityGroup is a Neutron security group.
type SecurityGroup struct {
	ID   string
	Name string
}

// Server is a Nova server. Its addresses and security groups come from its
// ports (device_id == ID), as in Nova with Neutron.
type Server struct {
	ID         string
	Name       string
	Status     string
	Metadata   map[string]string
	Created    time.Time
	LaunchedAt time.Time
	// Network names the network in the addresses map.
	Network string
	// Power is OS-EXT-STS:power_state; empty derives it from Status
	// (see PowerState).
	Power PowerState
	// Host is OS-EXT-SRV-ATTR:host, the nova-compute host it runs on;
	// Nova shows it to admin tokens only (empty: "compute-1").
	Host string
}

// PowerState is a server's OS-EXT-STS:power_state, by name.
type PowerState string

// Power states, with the integers Nova's API returns for them
// (nova/compute/power_state.py). PowerOmitted is not Nova behaviour: the
// attribute is left out of the server, so tests can prove a client does
// not read its absence as NOSTATE (0).
const (
	PowerNoState   PowerState = "NOSTATE"   // 0
	PowerRunning   PowerState = "RUNNING"   // 1
	PowerPaused    PowerState = "PAUSED"    // 3
	PowerShutdown  PowerState = "SHUTDOWN"  // 4
	PowerCrashed   PowerState = "CRASHED"   // 6
	PowerSuspended PowerState = "SUSPENDED" // 7
	PowerOmitted   PowerState = "omitted"
)

var powerCodes = map[PowerState]int{PowerNoState: 0, PowerRunning: 1, PowerPaused: 3, PowerShutdown: 4,
	PowerCrashed: 6, PowerSuspended: 7}

// power is the server's power state: its Power, or else what its Status
// usually goes with (SHUTOFF, SHELVED_OFFLOADED, SOFT_DELETED: SHUTDOWN;
// PAUSED, SUSPENDED: themselves; BUILD: NOSTATE; everything else,
// including ERROR, RUNNING).
func (v *Server) power() PowerState {
	if v.Power != "" {
		return v.Power
	}
	switch v.Status {
	case "SHUTOFF", "SHELVED_OFFLOADED", "SOFT_DELETED":
		return PowerShutdown
	case "PAUSED":
		return PowerPaused
	case "SUSPENDED":
		return PowerSuspended
	case "BUILD":
		return PowerNoState
	}
	return PowerRunning
}

// ComputeService is one row of Nova's os-services list (a nova-compute
// service unless Binary says otherwise).
type ComputeService struct {
	ID     int
	Host   string
	Binary string // default "nova-compute"
	// Disabled is status "disabled" (scheduling off); it says nothing
	// about whether the host runs.
	Disabled bool
	// Down is state "down": the service missed its heartbeats.
	Down bool
	// ForcedDown is forced_down, an operator's word that the host is
	// fenced; Nova then reports state "down" too.
	ForcedDown bool
	Zone       string
}

// Neutron is a real Neutron under the simulated Nova (UseNeutron). Nova
// then reads a server's addresses and security groups from that Neutron's
// ports (device_id == server ID) and applies addSecurityGroup to them, as
// Nova does; the simulator's own ports and groups are left out of Nova's
// answers. Errors become Nova's 500. Each Nova request reads the ports
// and groups once.
type Neutron interface {
	// Ports returns every port Nova may show (Nova picks a server's by
	// device_id), with their security group IDs.
	Ports() ([]Port, error)
	// SecurityGroups returns the security groups Nova may resolve a name
	// or ID against.
	SecurityGroups() ([]SecurityGroup, error)
	// SetSecurityGroups replaces a port's security groups (Nova's port
	// update on addSecurityGroup).
	SetSecurityGroups(port string, groups []string) error
}

// InstanceAction is one entry of a server's os-instance-actions.
type InstanceAction struct {
	Action    string
	RequestID string
	Start     time.Time
}

// Credentials the simulator's Keystone accepts.
const (
	AppCredID     = "sim-app-cred-id"
	AppCredSecret = "sim-app-cred-secret"
	// AdminAppCredID and AdminAppCredSecret get a token with the admin
	// role: it sees OS-EXT-SRV-ATTR:host and may list os-services.
	AdminAppCredID     = "sim-admin-app-cred-id"
	AdminAppCredSecret = "sim-admin-app-cred-secret"
	Region             = "RegionOne"
)

// Sim is the simulated cloud. All methods are safe for concurrent use.
type Sim struct {
	srv *httptest.Server
	// Now stamps created and reboot times; set before use (default time.Now).
	Now func() time.Time

	mu        sync.Mutex
	maxRoutes int
	tokens    map[string]bool // token -> admin
	routers   map[string]*Router
	ports     map[string]*Port
	groups    map[string]*SecurityGroup
	servers   map[string]*Server
	actions   map[string][]InstanceAction
	services  map[int]*ComputeService
	writes    int
	replaces  int
	// maxLimit is Nova's [api]max_limit, the most servers one list page
	// holds; downCell marks servers whose cell is down; pageFault fails
	// server list requests that carry a marker.
	maxLimit  int
	downCell  map[string]bool
	pageFault bool
	// underlay, when set, is the real Neutron whose ports Nova shows
	// and changes.
	underlay Neutron
	// snap is the underlay's ports and groups as read by the current
	// Nova request (s.mu held throughout); nil outside one.
	snap *snapshot
}

type snapshot struct {
	ports  []Port
	groups map[string]SecurityGroup
}

// Start serves a new empty simulator on 127.0.0.1 until Close.
func Start() *Sim {
	s := &Sim{Now: time.Now, maxRoutes: 30, tokens: map[string]bool{}, routers: map[string]*Router{},
		ports: map[string]*Port{}, groups: map[string]*SecurityGroup{}, servers: map[string]*Server{},
		actions: map[string][]InstanceAction{}, services: map[int]*ComputeService{}, maxLimit: 1000, downCell: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close stops the server.
func (s *Sim) Close() { s.srv.Close() }

// AuthURL is Keystone's v3 endpoint (ends in /v3/, so gophercloud skips
// version discovery).
func (s *Sim) AuthURL() string { return s.srv.URL + "/identity/v3/" }

// SetMaxRoutes sets Neutron's max_routes (default 30, as Neutron).
func (s *Sim) SetMaxRoutes(n int) { s.mu.Lock(); s.maxRoutes = n; s.mu.Unlock() }

// SetMaxLimit sets Nova's [api]max_limit (default 1000): a server list
// returns at most n servers and, when it returns exactly n, a
// servers_links "next" link carrying limit and marker, as Nova does.
func (s *Sim) SetMaxLimit(n int) { s.mu.Lock(); s.maxLimit = n; s.mu.Unlock() }

// SetCellDown puts server id in a cell that is down (or back up). Nova then
// lists it as its down-cell API does: from microversion 2.69 on, and only
// for a list with no filter, paging or sorting parameter, as a minimal
// record (id, status UNKNOWN, tenant_id, created, links); otherwise it is
// skipped without a word (list_records_by_skipping_down_cells, default
// true). GET /servers/{id} of such a server is not modelled.
func (s *Sim) SetCellDown(id string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.downCell[id] = down
}

// UseNeutron puts the simulated Nova on a real Neutron (see Neutron).
func (s *Sim) UseNeutron(n Neutron) { s.mu.Lock(); s.underlay = n; s.mu.Unlock() }

// serverPorts returns the server's ports (sorted by ID) and the security
// groups by ID, from the real Neutron when one is set, else the
// simulator's own. Call with s.mu held.
func (s *Sim) serverPorts(server string) ([]Port, map[string]SecurityGroup, error) {
	groups := map[string]SecurityGroup{}
	if s.underlay != nil {
		if s.snap == nil {
			ps, err := s.underlay.Ports()
			if err != nil {
				return nil, nil, err
			}
			gs, err := s.underlay.SecurityGroups()
			if err != nil {
				return nil, nil, err
			}
			for _, g := range gs {
				groups[g.ID] = g
			}
			slices.SortFunc(ps, func(a, b Port) int { return strings.Compare(a.ID, b.ID) })
			s.snap = &snapshot{ports: ps, groups: groups}
		}
		var out []Port
		for _, p := range s.snap.ports {
			if p.DeviceID == server {
				out = append(out, p)
			}
		}
		return out, s.snap.groups, nil
	}
	var out []Port
	for _, id := range sortedKeys(s.ports) {
		if p := s.ports[id]; p.DeviceID == server {
			out = append(out, *p)
		}
	}
	for id, g := range s.groups {
		groups[id] = *g
	}
	return out, groups, nil
}

// SetPageFault makes every server list request that carries a marker (a
// page after the first) fail with 500, as an API worker dying in the middle
// of a paged listing would.
func (s *Sim) SetPageFault(on bool) { s.mu.Lock(); s.pageFault = on; s.mu.Unlock() }

// Writes counts the requests that changed state.
func (s *Sim) Writes() int { s.mu.Lock(); defer s.mu.Unlock(); return s.writes }

// RouteReplaces counts PUT /routers/{id} requests that set routes.
func (s *Sim) RouteReplaces() int { s.mu.Lock(); defer s.mu.Unlock(); return s.replaces }

// PutRouter adds or replaces a router.
func (s *Sim) PutRouter(r Router) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Routes = slices.Clone(r.Routes)
	s.routers[r.ID] = &r
}

// Router returns a copy of the router.
func (s *Sim) Router(id string) Router {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := *s.routers[id]
	r.Routes = slices.Clone(r.Routes)
	return r
}

// PutPort adds or replaces a port.
func (s *Sim) PutPort(p Port) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.SecurityGroups = slices.Clone(p.SecurityGroups)
	p.AllowedAddressPairs = slices.Clone(p.AllowedAddressPairs)
	s.ports[p.ID] = &p
}

// Port returns a copy of the port.
func (s *Sim) Port(id string) Port {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := *s.ports[id]
	p.SecurityGroups = slices.Clone(p.SecurityGroups)
	p.AllowedAddressPairs = slices.Clone(p.AllowedAddressPairs)
	return p
}

// TouchPort bumps a port's revision, as a concurrent writer would.
func (s *Sim) TouchPort(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ports[id].Revision++
}

// PutSecurityGroup adds a security group.
func (s *Sim) PutSecurityGroup(g SecurityGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[g.ID] = &g
}

// PutServer adds or replaces a server, recording a "create" action.
func (s *Sim) PutServer(v Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v.Metadata = cloneMap(v.Metadata)
	if _, ok := s.servers[v.ID]; !ok {
		s.actions[v.ID] = []InstanceAction{{Action: "create", RequestID: newID("req-"), Start: v.Created}}
	}
	s.servers[v.ID] = &v
}

// SetStatus sets a server's status.
func (s *Sim) SetStatus(id, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers[id].Status = status
}

// SetPower sets a server's power state.
func (s *Sim) SetPower(id string, p PowerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers[id].Power = p
}

// PutService adds or replaces a compute service (by ID).
func (s *Sim) PutService(c ComputeService) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Binary == "" {
		c.Binary = "nova-compute"
	}
	s.services[c.ID] = &c
}

// DeleteServer removes a server (its ports stay, as stale ports do).
func (s *Sim) DeleteServer(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.servers, id)
}

// Actions returns a server's instance actions, oldest first.
func (s *Sim) Actions(id string) []InstanceAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.actions[id])
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func newID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// neutronErr writes Neutron's error shape.
func neutronErr(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"NeutronError": map[string]any{"type": typ, "message": msg, "detail": ""}})
}

// novaErr writes Nova's error shape ({"itemNotFound": {...}} and so on).
func novaErr(w http.ResponseWriter, code int, msg string) {
	key := map[int]string{400: "badRequest", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest"}[code]
	if key == "" {
		key = "computeFault"
	}
	writeJSON(w, code, map[string]any{key: map[string]any{"code": code, "message": msg}})
}

func (s *Sim) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/identity/v3/auth/tokens" && r.Method == http.MethodPost:
		s.token(w, r)
		return
	case p == "/network/" && r.Method == http.MethodGet:
		// Neutron's unauthenticated version document (gophercloud
		// discovers the version of an unversioned endpoint).
		writeJSON(w, http.StatusOK, map[string]any{"versions": []map[string]any{{"id": "v2.0", "status": "CURRENT",
			"links": []map[string]any{{"href": s.srv.URL + "/network/v2.0/", "rel": "self"}}}}})
		return
	case strings.HasPrefix(p, "/network/v2.0/"), strings.HasPrefix(p, "/compute/v2.1/"):
	default:
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	admin, ok := s.tokens[r.Header.Get("X-Auth-Token")]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}})
		return
	}
	if rest, ok := strings.CutPrefix(p, "/network/v2.0/"); ok {
		s.neutron(w, r, strings.Split(strings.TrimSuffix(rest, "/"), "/"))
		return
	}
	s.nova(w, r, strings.Split(strings.TrimSuffix(strings.TrimPrefix(p, "/compute/v2.1/"), "/"), "/"), admin)
}

func (s *Sim) token(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Auth struct {
			Identity struct {
				Methods []string `json:"methods"`
				AppCred struct {
					ID     string `json:"id"`
					Secret string `json:"secret"`
				} `json:"application_credential"`
			} `json:"identity"`
		} `json:"auth"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "title": "Bad Request", "message": "malformed JSON"}})
		return
	}
	ac := req.Auth.Identity.AppCred
	admin := ac.ID == AdminAppCredID && ac.Secret == AdminAppCredSecret
	if !slices.Contains(req.Auth.Identity.Methods, "application_credential") || (!admin && (ac.ID != AppCredID || ac.Secret != AppCredSecret)) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}})
		return
	}
	tok := newID("gAAAA")
	s.mu.Lock()
	s.tokens[tok] = admin
	s.mu.Unlock()
	roles := []map[string]any{{"id": "r1", "name": "member"}}
	if admin {
		roles = append(roles, map[string]any{"id": "r0", "name": "admin"})
	}
	ep := func(id, url string) []map[string]any {
		return []map[string]any{{"id": id, "interface": "public", "region": Region, "region_id": Region, "url": url}}
	}
	now := time.Now().UTC()
	w.Header().Set("X-Subject-Token", tok)
	writeJSON(w, http.StatusCreated, map[string]any{"token": map[string]any{
		"methods":                []string{"application_credential"},
		"expires_at":             now.Add(time.Hour).Format("2006-01-02T15:04:05.000000Z"),
		"issued_at":              now.Format("2006-01-02T15:04:05.000000Z"),
		"user":                   map[string]any{"id": "u1", "name": "drwatch", "domain": map[string]any{"id": "default", "name": "Default"}},
		"project":                map[string]any{"id": "p1", "name": "cluster", "domain": map[string]any{"id": "default", "name": "Default"}},
		"roles":                  roles,
		"application_credential": map[string]any{"id": ac.ID, "name": "drwatch", "restricted": true},
		"catalog": []map[string]any{
			{"id": "s-net", "type": "network", "name": "neutron", "endpoints": ep("e-net", s.srv.URL+"/network/")},
			{"id": "s-comp", "type": "compute", "name": "nova", "endpoints": ep("e-comp", s.srv.URL+"/compute/v2.1/")},
		},
	}})
}

func routerJSON(rt *Router) map[string]any {
	routes := rt.Routes
	if routes == nil {
		routes = []Route{}
	}
	return map[string]any{"id": rt.ID, "name": rt.Name, "status": "ACTIVE", "admin_state_up": true,
		"tenant_id": "p1", "project_id": "p1", "routes": routes, "revision_number": rt.Revision,
		"external_gateway_info": nil, "distributed": false, "ha": false, "tags": []string{}}
}

func portJSON(p *Port) map[string]any {
	fixed := []map[string]any{}
	for _, ip := range p.FixedIPs {
		fixed = append(fixed, map[string]any{"subnet_id": p.NetworkID + "-subnet", "ip_address": ip})
	}
	pairs := []map[string]any{}
	for _, ap := range p.AllowedAddressPairs {
		mac := ap.MACAddress
		if mac == "" {
			mac = p.MACAddress
		}
		pairs = append(pairs, map[string]any{"ip_address": ap.IPAddress, "mac_address": mac})
	}
	groups := p.SecurityGroups
	if groups == nil {
		groups = []string{}
	}
	return map[string]any{"id": p.ID, "name": p.Name, "network_id": p.NetworkID, "device_id": p.DeviceID,
		"device_owner": "compute:nova", "mac_address": p.MACAddress, "admin_state_up": true, "status": "ACTIVE",
		"tenant_id": "p1", "project_id": "p1", "fixed_ips": fixed, "security_groups": groups,
		"allowed_address_pairs": pairs, "revision_number": p.Revision, "port_security_enabled": true, "tags": []string{}}
}

// neutron serves /v2.0/<parts...>.
func (s *Sim) neutron(w http.ResponseWriter, r *http.Request, parts []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	switch {
	case parts[0] == "routers" && len(parts) == 2 && r.Method == http.MethodGet:
		rt, ok := s.routers[parts[1]]
		if !ok {
			neutronErr(w, 404, "RouterNotFound", fmt.Sprintf("Router %s could not be found", parts[1]))
			return
		}
		writeJSON(w, 200, map[string]any{"router": routerJSON(rt)})
	case parts[0] == "routers" && len(parts) >= 2 && r.Method == http.MethodPut:
		rt, ok := s.routers[parts[1]]
		if !ok {
			neutronErr(w, 404, "RouterNotFound", fmt.Sprintf("Router %s could not be found", parts[1]))
			return
		}
		var body struct {
			Router struct {
				Name   *string  `json:"name"`
				Routes *[]Route `json:"routes"`
			} `json:"router"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			neutronErr(w, 400, "HTTPBadRequest", "malformed JSON")
			return
		}
		if len(parts) == 2 {
			if !s.ifMatch(w, r, rt.Revision) {
				return
			}
			if body.Router.Routes != nil {
				if len(*body.Router.Routes) > s.maxRoutes {
					neutronErr(w, 400, "RoutesExhausted", fmt.Sprintf("Unable to complete operation for %s. The number of routes exceeds the maximum %d.", rt.ID, s.maxRoutes))
					return
				}
				rt.Routes = slices.Clone(*body.Router.Routes)
				s.replaces++
			}
			if body.Router.Name != nil {
				rt.Name = *body.Router.Name
			}
			rt.Revision++
			s.writes++
			writeJSON(w, 200, map[string]any{"router": routerJSON(rt)})
			return
		}
		if len(parts) != 3 || (parts[2] != "add_extraroutes" && parts[2] != "remove_extraroutes") || body.Router.Routes == nil {
			neutronErr(w, 400, "HTTPBadRequest", "unsupported router action or missing routes")
			return
		}
		for _, rr := range *body.Router.Routes {
			if rr.Destination == "" || rr.NextHop == "" {
				neutronErr(w, 400, "HTTPBadRequest", "Invalid input for routes: destination and nexthop are required")
				return
			}
		}
		next := slices.Clone(rt.Routes)
		for _, rr := range *body.Router.Routes {
			i := slices.Index(next, rr)
			if parts[2] == "add_extraroutes" && i < 0 {
				next = append(next, rr)
			}
			if parts[2] == "remove_extraroutes" && i >= 0 {
				next = slices.Delete(next, i, i+1)
			}
		}
		if len(next) > s.maxRoutes {
			neutronErr(w, 400, "RoutesExhausted", fmt.Sprintf("Unable to complete operation for %s. The number of routes exceeds the maximum %d.", rt.ID, s.maxRoutes))
			return
		}
		if !slices.Equal(next, rt.Routes) {
			rt.Routes = next
			rt.Revision++
			s.writes++
		}
		writeJSON(w, 200, map[string]any{"router": routerJSON(rt)})
	case parts[0] == "ports" && len(parts) == 1 && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, id := range sortedKeys(s.ports) {
			p := s.ports[id]
			if match(q, "device_id", p.DeviceID) && match(q, "network_id", p.NetworkID) && match(q, "id", p.ID) {
				out = append(out, portJSON(p))
			}
		}
		writeJSON(w, 200, map[string]any{"ports": out})
	case parts[0] == "ports" && len(parts) == 2 && (r.Method == http.MethodGet || r.Method == http.MethodPut):
		p, ok := s.ports[parts[1]]
		if !ok {
			neutronErr(w, 404, "PortNotFound", fmt.Sprintf("Port %s could not be found.", parts[1]))
			return
		}
		if r.Method == http.MethodGet {
			writeJSON(w, 200, map[string]any{"port": portJSON(p)})
			return
		}
		var body struct {
			Port struct {
				Name                *string        `json:"name"`
				SecurityGroups      *[]string      `json:"security_groups"`
				AllowedAddressPairs *[]AddressPair `json:"allowed_address_pairs"`
			} `json:"port"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			neutronErr(w, 400, "HTTPBadRequest", "malformed JSON")
			return
		}
		if !s.ifMatch(w, r, p.Revision) {
			return
		}
		if sg := body.Port.SecurityGroups; sg != nil {
			for _, g := range *sg {
				if s.groups[g] == nil {
					neutronErr(w, 404, "SecurityGroupNotFound", fmt.Sprintf("Security group %s does not exist", g))
					return
				}
			}
			p.SecurityGroups = slices.Clone(*sg)
		}
		if ap := body.Port.AllowedAddressPairs; ap != nil {
			for _, a := range *ap {
				if a.IPAddress == "" {
					neutronErr(w, 400, "HTTPBadRequest", "Invalid input for allowed_address_pairs: ip_address is required")
					return
				}
			}
			p.AllowedAddressPairs = slices.Clone(*ap)
		}
		if body.Port.Name != nil {
			p.Name = *body.Port.Name
		}
		p.Revision++
		s.writes++
		writeJSON(w, 200, map[string]any{"port": portJSON(p)})
	case parts[0] == "security-groups" && len(parts) == 1 && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, id := range sortedKeys(s.groups) {
			g := s.groups[id]
			if match(q, "name", g.Name) && match(q, "id", g.ID) {
				out = append(out, map[string]any{"id": g.ID, "name": g.Name, "description": "", "tenant_id": "p1",
					"project_id": "p1", "security_group_rules": []any{}, "revision_number": 1, "stateful": true, "tags": []string{}})
			}
		}
		writeJSON(w, 200, map[string]any{"security_groups": out})
	default:
		neutronErr(w, 404, "HTTPNotFound", "The resource could not be found.")
	}
}

// ifMatch enforces If-Match: revision_number=N (Neutron's
// standard-attr-revisions); a mismatch is 412 like Neutron's
// RevisionNumberConstraintFailed. It reports whether to go on.
func (s *Sim) ifMatch(w http.ResponseWriter, r *http.Request, current int) bool {
	h := r.Header.Get("If-Match")
	if h == "" {
		return true
	}
	v, ok := strings.CutPrefix(h, "revision_number=")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		neutronErr(w, 400, "HTTPBadRequest", "If-Match header without revision_number=N")
		return false
	}
	if n != current {
		neutronErr(w, http.StatusPreconditionFailed, "HTTPPreconditionFailed",
			fmt.Sprintf("Constrained to %d, but current revision is %d", n, current))
		return false
	}
	return true
}

func match(q map[string][]string, key, val string) bool {
	vs, ok := q[key]
	return !ok || slices.Contains(vs, val)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func novaTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func (s *Sim) serverJSON(v *Server, admin bool) (map[string]any, error) {
	addrs := []map[string]any{}
	groups := []map[string]any{}
	seen := map[string]bool{}
	ports, known, err := s.serverPorts(v.ID)
	if err != nil {
		return nil, err
	}
	for _, p := range ports {
		for _, ip := range p.FixedIPs {
			ver := 4
			if strings.Contains(ip, ":") {
				ver = 6
			}
			addrs = append(addrs, map[string]any{"addr": ip, "version": ver, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": p.MACAddress})
		}
		for _, g := range p.SecurityGroups {
			if sg, ok := known[g]; ok && !seen[sg.Name] {
				seen[sg.Name] = true
				groups = append(groups, map[string]any{"name": sg.Name})
			}
		}
	}
	netName := v.Network
	if netName == "" {
		netName = "private"
	}
	launched := any(nil)
	if !v.LaunchedAt.IsZero() {
		launched = v.LaunchedAt.UTC().Format("2006-01-02T15:04:05.000000")
	}
	out := map[string]any{"id": v.ID, "name": v.Name, "status": v.Status, "tenant_id": "p1", "user_id": "u1",
		"metadata": v.Metadata, "created": novaTime(v.Created), "updated": novaTime(v.Created),
		"addresses": map[string]any{netName: addrs}, "security_groups": groups, "hostId": "h1",
		"flavor": map[string]any{"id": "f1"}, "image": map[string]any{"id": "i1"}, "links": []any{},
		"OS-EXT-STS:vm_state": strings.ToLower(v.Status), "OS-EXT-STS:task_state": nil,
		"OS-SRV-USG:launched_at": launched, "OS-SRV-USG:terminated_at": nil}
	if p := v.power(); p != PowerOmitted {
		out["OS-EXT-STS:power_state"] = powerCodes[p]
	}
	if admin {
		// Nova's default policy shows the extended server attributes
		// to admins only; other tokens get no such keys at all.
		host := v.Host
		if host == "" {
			host = "compute-1"
		}
		out["OS-EXT-SRV-ATTR:host"] = host
		out["OS-EXT-SRV-ATTR:hypervisor_hostname"] = host + ".example"
		out["OS-EXT-SRV-ATTR:instance_name"] = "instance-" + v.ID
	}
	return out, nil
}

// osServices serves GET /os-services (admin only, as Nova's default
// policy): filters binary and host; forced_down from microversion 2.11.
func (s *Sim) osServices(w http.ResponseWriter, r *http.Request, admin bool) {
	if r.Method != http.MethodGet {
		novaErr(w, 404, "The resource could not be found.")
		return
	}
	if !admin {
		novaErr(w, 403, "Policy doesn't allow os_compute_api:os-services:list to be performed.")
		return
	}
	q := r.URL.Query()
	forced := novaMicroversion(r) >= 11
	ids := make([]int, 0, len(s.services))
	for id := range s.services {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := []map[string]any{}
	for _, id := range ids {
		c := s.services[id]
		if !match(q, "binary", c.Binary) || !match(q, "host", c.Host) {
			continue
		}
		status, state := "enabled", "up"
		if c.Disabled {
			status = "disabled"
		}
		if c.Down || c.ForcedDown {
			state = "down"
		}
		zone := c.Zone
		if zone == "" {
			zone = "nova"
		}
		row := map[string]any{"id": c.ID, "binary": c.Binary, "host": c.Host, "zone": zone, "status": status,
			"state": state, "disabled_reason": nil, "updated_at": "2026-03-01T12:00:00.000000"}
		if forced {
			row["forced_down"] = c.ForcedDown
		}
		out = append(out, row)
	}
	writeJSON(w, 200, map[string]any{"services": out})
}

// novaMicroversion is the minor version of the compute microversion the
// request asks for (X-OpenStack-Nova-API-Version or OpenStack-API-Version:
// compute 2.N); 1 without one.
func novaMicroversion(r *http.Request) int {
	v := r.Header.Get("X-OpenStack-Nova-API-Version")
	if h, ok := strings.CutPrefix(r.Header.Get("OpenStack-API-Version"), "compute "); ok {
		v = h
	}
	if v == "latest" {
		return 1 << 30
	}
	minor, ok := strings.CutPrefix(strings.TrimSpace(v), "2.")
	n, err := strconv.Atoi(minor)
	if !ok || err != nil {
		return 1
	}
	return n
}

// nova serves /v2.1/<parts...>.
func (s *Sim) nova(w http.ResponseWriter, r *http.Request, parts []string, admin bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.snap = nil }()
	if len(parts) == 1 && parts[0] == "os-services" {
		s.osServices(w, r, admin)
		return
	}
	if parts[0] != "servers" {
		novaErr(w, 404, "The resource could not be found.")
		return
	}
	if len(parts) == 1 || (len(parts) == 2 && parts[1] == "detail") {
		if r.Method != http.MethodGet {
			novaErr(w, 404, "The resource could not be found.")
			return
		}
		q := r.URL.Query()
		var re *regexp.Regexp
		if n := q.Get("name"); n != "" {
			var err error
			if re, err = regexp.Compile(n); err != nil {
				novaErr(w, 400, "Invalid name filter")
				return
			}
		}
		marker := q.Get("marker")
		if marker != "" && s.pageFault {
			novaErr(w, 500, "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible.")
			return
		}
		limit := s.maxLimit
		if l := q.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 0 {
				novaErr(w, 400, "limit param must be an integer")
				return
			}
			limit = min(n, s.maxLimit)
		}
		// nova/api/openstack/compute/servers.py _is_cell_down_supported:
		// minimal records for down cells only from 2.69 on, and only
		// without filters, paging or sorting (all_tenants aside).
		plain := true
		for k := range q {
			if k != "all_tenants" {
				plain = false
			}
		}
		cellDownSupport := plain && novaMicroversion(r) >= 69
		out := []map[string]any{}
		ids := sortedKeys(s.servers)
		if marker != "" {
			i := slices.Index(ids, marker)
			if i < 0 {
				novaErr(w, 400, fmt.Sprintf("marker [%s] not found", marker))
				return
			}
			ids = ids[i+1:]
		}
		last := ""
		for _, id := range ids {
			if len(out) == limit {
				break
			}
			v := s.servers[id]
			if s.downCell[id] {
				if cellDownSupport {
					out = append(out, map[string]any{"id": v.ID, "status": "UNKNOWN", "tenant_id": "p1",
						"created": novaTime(v.Created), "links": []any{}})
					last = id
				}
				continue
			}
			if (re != nil && !re.MatchString(v.Name)) || !match(q, "status", v.Status) {
				continue
			}
			j, err := s.serverJSON(v, admin)
			if err != nil {
				novaErr(w, 500, "Neutron: "+err.Error())
				return
			}
			out = append(out, j)
			last = id
		}
		body := map[string]any{"servers": out}
		if len(out) == limit && last != "" {
			next := url.Values{}
			for k, vs := range q {
				next[k] = vs
			}
			next.Set("limit", strconv.Itoa(limit))
			next.Set("marker", last)
			body["servers_links"] = []map[string]any{{"rel": "next",
				"href": s.srv.URL + "/compute/v2.1/" + strings.Join(parts, "/") + "?" + next.Encode()}}
		}
		writeJSON(w, 200, body)
		return
	}
	v, ok := s.servers[parts[1]]
	if !ok {
		novaErr(w, 404, fmt.Sprintf("Instance %s could not be found.", parts[1]))
		return
	}
	switch {
	case len(parts) == 2 && r.Method == http.MethodGet:
		j, err := s.serverJSON(v, admin)
		if err != nil {
			novaErr(w, 500, "Neutron: "+err.Error())
			return
		}
		writeJSON(w, 200, map[string]any{"server": j})
	case len(parts) == 3 && parts[2] == "os-instance-actions" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, a := range s.actions[v.ID] {
			out = append(out, map[string]any{"action": a.Action, "instance_uuid": v.ID, "request_id": a.RequestID,
				"start_time": a.Start.UTC().Format("2006-01-02T15:04:05.000000"), "user_id": "u1", "project_id": "p1", "message": nil})
		}
		// Nova lists the newest first.
		slices.Reverse(out)
		writeJSON(w, 200, map[string]any{"instanceActions": out})
	case len(parts) == 3 && parts[2] == "action" && r.Method == http.MethodPost:
		var body struct {
			Reboot *struct {
				Type string `json:"type"`
			} `json:"reboot"`
			AddSecurityGroup *struct {
				Name string `json:"name"`
			} `json:"addSecurityGroup"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			novaErr(w, 400, "Malformed request body")
			return
		}
		switch {
		case body.Reboot != nil:
			typ := body.Reboot.Type
			if typ != "SOFT" && typ != "HARD" {
				novaErr(w, 400, "Invalid input for field/attribute type.")
				return
			}
			// Nova: SOFT needs ACTIVE; HARD also works from SHUTOFF and ERROR.
			if v.Status != "ACTIVE" && (typ == "SOFT" || (v.Status != "SHUTOFF" && v.Status != "ERROR")) {
				novaErr(w, 409, fmt.Sprintf("Cannot 'reboot' instance %s while it is in vm_state %s", v.ID, strings.ToLower(v.Status)))
				return
			}
			v.Status = "ACTIVE"
			s.actions[v.ID] = append(s.actions[v.ID], InstanceAction{Action: "reboot", RequestID: newID("req-"), Start: s.Now()})
			s.writes++
			w.WriteHeader(http.StatusAccepted)
		case body.AddSecurityGroup != nil:
			ports, known, err := s.serverPorts(v.ID)
			if err != nil {
				novaErr(w, 500, "Neutron: "+err.Error())
				return
			}
			var gid string
			for _, id := range sortedKeys(known) {
				if known[id].Name == body.AddSecurityGroup.Name || id == body.AddSecurityGroup.Name {
					gid = id
					break
				}
			}
			if gid == "" {
				novaErr(w, 404, fmt.Sprintf("Security group %s not found for project p1.", body.AddSecurityGroup.Name))
				return
			}
			for _, p := range ports {
				if slices.Contains(p.SecurityGroups, gid) {
					continue
				}
				if s.underlay != nil {
					if err := s.underlay.SetSecurityGroups(p.ID, append(slices.Clone(p.SecurityGroups), gid)); err != nil {
						novaErr(w, 500, "Neutron: "+err.Error())
						return
					}
					continue
				}
				sp := s.ports[p.ID]
				sp.SecurityGroups = append(sp.SecurityGroups, gid)
				sp.Revision++
			}
			if len(ports) == 0 {
				novaErr(w, 400, "Unable to add security group: the instance has no ports")
				return
			}
			s.writes++
			w.WriteHeader(http.StatusAccepted)
		default:
			novaErr(w, 400, "Unsupported server action")
		}
	default:
		novaErr(w, 404, "The resource could not be found.")
	}
}
