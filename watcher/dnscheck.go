package watcher

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/failover"
)

// DNSCheck is the last read-only comparison of the desired records with what
// each authoritative server answers. Every node runs it, so any node's
// status page shows DNS as the world sees it.
type DNSCheck struct {
	At      time.Time                  `json:"at"`
	Gen     uint64                     `json:"gen"`
	Desired []dnsprovider.RRset        `json:"desired"`
	Servers []dnsprovider.ServerResult `json:"servers"`
	Match   bool                       `json:"match"`
	Err     string                     `json:"error,omitempty"`
	// Group is the failover group checked: "" for the default group.
	Group string `json:"group,omitempty"`
	// Zone is the zone the group's records were checked in, the one
	// their names are relative to.
	Zone string `json:"zone,omitempty"`
}

// checkTimeout bounds one group's check: a server that does not answer
// costs that group's check this long, never another group's.
const checkTimeout = 5 * time.Second

// checker is the verifier's one-shot read (no polling).
type checker interface {
	Check(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error)
}

// dnsTarget is one failover group's DNS check: its records, read from the
// replica, checked in its zone at its provider's servers.
type dnsTarget struct {
	group string // "" for the default group
	zone  string
	chk   checker
	wake  chan struct{}
	// gen is the generation of the decision its latest check compared
	// against, and verified whether that decision was verified then; the
	// loop wakes it once the replica holds another decision verified.
	gen      atomic.Uint64
	verified atomic.Bool
}

// dnsTargets are the groups this node checks: the default group, when this
// node's policy has one, with the dns section's verifier and zone, and each
// of Config.Groups with its own. A group whose verifier cannot check once
// (it only polls) is left out, as the default group always was.
func (w *Watcher) dnsTargets() []*dnsTarget {
	var out []*dnsTarget
	add := func(group string, dns dnsprovider.Provider, v reconcile.Verifier) {
		chk, ok := v.(checker)
		if !ok || dns == nil {
			return
		}
		out = append(out, &dnsTarget{group: group, zone: dns.Zone(), chk: chk, wake: make(chan struct{}, 1)})
	}
	if w.cfg.Policy.HasDefaultGroup() {
		add("", w.cfg.DNS, w.cfg.Verifier)
	}
	for _, g := range w.cfg.Groups {
		add(g.Name, g.DNS, g.Verifier)
	}
	return out
}

// dnsCheckLoop runs every group's check in a loop of its own, so that a
// group whose servers are slow or dead delays no other group's result; a
// group's new decision wakes its check once the leader has verified it,
// so the status shows the new records as the world sees them as soon as
// they are there. Not before: checked when it is taken, a decision is
// compared with the records it is about to replace, and a region outage's
// decisions woke every group's check on every node in the very
// milliseconds the leader wrote and verified them, a query per group and
// node competing with the flip for the servers and the CPU. Other
// commands (probe reports, the other groups' decisions) wake none: each
// would have cost every node one check of every group. A decision that
// is never verified is checked at the period.
func (w *Watcher) dnsCheckLoop(ctx context.Context) {
	targets := w.dnsTargets()
	if len(targets) == 0 {
		return
	}
	every := max(5*w.cfg.Interval, 2*time.Second)
	done := make(chan struct{})
	for _, t := range targets {
		go func() {
			defer func() { done <- struct{}{} }()
			w.groupCheckLoop(ctx, t, every)
		}()
	}
	for running := len(targets); running > 0; {
		select {
		case <-done:
			running--
		case <-w.cfg.FSM.dnsChanged:
			// A decision verified since the last check: look again now,
			// not at the next tick.
			for _, t := range targets {
				d, ok := w.machine.GroupDesired(t.group)
				if !ok || !d.Done || (d.Gen == t.gen.Load() && t.verified.Load()) {
					continue
				}
				if w.dnsCheckWoken != nil {
					w.dnsCheckWoken(t.group, d)
				}
				select {
				case t.wake <- struct{}{}:
				default: // a wake-up is already pending
				}
			}
		}
	}
}

func (w *Watcher) groupCheckLoop(ctx context.Context, t *dnsTarget, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		w.checkDNS(ctx, t)
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
		case <-tick.C:
		}
	}
}

// checkDNS checks t's group once and publishes the result. A group the
// replicated policy does not have (this node's file differs from the
// leader's) is not checked: it has no records to compare.
func (w *Watcher) checkDNS(ctx context.Context, t *dnsTarget) {
	d, ok := w.machine.GroupDesired(t.group)
	if !ok {
		return
	}
	t.gen.Store(d.Gen)
	t.verified.Store(d.Done)
	want := reconcile.ToProvider(d.Records, t.zone)
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	res := DNSCheck{At: w.cfg.Now(), Gen: d.Gen, Desired: want, Group: t.group, Zone: t.zone}
	v, err := t.chk.Check(cctx, want)
	if err != nil {
		res.Err = err.Error()
	} else {
		res.Servers = v.Servers
		res.Match = v.OK()
	}
	w.mu.Lock()
	if w.dnsChecks == nil {
		w.dnsChecks = map[string]DNSCheck{}
	}
	w.dnsChecks[t.group] = res
	w.mu.Unlock()
	w.metrics.dnsMatched(t.group, res.Match)
}

// LastDNSCheck is the last read-only comparison of DNS with the decision
// of the group the status shows: the default group, or without one the
// first group (failover.Machine.Desired's).
func (w *Watcher) LastDNSCheck() DNSCheck {
	lead := ""
	if names := w.machine.Groups(); len(names) > 0 && names[0] != failover.DefaultGroup {
		lead = names[0]
	}
	chk, _ := w.LastGroupDNSCheck(lead)
	return chk
}

// LastGroupDNSCheck is the last DNS check of failover group name ("" or
// failover.DefaultGroup for the default group); ok is false until one ran.
func (w *Watcher) LastGroupDNSCheck(name string) (chk DNSCheck, ok bool) {
	if name == failover.DefaultGroup {
		name = ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	chk, ok = w.dnsChecks[name]
	return chk, ok
}
