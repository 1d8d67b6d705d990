package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/caddytest"
)

// RegionHost is the name the two site Caddys of a world of groups serve:
// a region-level service (the region's Kubernetes API, say) that every
// group names as its probe "region", so that the watchers run it once per
// round for all of them.
var RegionHost = "region." + strings.TrimSuffix(Zone, ".")

// GroupOptions make a world guard failover groups in Zone instead of the
// one pair of lms records (no top-level sites or dns.records, unless
// WithDefault), and per group a record of its own name, its own fence
// (_drwatch-NAME), its own https probes of its own host name at each site,
// and the shared probe "region" of the site's region Caddy (World.Region).
type GroupOptions struct {
	// Names are the groups, in the config's order.
	Names []string
	// Probes is how many critical https probes of its own host name each
	// group runs per site (default 1).
	Probes int
	// CaddiesPerSite is how many Caddy processes per site serve the
	// groups' host names, group i on Caddy i mod CaddiesPerSite (0: one
	// per group). Each group has its own fault proxies in front of them
	// either way, so it can fail alone.
	CaddiesPerSite int
	// WithDefault keeps the one pair of lms records beside the groups, as
	// the default group (top-level sites and dns.records), on the sites'
	// Caddys, which serve RegionHost too. A node whose config leaves the
	// groups out (Node.WithoutGroups) then guards that pair alone, as an
	// earlier release's config of the same trio would.
	WithDefault bool
}

func (g GroupOptions) enabled() bool { return len(g.Names) > 0 }

// hasDefault reports whether a world's configs have the default group's
// top-level sites and dns.records.
func (g GroupOptions) hasDefault() bool { return !g.enabled() || g.WithDefault }

// Group is one failover group of a world.
type Group struct {
	Name string
	// Record and Fence are the absolute names of its A record and of its
	// fence TXT record.
	Record, Fence string
	// IPs are the record's values while each site is active.
	IPs map[failover.Site]string
	// Sites are its Caddy per site (shared with other groups when
	// CaddiesPerSite is set) behind proxies of its own.
	Sites map[failover.Site]*Site
}

// groupIP is the address group i's record carries while site is active:
// data in DNS answers only, nothing dials it.
func groupIP(site failover.Site, i int) string {
	net := 11
	if site == failover.Backup {
		net = 21
	}
	return fmt.Sprintf("127.0.%d.%d", net, i+1)
}

// groupHost is the host name group name's probes ask for.
func groupHost(name string) string { return name + "." + strings.TrimSuffix(Zone, ".") }

// startGroups starts the groups' Caddys, CaddiesPerSite per site (or one
// per group), each serving the host names of its groups, and gives every
// group its own proxies in front of its Caddy.
func (w *World) startGroups() {
	o := w.Opts.Groups
	n := o.CaddiesPerSite
	if n <= 0 || n > len(o.Names) {
		n = len(o.Names)
	}
	for i, name := range o.Names {
		w.Groups = append(w.Groups, &Group{Name: name, Record: name + "." + Zone, Fence: "_drwatch-" + name + "." + Zone,
			IPs:   map[failover.Site]string{failover.Primary: groupIP(failover.Primary, i), failover.Backup: groupIP(failover.Backup, i)},
			Sites: map[failover.Site]*Site{}})
	}
	for _, site := range []failover.Site{failover.Primary, failover.Backup} {
		for k := range n {
			var hosts []string
			for i := k; i < len(o.Names); i += n {
				hosts = append(hosts, groupHost(o.Names[i]))
			}
			label := fmt.Sprintf("%s-%d", site, k)
			if n == len(o.Names) {
				label = o.Names[k] + "-" + string(site)
			}
			cdir := w.path("caddy-" + label)
			must(w.T, os.MkdirAll(cdir, 0o755))
			c := caddytest.Start(w.T, caddytest.Options{Name: label, Hosts: hosts, Dir: cdir})
			for i := k; i < len(o.Names); i += n {
				w.Groups[i].Sites[site] = w.newSite(site, groupIP(site, i), c)
			}
		}
	}
}

// drillRecord is the drill's canary in a world of groups without a
// default group, whose first record it could mirror by default.
func (w *World) drillRecord() string {
	if w.Opts.Groups.hasDefault() {
		return ""
	}
	return "drwatch-drill." + w.Opts.Groups.Names[0]
}

// groupConfig is one group as node n's config names it.
type groupConfig struct {
	Name, PrimaryIP, BackupIP string
	Sites                     []groupSiteConfig
}

type groupSiteConfig struct {
	Name   failover.Site
	Probes []groupProbeConfig
}

type groupProbeConfig struct{ Name, URL, ConnectTo, CA string }

// groupConfigs are the groups of node n's config: each probes its own
// host name Probes times per site through n's proxies, and the region.
// A node WithoutGroups has none.
func (w *World) groupConfigs(n *Node) []groupConfig {
	if n.WithoutGroups {
		return nil
	}
	var out []groupConfig
	for _, g := range w.Groups {
		gc := groupConfig{Name: g.Name, PrimaryIP: g.IPs[failover.Primary], BackupIP: g.IPs[failover.Backup]}
		for _, s := range []failover.Site{failover.Primary, failover.Backup} {
			sc := groupSiteConfig{Name: s}
			site := g.Sites[s]
			for k := range max(w.Opts.Groups.Probes, 1) {
				sc.Probes = append(sc.Probes, groupProbeConfig{Name: g.Name + "-" + strconv.Itoa(k+1), URL: "https://" + groupHost(g.Name) + "/heartbeat",
					ConnectTo: site.Proxies[n.ID].Addr(), CA: site.Caddy.CAFile})
			}
			region := w.Region[s]
			sc.Probes = append(sc.Probes, groupProbeConfig{Name: "region", URL: "https://" + RegionHost + "/heartbeat",
				ConnectTo: region.Proxies[n.ID].Addr(), CA: region.Caddy.CAFile})
			gc.Sites = append(gc.Sites, sc)
		}
		out = append(out, gc)
	}
	return out
}

// Group returns the world's group name.
func (w *World) Group(name string) *Group {
	i := slices.IndexFunc(w.Groups, func(g *Group) bool { return g.Name == name })
	if i < 0 {
		w.T.Fatalf("no group %q", name)
	}
	return w.Groups[i]
}

// GroupAnswer is BIND's A answer for g's record as one string.
func (w *World) GroupAnswer(g *Group) string {
	a, err := w.Lookup(g.Record)
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.Join(a, ",")
}

// GroupFence returns g's fence TXT text at BIND ("" when none, as before
// the group's first decision).
func (w *World) GroupFence(g *Group) (string, error) {
	f, err := w.txt(g.Fence)
	if errors.Is(err, errNXDomain) {
		return "", nil
	}
	return f, err
}

// GroupStatus reads GET /api/v1/status?group=NAME from n.
func (w *World) GroupStatus(n *Node, group string) (api.Status, error) {
	var st api.Status
	err := w.getJSON(n, "/api/v1/status?group="+url.QueryEscape(group), &st)
	return st, err
}

// GroupHistory reads GET /api/v1/history?group=NAME from n: the group's
// entries and those of no group.
func (w *World) GroupHistory(n *Node, group string) ([]failover.Entry, error) {
	var h struct {
		History []failover.Entry `json:"history"`
	}
	err := w.getJSON(n, "/api/v1/history?group="+url.QueryEscape(group), &h)
	return h.History, err
}

// Overview reads GET /api/v1/groups from n.
func (w *World) Overview(n *Node) ([]failover.GroupSummary, error) {
	var o struct {
		Groups []failover.GroupSummary `json:"groups"`
	}
	err := w.getJSON(n, "/api/v1/groups", &o)
	return o.Groups, err
}

func (w *World) getJSON(n *Node, path string, v any) error {
	resp, err := w.client().Get(n.URL() + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: http %d", n.ID, path, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(v)
}

// groupsHealthy reports whether the leader's overview shows every group
// with both sites UP at quorum.
func (w *World) groupsHealthy() (bool, string) {
	l := w.Leader()
	if l == nil {
		return false, "no leader"
	}
	ov, err := w.Overview(l)
	if err != nil {
		return false, err.Error()
	}
	up := map[string]bool{}
	for _, g := range ov {
		up[g.Name] = g.Sites[failover.Primary].Verdict == failover.Up && g.Sites[failover.Backup].Verdict == failover.Up
	}
	for _, g := range w.Groups {
		if !up[g.Name] {
			return false, fmt.Sprintf("leader %s: group %s not UP on both sites: %+v", l.ID, g.Name, ov)
		}
	}
	return true, ""
}

// waitGroupsHealthy waits until a leader sees every group's sites UP.
func (w *World) waitGroupsHealthy(d time.Duration) {
	w.T.Helper()
	var why string
	if !Within(d, func() bool { ok, s := w.groupsHealthy(); why = s; return ok }) {
		w.T.Fatalf("timed out after %s waiting until a leader sees every group's sites UP at quorum: %s", d, why)
	}
}
