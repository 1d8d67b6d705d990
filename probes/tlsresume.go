package probes

import (
	"crypto/tls"
	"crypto/x509"
	"sync"
	"time"
)

// An https probe makes a new connection every run, and so a TLS handshake.
// A full handshake costs both ends the certificate chain (signed by the
// server, verified by the probe) and the probe a fresh key share for every
// group it offers, the post-quantum hybrid's included. With 50 platforms
// of 8 probes on one watcher, that is most of the watcher's CPU. So, when
// HTTPSpec.TLSResume is set, an endpoint's probes resume the session of
// their last full handshake, and offer only the key exchange group the
// server chose in it, for at most TLSResume; then the next probe makes a
// full handshake again, with the default groups, and learns again.
//
// A resumed handshake does not show the server's certificate: a
// certificate the server starts serving is checked by the first full
// handshake, at most TLSResume later. The certificate of the last full
// handshake is still checked every run (expiry and cert_min_validity).
// Any failed probe forgets its endpoint, so the next run, and every run of
// a failing streak, is a full handshake with the default groups: a fault
// that only a full handshake shows keeps failing, and a server that
// dropped the learned group fails one probe, not a streak.

// tlsEndpoint is what a remembered session is valid for: the address
// dialled, the server name verified and the roots that verified it.
type tlsEndpoint struct {
	target, serverName string
	roots              *x509.CertPool // nil: the system roots
}

// tlsMemory is one endpoint's last full handshake.
type tlsMemory struct {
	full    time.Time               // when it completed
	group   tls.CurveID             // the key exchange group the server chose
	session *tls.ClientSessionState // its ticket, once the server sent one
}

// tlsSessionStore remembers the last full handshake of each endpoint.
type tlsSessionStore struct {
	now func() time.Time
	// observe, when set (tests), sees every handshake done records.
	observe func(tls.ConnectionState)

	mu sync.Mutex
	m  map[tlsEndpoint]*tlsMemory
}

// tlsMaxEndpoints bounds the store: a watcher probes a few hundred
// endpoints; past this, the memory of the oldest full handshake goes.
const tlsMaxEndpoints = 4096

// tlsSessions is the process's store, shared by every http probe, as
// connCACache is.
var tlsSessions = &tlsSessionStore{now: time.Now, m: map[tlsEndpoint]*tlsMemory{}}

// config sets cfg up for a probe of ep that may resume for resumeFor: a
// session cache for ep alone, and, while ep's last full handshake is
// younger than resumeFor, the one group its server chose.
func (s *tlsSessionStore) config(cfg *tls.Config, ep tlsEndpoint, resumeFor time.Duration) {
	if resumeFor <= 0 {
		return
	}
	cfg.ClientSessionCache = tlsEndpointCache{s: s, ep: ep, resumeFor: resumeFor}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.fresh(ep, resumeFor); m != nil && m.group != 0 {
		cfg.CurvePreferences = []tls.CurveID{m.group}
	}
}

// fresh is ep's memory while younger than resumeFor; an older one is
// dropped. Called with mu held.
func (s *tlsSessionStore) fresh(ep tlsEndpoint, resumeFor time.Duration) *tlsMemory {
	m := s.m[ep]
	if m == nil {
		return nil
	}
	if m.full.IsZero() {
		return nil // a ticket whose handshake done has not recorded yet
	}
	if s.now().Sub(m.full) >= resumeFor {
		delete(s.m, ep)
		return nil
	}
	return m
}

// done records a probe's handshake: a full one (not resumed) starts a new
// memory of ep with the group the server chose.
func (s *tlsSessionStore) done(ep tlsEndpoint, st tls.ConnectionState) {
	if s.observe != nil {
		s.observe(st)
	}
	if st.DidResume {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.m[ep]
	if m == nil {
		if len(s.m) >= tlsMaxEndpoints {
			s.evict()
		}
		m = &tlsMemory{}
		s.m[ep] = m
	}
	m.full, m.group = s.now(), st.CurveID
}

// forget drops ep's memory: its next probe makes a full handshake with
// the default groups.
func (s *tlsSessionStore) forget(ep tlsEndpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, ep)
}

// evict makes room: the oldest memory goes. Called with mu held.
func (s *tlsSessionStore) evict() {
	var oldest tlsEndpoint
	var at time.Time
	for ep, m := range s.m {
		if at.IsZero() || m.full.Before(at) {
			oldest, at = ep, m.full
		}
	}
	delete(s.m, oldest)
}

// tlsEndpointCache is the tls.ClientSessionCache of one probe run: it
// holds ep's ticket only, whatever key crypto/tls asks for (its key is
// the server name, which a site's primary and backup share).
type tlsEndpointCache struct {
	s         *tlsSessionStore
	ep        tlsEndpoint
	resumeFor time.Duration
}

func (c tlsEndpointCache) Get(string) (*tls.ClientSessionState, bool) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	m := c.s.fresh(c.ep, c.resumeFor)
	if m == nil || m.session == nil {
		return nil, false
	}
	return m.session, true
}

// Put keeps a ticket of the session ep's last full handshake started, and
// drops the ticket crypto/tls gives up on (nil).
func (c tlsEndpointCache) Put(_ string, cs *tls.ClientSessionState) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	m := c.s.m[c.ep]
	if cs == nil {
		if m != nil {
			m.session = nil
		}
		return
	}
	if m == nil {
		// The ticket arrives with the answer, before done records the
		// handshake that issued it; until then the memory is no full
		// handshake's (a zero full is never fresh), so a ticket of a
		// resumed session never extends TLSResume.
		if len(c.s.m) >= tlsMaxEndpoints {
			c.s.evict()
		}
		m = &tlsMemory{}
		c.s.m[c.ep] = m
	}
	m.session = cs
}
