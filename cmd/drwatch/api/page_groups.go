package api

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// GroupReader is what the status page needs, besides ReadModel, to show
// failover groups: one group's view of the local replica. A backend
// without it serves the overview on "/" but no page per group.
type GroupReader interface {
	// GroupView is failover.Machine.GroupView: ok is false for a group
	// the policy does not have.
	GroupView(name string) (v failover.View, ok bool)
}

// GroupView implements GroupReader from the watcher's replica.
func (wb WatcherBackend) GroupView(name string) (failover.View, bool) {
	return wb.Machine().GroupView(name)
}

var _ GroupReader = WatcherBackend{}

// GroupDNSReader is a backend's DNS per failover group: what a group's
// status and page show in place of the default group's. A backend
// without it shows the default group's DNS check on every group's.
type GroupDNSReader interface {
	// GroupDNS is group name's last DNS check on this node, and its
	// reconciler's last pass (nil on a node that does not lead).
	GroupDNS(name string) (DNSCheck, *ReconcileStatus)
}

// withGroupDNS is st, a status showing failover group name, with that
// group's DNS check and reconcile pass when b reads them.
func withGroupDNS(b any, st Status, name string) Status {
	if gd, ok := b.(GroupDNSReader); ok {
		st.DNS, st.Reconcile = gd.GroupDNS(name)
	}
	return st
}

// groupsModel is the overview of every failover group above the detail
// of one. It is nil when the cluster has no group besides the default
// one, which leaves the page exactly as it was before groups.
type groupsModel struct {
	// Current is the group whose detail follows the overview.
	Current string
	// Title is the tab title's tail: "lms: backup · 3 of 50 on the backup".
	Title string
	// Summary counts what needs a look: "50 groups · 3 on the backup · …".
	Summary string
	Cells   []groupCell
}

// groupCell is one group at a glance, linking to its own page.
type groupCell struct {
	Name, Href  string
	ID          string
	Current     bool
	Active      string
	ActiveClass string
	// Class is the cell's frame: down (a failover is due or the active
	// site is DOWN), warn (held, or on the backup) or ok.
	Class string
	Chips []chip
	// Sites is each site's quorum verdict: "primary UP · backup UP".
	Sites string
}

type chip struct{ Label, Class string }

// groupPagePath is where failover group name's page is, relative to "/".
func groupPagePath(name string) string { return "groups/" + name }

// buildGroups is the overview of groups as the page at root shows it (root
// is the relative way back to "/"); pending holds each group's countdown
// the summaries only flag. current is the group the detail shows.
func buildGroups(groups []failover.GroupSummary, current, root string, pending map[string]*failover.Pending) *groupsModel {
	if len(groups) == 0 {
		return nil
	}
	g := &groupsModel{Current: cmpOrDefault(current)}
	var onBackup, due, blocked, paused, withheld int
	active := ""
	for _, s := range groups {
		c := groupCell{Name: s.Name, Href: root + groupPagePath(s.Name), ID: "group-" + s.Name, Current: s.Name == g.Current,
			Active: string(s.Active), Class: "ok"}
		if c.Active == "" {
			c.Active = "unknown"
		}
		c.ActiveClass = "site-" + c.Active
		if c.Current {
			active = c.Active
		}
		worse := func(class string) {
			if class == "down" || (class == "warn" && c.Class == "ok") {
				c.Class = class
			}
		}
		if s.Active == failover.Backup {
			onBackup++
			worse("warn")
		}
		if t := s.Sites[s.Active]; t.Verdict == failover.Down {
			c.Chips = append(c.Chips, chip{string(s.Active) + " DOWN", "down"})
			worse("down")
		}
		if s.Pending {
			due++
			ch := pendingChip(pending[s.Name])
			c.Chips = append(c.Chips, ch)
			worse(ch.Class)
		}
		switch s.Mode {
		case "paused":
			paused++
			c.Chips = append(c.Chips, chip{"paused", "warn"})
			worse("warn")
		case "manual-only":
			c.Chips = append(c.Chips, chip{"manual only", "manual"})
		}
		if s.Blocked {
			blocked++
			c.Chips = append(c.Chips, chip{"blocked", "warn"})
			worse("warn")
		}
		if s.WithheldRule != "" {
			withheld++
			c.Chips = append(c.Chips, chip{"withheld: " + s.WithheldRule, "warn"})
			worse("warn")
		}
		var sites []string
		for _, site := range []failover.Site{failover.Primary, failover.Backup} {
			sites = append(sites, string(site)+" "+verdictWord(s.Sites[site].Verdict))
		}
		c.Sites = strings.Join(sites, " · ")
		g.Cells = append(g.Cells, c)
	}
	parts := []string{plural(len(groups), "group")}
	for _, n := range []struct {
		n    int
		what string
	}{{onBackup, "on the backup"}, {due, "pending"}, {blocked, "blocked"}, {paused, "paused"}, {withheld, "withheld"}} {
		if n.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	g.Summary = strings.Join(parts, " · ")
	g.Title = fmt.Sprintf("%s: %s · %d of %d on the backup", g.Current, cmp.Or(active, "unknown"), onBackup, len(groups))
	return g
}

// pendingChip is a pending group's countdown, "failover in 4 s", or what
// would withhold it; "pending" when the countdown is not known.
func pendingChip(p *failover.Pending) chip {
	if p == nil || !p.Countdown() {
		return chip{"pending", "warn"}
	}
	in := fmt.Sprintf("%d s", int64(math.Ceil(p.In.Seconds())))
	action := "failover"
	if p.Then.Action == failover.KindAutoFailback {
		action = "failback"
	}
	if p.Then.Rule != "" {
		return chip{fmt.Sprintf("%s DOWN in %s, %s withheld: %s", p.Site, in, action, p.Then.Rule), "warn"}
	}
	return chip{action + " in " + in, "down"}
}

func verdictWord(v failover.Verdict) string {
	if v == "" {
		return "?"
	}
	return string(v)
}

// cmpOrDefault names the group a view shows: "" is the default group.
func cmpOrDefault(group string) string { return cmp.Or(group, failover.DefaultGroup) }

// groupPending looks up the countdown of every group the summaries flag
// as pending, which a summary carries only as a flag.
func groupPending(gr GroupReader, st *Status) map[string]*failover.Pending {
	out := map[string]*failover.Pending{}
	for _, s := range st.State.Groups {
		switch {
		case !s.Pending:
		case s.Name == cmpOrDefault(st.State.Group):
			out[s.Name] = st.State.Pending
		case gr != nil:
			if v, ok := gr.GroupView(s.Name); ok {
				out[s.Name] = v.Pending
			}
		}
	}
	return out
}

// groupStatus is st as failover group v.Group sees it: the backend's
// warnings about the state it showed give way to the group's own (the
// page adds those from v), its node-level warnings stay.
func groupStatus(st Status, v failover.View) Status {
	st.Warnings = slices.DeleteFunc(slices.Clone(st.Warnings), func(w string) bool {
		return slices.Contains(st.State.Warnings, w)
	})
	st.State = v
	return st
}

// serveGroupPage serves GET /groups/{name}: the overview of every group
// and the detail of that one, or 404 for a group the cluster lacks.
func serveGroupPage(w http.ResponseWriter, r *http.Request, b ReadModel, now time.Time) {
	name := r.PathValue("name")
	gr, _ := b.(GroupReader)
	if gr == nil {
		writeText(w, http.StatusNotFound, "this node serves no page per failover group\n")
		return
	}
	v, ok := gr.GroupView(name)
	if !ok || len(v.Groups) == 0 {
		writeText(w, http.StatusNotFound, fmt.Sprintf("no failover group %q: the overview of every group is at /\n", name))
		return
	}
	st := withGroupDNS(b, groupStatus(b.Status(r.Context()), v), name)
	renderPage(w, r, pageOf(st, now, newNonce(), "../", groupPending(gr, &st)))
}

// statusForRoot is what "/" shows: the backend's status, whose view is
// the default group's (or the first group's) with the overview of all.
func statusForRoot(ctx context.Context, b ReadModel) (Status, map[string]*failover.Pending) {
	st := b.Status(ctx)
	if len(st.State.Groups) == 0 {
		return st, nil
	}
	gr, _ := b.(GroupReader)
	return st, groupPending(gr, &st)
}
