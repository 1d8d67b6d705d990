package openstacktest

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// serverPoll is how often WaitServer looks again.
const serverPoll = 250 * time.Millisecond

// changesSinceSlack covers Nova's updated_at, which has one-second
// resolution, when a server list asks for the changes since a waiter
// started.
const changesSinceSlack = 2 * time.Second

// serverBoard lets every WaitServer of a stack share one server list per
// poll. A GET of each waited-for server every half second, each answered by
// nova-api with a Neutron query of its own, made the polling itself the
// busiest thing on a two-core machine while tests booted a dozen servers
// side by side. A waiter reads its server once, then only the lists of the
// servers Nova changed since it started (changes-since, all tenants):
// whatever it waits for is a change, and a list started while another
// waiter's is in flight joins that one.
type serverBoard struct {
	mu sync.Mutex
	// waiters holds each running WaitServer's start, for the lists'
	// changes-since.
	waiters map[*int]time.Time
	// flight is closed when the list in flight ends; nil when none is.
	flight chan struct{}
	// The last list that ended.
	views   map[string]Server
	err     error
	started time.Time
}

// register records a waiter starting now and returns its key.
func (b *serverBoard) register(now time.Time) *int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiters == nil {
		b.waiters = map[*int]time.Time{}
	}
	k := new(int)
	b.waiters[k] = now
	return k
}

func (b *serverBoard) unregister(k *int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiters, k)
}

// changedServers returns a list of the servers changed since the earliest
// waiter started, by server ID, from a list that started after after, and
// when that list started.
func (s *Stack) changedServers(ctx context.Context, after time.Time) (map[string]Server, time.Time, error) {
	b := &s.nova.board
	for {
		b.mu.Lock()
		if b.flight == nil && b.started.After(after) {
			views, started, err := b.views, b.started, b.err
			b.mu.Unlock()
			return views, started, err
		}
		if ch := b.flight; ch != nil {
			b.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, time.Time{}, ctx.Err()
			}
			continue
		}
		ch, start := make(chan struct{}), time.Now()
		since := start
		for _, t := range b.waiters {
			if t.Before(since) {
				since = t
			}
		}
		b.flight = ch
		b.mu.Unlock()

		views, err := s.listServersChangedSince(ctx, since.Add(-changesSinceSlack))
		b.mu.Lock()
		b.views, b.err, b.started, b.flight = views, err, start, nil
		close(ch)
		b.mu.Unlock()
		return views, start, err
	}
}

// listServersChangedSince lists, as admin, every project's servers that
// Nova changed since t (deleted ones included).
func (s *Stack) listServersChangedSince(ctx context.Context, t time.Time) (map[string]Server, error) {
	q := url.Values{"all_tenants": {"1"}, "changes-since": {t.UTC().Format(time.RFC3339)}}
	var out struct {
		Servers []Server `json:"servers"`
	}
	if err := s.Nova(ctx, s.Admin, http.MethodGet, "/servers/detail?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	views := make(map[string]Server, len(out.Servers))
	for _, v := range out.Servers {
		views[v.ID] = v
	}
	return views, nil
}
