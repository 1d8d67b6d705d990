package watcher

import (
	"context"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/reconcile"
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
}

// checker is the verifier's one-shot read (no polling).
type checker interface {
	Check(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error)
}

func (w *Watcher) dnsCheckLoop(ctx context.Context) {
	chk, ok := w.cfg.Verifier.(checker)
	if !ok {
		return
	}
	every := max(5*w.cfg.Interval, 2*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		w.checkDNS(ctx, chk)
		select {
		case <-ctx.Done():
			return
		case <-w.cfg.FSM.dnsChanged:
			// A new decision: look again soon, not at the next tick.
		case <-t.C:
		}
	}
}

func (w *Watcher) checkDNS(ctx context.Context, chk checker) {
	d := w.machine.Desired()
	want := reconcile.ToProvider(d.Records, w.cfg.DNS.Zone())
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res := DNSCheck{At: w.cfg.Now(), Gen: d.Gen, Desired: want}
	v, err := chk.Check(cctx, want)
	if err != nil {
		res.Err = err.Error()
	} else {
		res.Servers = v.Servers
		res.Match = v.OK()
	}
	w.mu.Lock()
	w.dnsCheck = res
	w.mu.Unlock()
	if res.Match {
		w.metrics.dnsMatch.Set(1)
	} else {
		w.metrics.dnsMatch.Set(0)
	}
}
