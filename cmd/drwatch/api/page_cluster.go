package api

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/monitor/clusterhealth"
)

// clusterModel is one site's part of the Cluster health section.
type clusterModel struct {
	Site          string
	Verdict       string // "clear", "attention", "partly unreadable", "not read yet", "not configured"
	Class         string
	Read          string // "Kubernetes v1.31.14 · read 12s ago by a"
	NotConfigured string
	Rows          []kvRow
	Nodes         []string // "n1: DiskPressure, Unknown"
	Events        []eventRow
	Pending       []string // "ns/name: no address for 15m 0s"
	Pods          []string // "ns/name on n1: Terminating for 15m 0s"
}

type kvRow struct{ Label, Value, Class string }

type eventRow struct{ AtRel, At, Reason, Object, Count, Message string }

// clusters renders each site's cluster health, as the serving node read it.
// Every string comes from the cluster and is escaped by html/template.
func clusters(sites []clusterhealth.Site, now time.Time) []clusterModel {
	var out []clusterModel
	for _, s := range sites {
		out = append(out, clusterOf(s, now))
	}
	return out
}

func clusterOf(s clusterhealth.Site, now time.Time) clusterModel {
	m := clusterModel{Site: s.Site}
	if !s.Configured {
		m.Verdict, m.Class = "not configured", "none"
		m.NotConfigured = "No cluster to read: set remediations.kubernetes." + s.Site + ".kubeconfig_file (read access to nodes, events, services)."
	}
	if s.At.IsZero() {
		if s.Configured {
			m.Verdict, m.Class = "not read yet", "unknown"
		}
		return m
	}
	m.Read = "read " + ago(now, s.At) + " by " + cmp.Or(s.ReadBy, dash)
	attention, unreadable := false, false
	count := func(label string, n int, lowerBound bool) {
		r := kvRow{Label: label, Value: strconv.Itoa(n)}
		if lowerBound {
			r.Value = "at least " + r.Value
		}
		if n > 0 {
			r.Class, attention = "warn", true
		}
		m.Rows = append(m.Rows, r)
	}
	failed := func(label, err string) {
		unreadable = true
		m.Rows = append(m.Rows, kvRow{Label: label, Value: "unreadable: " + err, Class: "unknown"})
	}
	if s.Configured {
		switch {
		case s.VersionError != "":
			failed("Kubernetes", s.VersionError)
		default:
			m.Rows = append(m.Rows, kvRow{Label: "Kubernetes", Value: s.Version})
		}
		if n := s.Nodes; n != nil {
			total := strconv.Itoa(n.Total)
			if n.Truncated {
				total += fmt.Sprintf(" (only the first %d counted)", clusterhealth.MaxNodes)
			}
			m.Rows = append(m.Rows, kvRow{Label: "nodes", Value: total})
			count("Unknown", n.Unknown, false)
			count("NotReady (any reason)", n.NotReady, false)
			count("PLEG is not healthy", n.PLEG, false)
			count("DiskPressure", n.DiskPressure, false)
			count("MemoryPressure", n.MemoryPressure, false)
			count("PIDPressure", n.PIDPressure, false)
			count("NetworkUnavailable", n.NetworkUnavailable, false)
			for _, p := range n.Problems {
				m.Nodes = append(m.Nodes, p.Name+": "+joinNonEmpty(", ", p.Problems...))
			}
		} else {
			failed("nodes", s.NodesError)
		}
		switch p := s.Pods; {
		case p != nil:
			after := roundDur(time.Duration(p.TerminatingAfterSeconds * float64(time.Second)))
			count("pods Terminating over "+after, p.Terminating, p.Truncated)
			count("StatefulSet pods on Unknown nodes", p.StatefulOnUnknown, p.Truncated)
			count("Evicted pods", p.Evicted, p.Truncated)
			for _, q := range p.Problems {
				line := q.Namespace + "/" + q.Name
				if q.Node != "" {
					line += " on " + q.Node
				}
				m.Pods = append(m.Pods, line+": "+q.Problem+" for "+roundDur(now.Sub(q.Since)))
			}
		case s.PodsError != "" && s.Nodes != nil:
			// With the nodes unreadable, their row says it all. A report
			// with neither (from a drwatch that did not read pods) shows
			// no pod rows.
			failed("pods", s.PodsError)
		}
		if e := s.Events; e != nil {
			window := roundDur(time.Duration(e.WindowSeconds * float64(time.Second)))
			for _, r := range clusterhealth.Reasons {
				count(r+" events (last "+window+")", e.Counts[r], e.Truncated && e.Counts[r] >= clusterhealth.MaxEventsPerReason)
			}
			for _, ev := range e.Recent {
				m.Events = append(m.Events, eventRow{AtRel: ago(now, ev.LastSeen), At: absTime(ev.LastSeen), Reason: ev.Reason,
					Object: ev.Object, Count: "×" + strconv.Itoa(int(ev.Count)), Message: ev.Message})
			}
		} else {
			failed("events", s.EventsError)
		}
		if sv := s.Services; sv != nil {
			after := roundDur(time.Duration(sv.PendingAfterSeconds * float64(time.Second)))
			r := kvRow{Label: "LoadBalancer Services pending over " + after, Value: fmt.Sprintf("%d of %d", sv.Pending, sv.LoadBalancers)}
			if sv.Truncated {
				r.Value += fmt.Sprintf(" (only the first %d Services looked at)", clusterhealth.MaxServices)
			}
			if sv.Pending > 0 {
				r.Class, attention = "warn", true
			}
			m.Rows = append(m.Rows, r)
			if l := sv.CCMLease; l != nil {
				m.Rows = append(m.Rows, leaseRow("cloud-controller-manager lease", l, now))
			} else if sv.CCMLeaseError != "" {
				failed("cloud-controller-manager lease", sv.CCMLeaseError)
			}
			for _, p := range sv.Oldest {
				m.Pending = append(m.Pending, p.Namespace+"/"+p.Name+": no address for "+roundDur(now.Sub(p.Created)))
			}
		} else {
			failed("LoadBalancer Services", s.ServicesError)
		}
	}
	switch r := s.Routes; {
	case r != nil:
		row := kvRow{Label: "route quota", Value: fmt.Sprintf("%d of %d routes on router %s", r.Used, r.Limit, r.RouterID)}
		if r.Limit > 0 && r.Used*10 >= r.Limit*9 {
			row.Class, attention = "warn", true
		}
		m.Rows = append(m.Rows, row)
	default:
		m.Rows = append(m.Rows, kvRow{Label: "route quota", Value: s.RoutesUnknown, Class: "unknown"})
	}
	switch {
	case attention:
		m.Verdict, m.Class = "attention", "warn"
	case unreadable:
		m.Verdict, m.Class = "partly unreadable", "unknown"
	case s.Configured:
		m.Verdict, m.Class = "clear", "ok"
	}
	return m
}

// ClusterText is one site's cluster health on one line, as the status page
// judges it: "primary attention (read 5s ago by a): Unknown 2; events
// unreadable: forbidden". Only what needs attention or could not be read
// is listed.
func ClusterText(s clusterhealth.Site, now time.Time) string {
	m := clusterOf(s, now)
	out := m.Site + " " + m.Verdict
	if m.Read != "" {
		out += " (" + m.Read + ")"
	}
	var notes []string
	for _, r := range m.Rows {
		if r.Class == "warn" || r.Class == "unknown" {
			notes = append(notes, r.Label+" "+r.Value)
		}
	}
	if len(notes) > 0 {
		out += ": " + strings.Join(notes, "; ")
	}
	return out
}

// leaseRow says who holds a leader Lease and when it renewed, marked for
// attention when nobody holds it or the holder stopped renewing.
func leaseRow(label string, l *clusterhealth.Lease, now time.Time) kvRow {
	r := kvRow{Label: label + " " + l.Name}
	switch {
	case l.Holder == "":
		r.Value, r.Class = "held by nobody", "warn"
	case l.RenewTime.IsZero():
		r.Value, r.Class = "held by "+l.Holder+", never renewed", "warn"
	default:
		r.Value = "held by " + l.Holder + ", renewed " + ago(now, l.RenewTime)
		if l.DurationSeconds > 0 && now.Sub(l.RenewTime) > time.Duration(l.DurationSeconds*float64(time.Second)) {
			r.Value += " (past its " + roundDur(time.Duration(l.DurationSeconds*float64(time.Second))) + " lease)"
			r.Class = "warn"
		}
	}
	return r
}
