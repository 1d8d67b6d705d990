package openstack

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/instanceactions"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

// NeverReadyName is never-ready-instances' name.
const NeverReadyName = "never-ready-instances"

// MaxReboots is how often never-ready-instances reboots one instance: once
// soft, once hard.
const MaxReboots = 2

// NodeReadiness tells whether an instance's Kubernetes node became Ready.
type NodeReadiness interface {
	// NodeReadiness reports whether inst's node is or has been Ready
	// (ready), and whether a node object for it exists at all (seen). An
	// error means "cannot tell"; the caller then does nothing. It only
	// reads, is idempotent and must be safe for concurrent use.
	NodeReadiness(ctx context.Context, inst Instance) (ready bool, seen bool, err error)
}

// NeverReady is the never-ready-instances remediator.
type NeverReady struct {
	c         *Clients
	sel       Selector
	readiness NodeReadiness
	after     time.Duration
	maxAge    time.Duration
	now       func() time.Time
}

var _ remediate.Remediator = (*NeverReady)(nil)

// NewNeverReady returns the remediator: a cluster instance ACTIVE for
// longer than after, and after since its last reboot, but younger than
// maxAge, whose node never became Ready is rebooted, soft first, then
// hard, never more than MaxReboots times. An older instance is left
// alone: a node failing its first boot is young, while an old VM without
// a Ready node is something else (a bastion, an etcd VM, a node whose
// Node object was deleted), which no reboot repairs. maxAge 0 means no
// bound. now may be nil (time.Now).
func NewNeverReady(c *Clients, sel Selector, readiness NodeReadiness, after, maxAge time.Duration, now func() time.Time) *NeverReady {
	if now == nil {
		now = time.Now
	}
	return &NeverReady{c: c, sel: sel, readiness: readiness, after: after, maxAge: maxAge, now: now}
}

// tooOld reports whether in is past the age bound.
func (n *NeverReady) tooOld(in Instance, now time.Time) bool {
	return n.maxAge > 0 && in.age(now) > n.maxAge
}

// Name implements remediate.Remediator.
func (n *NeverReady) Name() string { return NeverReadyName }

type rebootData struct {
	inst Instance
	nth  int
}

// reboots returns how many reboots Nova recorded for the server and when
// the last one started.
func (n *NeverReady) reboots(ctx context.Context, id string) (int, time.Time, error) {
	pages, err := instanceactions.List(n.c.Compute, id, nil).AllPages(ctx)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("list instance actions of %s: %w", id, err)
	}
	acts, err := instanceactions.ExtractInstanceActions(pages)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("decode instance actions: %w", err)
	}
	count, last := 0, time.Time{}
	for _, a := range acts {
		if a.Action == "reboot" {
			count++
			if a.StartTime.After(last) {
				last = a.StartTime
			}
		}
	}
	return count, last, nil
}

// Plan lists the cluster's ACTIVE instances launched longer than T ago
// and younger than the age bound;
// for each whose node is not Ready it counts Nova's reboot actions: none
// plans a SOFT reboot (key reboot/<id>/1), one, T after it, a HARD reboot
// (key reboot/<id>/2); at MaxReboots it plans one "warn" for the human.
// An instance whose readiness or history cannot be read is skipped.
func (n *NeverReady) Plan(ctx context.Context) ([]remediate.Action, error) {
	insts, err := listInstances(ctx, n.c.Compute, n.sel)
	if err != nil {
		return nil, err
	}
	now := n.now()
	var out []remediate.Action
	for _, in := range insts {
		if in.Status != "ACTIVE" || now.Sub(in.LaunchedAt) < n.after || n.tooOld(in, now) {
			continue
		}
		ready, seen, err := n.readiness.NodeReadiness(ctx, in)
		if err != nil || ready {
			continue
		}
		count, last, err := n.reboots(ctx, in.ID)
		if err != nil {
			continue
		}
		node := "no node registered"
		if seen {
			node = "its node never became Ready"
		}
		switch {
		case count >= MaxReboots:
			out = append(out, remediate.Action{
				Target: "server/" + in.ID, Verb: VerbWarn,
				Reason: fmt.Sprintf("instance %s: %s after %d reboots; inspect or replace it", in.Name, node, count),
				Key:    "reboot-cap/" + in.ID,
			})
		case count == 1 && now.Sub(last) < n.after:
			// Give the soft reboot its time.
		default:
			typ := "SOFT"
			if count > 0 {
				typ = "HARD"
			}
			out = append(out, remediate.Action{
				Target: "server/" + in.ID, Verb: "reboot-" + map[string]string{"SOFT": "soft", "HARD": "hard"}[typ],
				Reason: fmt.Sprintf("instance %s ACTIVE since %s and %s (reboot %d of %d)", in.Name, in.LaunchedAt.UTC().Format(time.RFC3339), node, count+1, MaxReboots),
				Key:    "reboot/" + in.ID + "/" + strconv.Itoa(count+1),
				Data:   rebootData{inst: in, nth: count + 1},
				// Its node is the instance's name, as the kubelet
				// registers it; a reboot counts against the cluster's
				// node disruption budget whether or not it registered.
				Disrupts: in.Name,
			})
		}
	}
	return out, nil
}

// Apply re-reads the server (must still be ACTIVE and within the age
// bound), the node's readiness
// (Ready now: ErrPrecondition) and the reboot count (already rebooted that
// often: done), then asks Nova for the reboot. A "warn" does nothing.
func (n *NeverReady) Apply(ctx context.Context, a remediate.Action) error {
	if a.Verb == VerbWarn {
		return nil
	}
	d, ok := a.Data.(rebootData)
	if !ok {
		return fmt.Errorf("%s: action without reboot data", a.Target)
	}
	v, err := servers.Get(ctx, n.c.Compute, d.inst.ID).Extract()
	if gophercloud.ResponseCodeIs(err, 404) {
		return fmt.Errorf("instance %s is gone: %w", d.inst.ID, remediate.ErrPrecondition)
	}
	if err != nil {
		return fmt.Errorf("get server %s: %w", d.inst.ID, err)
	}
	if v.Status != "ACTIVE" {
		return fmt.Errorf("instance %s is %s: %w", d.inst.ID, v.Status, remediate.ErrPrecondition)
	}
	if n.tooOld(toInstance(v), n.now()) {
		return fmt.Errorf("instance %s is older than %s: %w", d.inst.ID, n.maxAge, remediate.ErrPrecondition)
	}
	ready, _, err := n.readiness.NodeReadiness(ctx, toInstance(v))
	if err != nil {
		return fmt.Errorf("node readiness of %s: %w", d.inst.Name, err)
	}
	if ready {
		return fmt.Errorf("node of %s is Ready: %w", d.inst.Name, remediate.ErrPrecondition)
	}
	count, _, err := n.reboots(ctx, d.inst.ID)
	if err != nil {
		return err
	}
	if count >= d.nth {
		return nil
	}
	typ := servers.SoftReboot
	if d.nth > 1 {
		typ = servers.HardReboot
	}
	if err := servers.Reboot(ctx, n.c.Compute, d.inst.ID, servers.RebootOpts{Type: typ}).ExtractErr(); err != nil {
		return fmt.Errorf("reboot %s %s: %w", typ, d.inst.ID, precondition(err))
	}
	return nil
}

var _ remediate.Disruptor = (*NeverReady)(nil)

// Disrupted implements remediate.Disruptor: an instance it rebooted keeps
// its node disrupted until the node is Ready, or the instance is gone or
// shut off. One that never joins holds the cluster's budget until an
// operator replaces it, which its warning asks for. It only reads.
func (n *NeverReady) Disrupted(ctx context.Context, applied []remediate.Applied) ([]remediate.Disruption, error) {
	var ids []string
	for _, a := range applied {
		if id, ok := strings.CutPrefix(a.Target, "server/"); ok && strings.HasPrefix(a.Key, "reboot/") && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	var out []remediate.Disruption
	for _, id := range ids {
		v, err := servers.Get(ctx, n.c.Compute, id).Extract()
		if gophercloud.ResponseCodeIs(err, 404) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get server %s: %w", id, err)
		}
		in := toInstance(v)
		if in.gone() || in.Status == "SHUTOFF" {
			continue
		}
		ready, _, err := n.readiness.NodeReadiness(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("node readiness of %s: %w", in.Name, err)
		}
		if !ready {
			out = append(out, remediate.Disruption{Node: in.Name,
				Why: fmt.Sprintf("instance %s (%s) was rebooted and its node is not Ready yet; replace or delete the instance if it never joins", in.Name, id)})
		}
	}
	return out, nil
}
