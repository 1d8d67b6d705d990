package clusterhealth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/drwatch/drwatch/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RouteQuotaFunc reads a site's Neutron route quota (one GET).
type RouteQuotaFunc func(ctx context.Context) (Routes, error)

// Target is one site to read.
type Target struct {
	Site string
	// Client reads the site's cluster (NewClient); nil: not configured.
	Client kubeapi.Interface
	// Routes reads the route quota; nil: unknown, for RoutesUnknown.
	Routes        RouteQuotaFunc
	RoutesUnknown string
}

// Read reads one site once, within cfg.Timeout. It never fails as a
// whole: each part that cannot be read carries its error.
func Read(ctx context.Context, cfg Config, node string, t Target, now time.Time) Site {
	s := Site{Site: t.Site, Configured: t.Client != nil, ReadBy: node, At: now}
	if t.Routes == nil {
		s.RoutesUnknown = cut(t.RoutesUnknown)
		if s.RoutesUnknown == "" {
			s.RoutesUnknown = "no route quota source for this site"
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	if t.Routes != nil {
		run(func() {
			r, err := t.Routes(ctx)
			if err != nil {
				s.RoutesUnknown = cut("route quota: " + err.Error())
				return
			}
			r.RouterID = cut(r.RouterID)
			s.Routes = &r
		})
	}
	if t.Client != nil {
		// Each part writes only its own fields of s.
		run(func() {
			v, err := readVersion(ctx, t.Client)
			if err != nil {
				s.VersionError = errText(err)
				return
			}
			s.Version = cut(v)
		})
		// Pods follow the nodes: a StatefulSet pod counts when its node is
		// Unknown, which only the node list says.
		run(func() {
			nodes, unknown, err := readNodes(ctx, t.Client)
			s.Nodes, s.NodesError = wrap(nodes, err)
			if err != nil {
				s.PodsError = cut("needs the node list, which is unreadable: " + s.NodesError)
				return
			}
			s.Pods, s.PodsError = wrap(readPods(ctx, t.Client, unknown, cfg.TerminatingAfter, now))
		})
		run(func() { s.Events, s.EventsError = wrap(readEvents(ctx, t.Client, cfg.EventWindow, now)) })
		run(func() {
			s.Services, s.ServicesError = wrap(readServices(ctx, t.Client, cfg.LBPendingAfter, now))
			if s.Services != nil && s.Services.Pending > 0 {
				// Who should be giving them an address, and is it alive.
				s.Services.CCMLease, s.Services.CCMLeaseError = wrap(readLease(ctx, t.Client, cfg.CCMLease, now))
			}
		})
	}
	wg.Wait()
	return s
}

// readVersion is the server's /version with the read's context, so the
// site's timeout bounds it too.
func readVersion(ctx context.Context, c kubeapi.Interface) (string, error) {
	v, err := c.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("get version: %w", err)
	}
	return v.GitVersion, nil
}

func wrap[T any](v *T, err error) (*T, string) {
	if err != nil {
		return nil, errText(err)
	}
	return v, ""
}

func errText(err error) string { return cut(err.Error()) }

// cut keeps at most MaxText runes of valid UTF-8: names, messages and
// versions come from the cluster and must not grow the page or a label.
func cut(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= MaxText {
		return s
	}
	r := []rune(s)
	return string(r[:MaxText-1]) + "…"
}

// pages calls list for successive pages until there is no continue token,
// maxItems items are seen, or maxItems/PageSize+1 calls are made (a server
// that answers empty pages with a token for ever). list handles at most
// room items of its page and returns the page's size and token.
func pages(ctx context.Context, maxItems int, list func(ctx context.Context, opts metav1.ListOptions, room int) (int, string, error)) (truncated bool, err error) {
	opts := metav1.ListOptions{Limit: PageSize}
	seen := 0
	for range maxItems/PageSize + 1 {
		n, cont, err := list(ctx, opts, maxItems-seen)
		if err != nil {
			return false, err
		}
		seen += n
		switch {
		case seen > maxItems:
			return true, nil
		case cont == "":
			return false, nil
		case seen == maxItems:
			return true, nil
		}
		opts.Continue = cont
	}
	return true, nil
}

// The node conditions counted (each when its status is True).
var pressureConditions = []corev1.NodeConditionType{corev1.NodeDiskPressure, corev1.NodeMemoryPressure,
	corev1.NodePIDPressure, corev1.NodeNetworkUnavailable}

const plegText = "PLEG is not healthy"

// readNodes also returns the names of the Unknown nodes it counted (at most
// MaxNodes of them).
func readNodes(ctx context.Context, c kubeapi.Interface) (*Nodes, map[string]bool, error) {
	out := &Nodes{Problems: []NodeProblem{}}
	unknown := map[string]bool{}
	var problems []NodeProblem
	trunc, err := pages(ctx, MaxNodes, func(ctx context.Context, opts metav1.ListOptions, room int) (int, string, error) {
		l, err := c.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return 0, "", fmt.Errorf("list nodes: %w", err)
		}
		for i := range l.Items[:min(room, len(l.Items))] {
			n := &l.Items[i]
			p, isUnknown := classify(n, out)
			if isUnknown {
				unknown[n.Name] = true
			}
			if len(p.Problems) > 0 {
				// The first names in order are the ones shown.
				problems = trim(append(problems, p), MaxShownNodes, sortNodes)
			}
		}
		return len(l.Items), l.Continue, nil
	})
	if err != nil {
		return nil, nil, err
	}
	sortNodes(problems)
	out.Problems = append(out.Problems, problems[:min(len(problems), MaxShownNodes)]...)
	out.Truncated = trunc
	return out, unknown, nil
}

// trim keeps a list's memory bounded while it is paged, even for a huge
// cluster: past 4*shown items it sorts them and keeps the first shown, the
// only ones displayed.
func trim[T any](s []T, shown int, sortf func([]T)) []T {
	if len(s) > 4*shown {
		sortf(s)
		s = s[:shown]
	}
	return s
}

func sortNodes(p []NodeProblem) {
	slices.SortFunc(p, func(a, b NodeProblem) int { return cmp.Compare(a.Name, b.Name) })
}

// classify counts n into out and returns its problems, and whether it is
// Unknown: the kubelet stopped reporting, or never did.
func classify(n *corev1.Node, out *Nodes) (p NodeProblem, unknown bool) {
	out.Total++
	p = NodeProblem{Name: cut(n.Name)}
	var ready *corev1.NodeCondition
	for i := range n.Status.Conditions {
		cond := &n.Status.Conditions[i]
		if cond.Type == corev1.NodeReady {
			ready = cond
			continue
		}
		if cond.Status != corev1.ConditionTrue || !slices.Contains(pressureConditions, cond.Type) {
			continue
		}
		switch cond.Type {
		case corev1.NodeDiskPressure:
			out.DiskPressure++
		case corev1.NodeMemoryPressure:
			out.MemoryPressure++
		case corev1.NodePIDPressure:
			out.PIDPressure++
		case corev1.NodeNetworkUnavailable:
			out.NetworkUnavailable++
		}
		p.Problems = append(p.Problems, string(cond.Type))
	}
	unknown = ready == nil || ready.Status == corev1.ConditionUnknown
	if unknown {
		out.Unknown++
		p.Problems = append(p.Problems, "Unknown")
	}
	if ready == nil || ready.Status != corev1.ConditionFalse {
		return p, unknown
	}
	// Ready False, whatever the reason: the runtime, the CNI, PLEG.
	out.NotReady++
	if strings.Contains(ready.Reason, plegText) || strings.Contains(ready.Message, plegText) {
		out.PLEG++
		msg := ready.Message
		if !strings.Contains(msg, plegText) {
			msg = ready.Reason
		}
		p.Problems = append(p.Problems, cut(msg))
		return p, false
	}
	p.Problems = append(p.Problems, cut("NotReady: "+cmp.Or(ready.Message, ready.Reason)))
	return p, false
}

// multiAttach marks the attach-detach controller's Multi-Attach message
// ("Multi-Attach error for volume ...").
const multiAttach = "Multi-Attach"

func readEvents(ctx context.Context, c kubeapi.Interface, window time.Duration, now time.Time) (*Events, error) {
	out := &Events{WindowSeconds: window.Seconds(), Counts: map[string]int{}, Recent: []Event{}}
	for _, r := range Reasons {
		out.Counts[r] = 0
	}
	var recent []Event
	var errs []error
	for _, reason := range Reasons {
		if reason == ReasonMultiAttach {
			continue // read with FailedAttachVolume
		}
		// One page per reason: events of one reason beyond the cap only
		// make its count a lower bound.
		l, err := c.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "reason=" + reason, Limit: MaxEventsPerReason})
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s events: %w", reason, err))
			continue
		}
		if l.Continue != "" || len(l.Items) > MaxEventsPerReason {
			out.Truncated = true
		}
		for i := range l.Items[:min(len(l.Items), MaxEventsPerReason)] {
			e := &l.Items[i]
			if e.Reason != reason { // a server that ignores the selector
				continue
			}
			seen := lastSeen(e)
			if now.Sub(seen) > window {
				continue
			}
			r := reason
			if reason == ReasonFailedAttachVolume && strings.Contains(e.Message, multiAttach) {
				r = ReasonMultiAttach
			}
			out.Counts[r]++
			recent = append(recent, Event{Reason: r, Object: objectRef(e.InvolvedObject), Message: cut(e.Message),
				Count: count(e), LastSeen: seen})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(recent, func(a, b Event) int { return b.LastSeen.Compare(a.LastSeen) })
	out.Recent = append(out.Recent, recent[:min(len(recent), MaxShownEvents)]...)
	return out, nil
}

// lastSeen is the newest of the times an event carries (core/v1 events
// from old kubelets set lastTimestamp; events.k8s.io writers set eventTime
// and series).
func lastSeen(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.FirstTimestamp.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	return t
}

func count(e *corev1.Event) int32 {
	n := e.Count
	if e.Series != nil && e.Series.Count > n {
		n = e.Series.Count
	}
	return max(n, 1)
}

func objectRef(o corev1.ObjectReference) string {
	if o.Namespace == "" {
		return cut(o.Kind + "/" + o.Name)
	}
	return cut(o.Kind + "/" + o.Namespace + "/" + o.Name)
}

func readServices(ctx context.Context, c kubeapi.Interface, after time.Duration, now time.Time) (*Services, error) {
	out := &Services{PendingAfterSeconds: after.Seconds(), Oldest: []PendingService{}}
	var pending []PendingService
	trunc, err := pages(ctx, MaxServices, func(ctx context.Context, opts metav1.ListOptions, room int) (int, string, error) {
		l, err := c.CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return 0, "", fmt.Errorf("list services: %w", err)
		}
		for i := range l.Items[:min(room, len(l.Items))] {
			s := &l.Items[i]
			if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
				continue
			}
			out.LoadBalancers++
			if len(s.Status.LoadBalancer.Ingress) > 0 || now.Sub(s.CreationTimestamp.Time) <= after {
				continue
			}
			out.Pending++
			pending = trim(append(pending, PendingService{Namespace: cut(s.Namespace), Name: cut(s.Name), Created: s.CreationTimestamp.Time}),
				MaxShownServices, sortOldest)
		}
		return len(l.Items), l.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	sortOldest(pending)
	out.Oldest = append(out.Oldest, pending[:min(len(pending), MaxShownServices)]...)
	out.Truncated = trunc
	return out, nil
}

func sortOldest(p []PendingService) {
	slices.SortStableFunc(p, func(a, b PendingService) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// readLease reads the Lease ref ("namespace/name").
func readLease(ctx context.Context, c kubeapi.Interface, ref string, now time.Time) (*Lease, error) {
	ns, name, _ := strings.Cut(ref, "/")
	l, err := c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get lease %s: %w", ref, err)
	}
	out := &Lease{Name: cut(ref)}
	if l.Spec.HolderIdentity != nil {
		out.Holder = cut(*l.Spec.HolderIdentity)
	}
	if l.Spec.RenewTime != nil {
		out.RenewTime = l.Spec.RenewTime.Time
		out.RenewAgeSeconds = now.Sub(out.RenewTime).Seconds()
	}
	if l.Spec.LeaseDurationSeconds != nil {
		out.DurationSeconds = float64(*l.Spec.LeaseDurationSeconds)
	}
	return out, nil
}
