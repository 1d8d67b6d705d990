package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// checkWorldInvariants runs the invariants that read the DNS authority and
// the remediations after every step: 2 (fencing), 5 (anti-flap) and 7's
// hourly cap (its per-action parts run inside each Apply).
func (w *World) checkWorldInvariants() {
	w.checkFencing()
	w.checkAntiFlap()
	w.checkRemediationCaps()
}

// checkFencing is invariant 2, for each failover group: the group's
// fence never goes back to a lower generation (so no deposed leader's
// write lands over a newer one, and no group's write over another
// group's newer one), and the records of the group the authority holds
// are always those of the group's decision its fence names (a swap
// writes both at once; nothing else writes). The zone holds nothing but
// the groups' records and fences.
func (w *World) checkFencing() {
	for _, g := range w.simGroups() {
		if !w.checkGroupFencing(g) {
			return
		}
	}
	if stray := w.strayRecords(); len(stray) > 0 {
		w.violate("invariant 2: the authority holds %v, which no group's records or fence name; writes: %v", stray, w.auth.History())
	}
}

// checkGroupFencing is checkFencing for group g; false once it found a
// violation.
func (w *World) checkGroupFencing(g simGroup) bool {
	if wr, back := w.auth.NamedFenceWentBackwards(g.fence); back {
		w.violate("invariant 2: DNS write #%d (%s) took %sthe fence from gen=%d back to gen=%d: %v",
			wr.Seq, wr.Op, groupPrefix(g.name), wr.FenceBefore, wr.FenceAfter, wr.Sets)
		return false
	}
	got, gen, err := w.zoneState(g)
	if err != nil {
		w.violate("invariant 2: %sthe authority's fence is unreadable: %v", groupPrefix(g.name), err)
		return false
	}
	if gen == 0 {
		return true
	}
	site, known := w.decisionSite(g.name, gen)
	if !known {
		return false
	}
	want := siteRecords(*g.policy, site)
	if !slices.EqualFunc(got, want, dnsprovider.RRset.Equal) {
		w.violate("invariant 2: %sthe fence says gen=%d (%s) but the authority holds %v, want %v; writes: %v", groupPrefix(g.name), gen, site, got, want, w.auth.History())
		return false
	}
	return true
}

// decide remembers d's decision, once a replica has applied it, for
// invariant 2. A replica's machine does not keep it: a restart rolls the
// machine back to the replica's last snapshot, and the entries after it,
// still in its log, apply again only once a leader commits in the new
// term (hashicorp/raft, in the product as here). Until then a fence the
// authority rightly holds may name a decision no running machine knows.
func (w *World) decide(group string, d failover.Desired) {
	if d.Gen == 0 {
		return
	}
	k := groupGen{group, d.Gen}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.decided[k]; !ok {
		w.decided[k] = d.Active
	}
}

// decisionSite is the site group's decision gen made active, as some replica
// decided it: one it ever applied (decide), or one a machine holds (a
// crashed one keeps what it applied; one built by hand, as the check's
// tests build them, applied outside a replica). A fence naming a
// generation no replica decided is a violation.
func (w *World) decisionSite(group string, gen uint64) (failover.Site, bool) {
	w.mu.Lock()
	site, ok := w.decided[groupGen{group, gen}]
	w.mu.Unlock()
	if ok {
		return site, true
	}
	latest := uint64(0)
	for _, n := range w.nodes {
		d, _ := n.machine.GroupDesired(group)
		latest = max(latest, d.Gen)
		if d.Gen == gen {
			return d.Active, true
		}
		for _, e := range n.machine.History() {
			if entryGroup(e) == group && e.Gen == gen && e.Index == gen && e.To != "" {
				return e.To, true
			}
		}
	}
	w.violate("invariant 2: %sthe authority's fence names gen=%d, a decision no replica ever applied (the latest they hold: gen %d)", groupPrefix(group), gen, latest)
	return "", false
}

// checkAntiFlap is invariant 5 on every replica's history, for each
// failover group with its own entries and block window.
func (w *World) checkAntiFlap() {
	groups := w.simGroups()
	for _, n := range w.nodes {
		if v := groupsAntiFlapViolation(n.machine.History(), groups); v != "" {
			w.violate("invariant 5: %s %s", n.id, v)
			return
		}
	}
}

// groupsAntiFlapViolation is antiFlapViolation for each group of groups,
// on its own entries with its own block window: one group's flip and
// another's are independent, and an ack in one group lifts no other's
// block.
func groupsAntiFlapViolation(history []failover.Entry, groups []simGroup) string {
	for _, g := range groups {
		gh := history
		if len(groups) > 1 {
			gh = slices.DeleteFunc(slices.Clone(history), func(e failover.Entry) bool { return entryGroup(e) != g.name })
		}
		if v := antiFlapViolation(gh, g.policy.BlockWindow); v != "" {
			return groupPrefix(g.name) + v
		}
	}
	return ""
}

// antiFlapViolation says how history breaks invariant 5, or "": two
// automatic flips less than window apart need an ack between them (an
// operator's ack, or the one a manual move records).
func antiFlapViolation(history []failover.Entry, window time.Duration) string {
	var last *failover.Entry
	acked := false
	for _, e := range history {
		switch {
		case e.Kind == failover.KindAck:
			acked = true
		case strings.HasPrefix(e.Kind, "auto_"):
			if last != nil && !acked && e.At < last.At+int64(window) {
				return fmt.Sprintf("flipped automatically at index %d (%s) only %s after the flip at index %d, with no ack between (block window %s)",
					e.Index, e.Kind, time.Duration(e.At-last.At), last.Index, window)
			}
			last, acked = &e, false
		}
	}
	return ""
}

// dnsConverged is invariant 4's condition, for each failover group: the
// authority holds the group's desired state of the leader's replica (its
// records and fence, or the operator's records before any decision), and
// that decision is recorded as verified.
func (w *World) dnsConverged() (bool, string) {
	l := w.leader()
	if l == nil {
		return false, "no leader"
	}
	for _, g := range w.simGroups() {
		d, _ := l.machine.GroupDesired(g.name)
		want, gen := w.dnsWants(g, d)
		if ok, why := w.dnsHolds(g, want, gen); !ok {
			return false, fmt.Sprintf("%sdesired gen %d (%s): %s", groupPrefix(g.name), d.Gen, d.Active, why)
		}
		if gen != 0 && !d.Done {
			return false, fmt.Sprintf("%sdesired gen %d (%s) is in DNS but not recorded as verified", groupPrefix(g.name), d.Gen, d.Active)
		}
	}
	return true, ""
}
