package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// VerifyConfig says which servers must serve the desired answer and how long
// to wait for them.
type VerifyConfig struct {
	// Servers is a fixed list of authoritative "host:port". When empty, the
	// zone's NS set is resolved through Resolver.
	Servers []string `yaml:"servers" doc:"host:port of each authoritative server; default: the zone's NS set."`
	// Timeout bounds a whole verification (NewVerifier: 60s when zero; the
	// config file's default is 30s).
	Timeout time.Duration `yaml:"timeout" default:"30s" doc:"How long to wait for every server to answer the new records."`
	// Resolver is the "host:port" asked for the NS set and the name servers'
	// addresses (NewVerifierFromConfig: the RFC 2136 primary when unset).
	Resolver string `yaml:"-"`
	// Port is the DNS port of servers found through the NS set (default 53).
	Port int `yaml:"-"`
	// Interval is the pause between polls of one server (default 250ms).
	Interval time.Duration `yaml:"-"`
	// QueryTimeout bounds one query (default 2s).
	QueryTimeout time.Duration `yaml:"-"`
}

// Verifier checks that every authoritative server of a zone serves the
// desired RRsets, by direct non-recursive (RD=0) queries. Safe for
// concurrent use.
type Verifier struct {
	zone string
	cfg  VerifyConfig
	log  *slog.Logger
}

// NewVerifier builds a verifier for zone.
func NewVerifier(zone string, cfg VerifyConfig, log *slog.Logger) (*Verifier, error) {
	if len(cfg.Servers) == 0 && cfg.Resolver == "" {
		return nil, fmt.Errorf("%w: verify needs servers or a resolver", ErrConfig)
	}
	if cfg.Port == 0 {
		cfg.Port = 53
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = 2 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Verifier{zone: dns.CanonicalName(zone), cfg: cfg, log: log}, nil
}

// ServerResult is one authoritative server's verdict.
type ServerResult struct {
	// Server is the "host:port" queried.
	Server string
	// NS is the name server's name when found through the NS set.
	NS string
	// Matched is true when the server served every desired RRset, TTL
	// included.
	Matched bool
	// After is the time from the start of verification to the first
	// matching answer (the propagation time), or to the give-up.
	After time.Duration
	// Got is the last answer read (same order as the desired RRsets).
	Got []RRset
	// Err is the last query error, if the last poll failed.
	Err error
}

// Verification is the result of Verify or Check.
type Verification struct {
	Servers []ServerResult
}

// OK reports whether every server matched.
func (v *Verification) OK() bool {
	for _, s := range v.Servers {
		if !s.Matched {
			return false
		}
	}
	return len(v.Servers) > 0
}

// Err returns nil when every server matched, else an error wrapping
// ErrNotPropagated that names each disagreeing server.
func (v *Verification) Err() error {
	var bad []string
	for _, s := range v.Servers {
		if !s.Matched {
			why := "serves other records"
			if s.Err != nil {
				why = s.Err.Error()
			}
			bad = append(bad, fmt.Sprintf("%s (%s)", s.Server, why))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrNotPropagated, strings.Join(bad, "; "))
}

// Servers returns the authoritative servers to check: the configured list,
// or the zone's NS set resolved through the resolver (NS name and address).
func (v *Verifier) Servers(ctx context.Context) ([]ServerResult, error) {
	if len(v.cfg.Servers) > 0 {
		out := make([]ServerResult, len(v.cfg.Servers))
		for i, s := range v.cfg.Servers {
			out[i] = ServerResult{Server: s}
		}
		return out, nil
	}
	ex := exchanger{server: v.cfg.Resolver, zone: v.zone, timeout: v.cfg.QueryTimeout}
	nss, err := ex.query(ctx, v.zone, dns.TypeNS)
	if err != nil {
		return nil, fmt.Errorf("resolve ns set: %w", err)
	}
	if len(nss) == 0 {
		return nil, fmt.Errorf("resolve ns set of %s: %w: empty", v.zone, ErrBadReply)
	}
	var out []ServerResult
	for _, rr := range nss {
		ns := dns.CanonicalName(rr.(*dns.NS).Ns)
		var addrs []string
		for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
			rx := exchanger{server: v.cfg.Resolver, zone: ns, timeout: v.cfg.QueryTimeout}
			if inZone(ns, v.zone) {
				rx.zone = v.zone
			}
			rrs, err := rx.query(ctx, ns, t)
			if err != nil {
				continue
			}
			for _, a := range rrs {
				switch a := a.(type) {
				case *dns.A:
					addrs = append(addrs, a.A.String())
				case *dns.AAAA:
					addrs = append(addrs, a.AAAA.String())
				}
			}
		}
		if len(addrs) == 0 {
			out = append(out, ServerResult{Server: ns, NS: ns, Err: fmt.Errorf("no address for %s via %s", ns, v.cfg.Resolver)})
			continue
		}
		for _, a := range addrs {
			out = append(out, ServerResult{Server: net.JoinHostPort(a, strconv.Itoa(v.cfg.Port)), NS: ns})
		}
	}
	slices.SortFunc(out, func(a, b ServerResult) int { return strings.Compare(a.Server, b.Server) })
	return slices.CompactFunc(out, func(a, b ServerResult) bool { return a.Server == b.Server }), nil
}

// Check asks every authoritative server once (for `drwatch dns check` and
// the status), comparing as Verify does: a TTL difference is drift.
// It returns an error only when the server list cannot be found; per-server
// disagreement is in the result (Verification.Err).
func (v *Verifier) Check(ctx context.Context, desired []RRset) (*Verification, error) {
	return v.run(ctx, desired, false)
}

// Verify polls every authoritative server until each serves the desired
// RRsets (values and TTL, as RRset.Equal) or the timeout ends, and reports the
// propagation time per server. It returns an error only when the server list
// cannot be found; laggards are named by Verification.Err. It writes nothing.
func (v *Verifier) Verify(ctx context.Context, desired []RRset) (*Verification, error) {
	return v.run(ctx, desired, true)
}

func (v *Verifier) run(ctx context.Context, desired []RRset, poll bool) (*Verification, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	servers, err := v.Servers(ctx)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for i := range servers {
		if servers[i].Err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.pollOne(ctx, start, &servers[i], desired, poll)
		}()
	}
	wg.Wait()
	res := &Verification{Servers: servers}
	if poll {
		for _, s := range servers {
			if s.Matched {
				v.log.Info("dns answer propagated", "server", s.Server, "after", s.After)
			} else {
				v.log.Warn("dns answer not propagated", "server", s.Server, "after", s.After, "err", s.Err)
			}
		}
	}
	return res, nil
}

func (v *Verifier) pollOne(ctx context.Context, start time.Time, r *ServerResult, desired []RRset, poll bool) {
	ex := exchanger{server: r.Server, zone: v.zone, timeout: v.cfg.QueryTimeout}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.gaveUp(ctx, start)
			return
		case <-t.C:
		}
		got, err := readSets(ctx, &ex, v.zone, desired)
		r.read(got, err, desired, start)
		if r.Matched || !poll {
			return
		}
		t.Reset(v.cfg.Interval)
	}
}

// read records one poll of the server: what it served (got, in the order
// of desired) or the error, whether that matches desired, and when.
func (r *ServerResult) read(got []RRset, err error, desired []RRset, start time.Time) {
	r.Err = err
	if err == nil {
		r.Got = got
		r.Matched = true
		for i := range desired {
			if !sameRRset(got[i], desired[i]) {
				r.Matched = false
			}
		}
	}
	r.After = time.Since(start)
}

// gaveUp records that polling the server ended with ctx, keeping the last
// poll's answer or error when there was one.
func (r *ServerResult) gaveUp(ctx context.Context, start time.Time) {
	r.After = time.Since(start)
	if r.Err == nil && r.Got == nil {
		r.Err = ctx.Err()
	}
}

// readSets reads RRsets with unsigned queries.
func readSets(ctx context.Context, ex *exchanger, zone string, sets []RRset) ([]RRset, error) {
	out := make([]RRset, len(sets))
	for i, s := range sets {
		id := normalizeID(s.ID(), zone)
		t, ok := dns.StringToType[id.Type]
		if !ok {
			return nil, errors.New("unknown type " + id.Type)
		}
		rrs, err := ex.query(ctx, AbsoluteName(id.Name, zone), t)
		if err != nil {
			return nil, err
		}
		out[i] = rrsetFrom(id, rrs)
	}
	return out, nil
}
