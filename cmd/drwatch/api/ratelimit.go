package api

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// WriteLimit is a token bucket: an actor may make Burst writes at once,
// and one more each Every after that.
type WriteLimit struct {
	Burst int
	Every time.Duration
}

func (l WriteLimit) String() string {
	return fmt.Sprintf("at most %d at once, then one every %s", l.Burst, l.Every)
}

// WriteLimits bound the writes each actor may commit through one watcher's
// API, so that no token can flood the replicated log and its history.
// Routine and moves are separate buckets: a burst of pauses never uses up
// the failover an operator needs next. A zero field takes its default
// from DefaultWriteLimits.
type WriteLimits struct {
	// Routine bounds pause, resume, ack and drill.
	Routine WriteLimit
	// Moves bounds failover, failback, switchover, members add and
	// members remove.
	Moves WriteLimit
}

// DefaultWriteLimits are generous for people, who pause, resume and ack a
// handful of times in an incident and move traffic once or twice, and
// hold a stolen or runaway token to a trickle: at most 20 routine entries
// and 10 moves at once, then 6 and 1 a minute.
var DefaultWriteLimits = WriteLimits{
	Routine: WriteLimit{Burst: 20, Every: 10 * time.Second},
	Moves:   WriteLimit{Burst: 10, Every: time.Minute},
}

func (l WriteLimit) orDefault(d WriteLimit) WriteLimit {
	if l.Burst <= 0 || l.Every <= 0 {
		return d
	}
	return l
}

// maxBuckets bounds the actors a writeLimiter tracks. Only actors of valid
// tokens reach it, so the tokens file bounds them already; past this many,
// the buckets that have refilled (the same as no bucket) are dropped.
const maxBuckets = 1024

// writeLimiter is one WriteLimit per actor. It is safe for concurrent use.
type writeLimiter struct {
	limit   WriteLimit
	mu      sync.Mutex
	buckets map[string]*bucket
}

// bucket is one actor's tokens as of at.
type bucket struct {
	tokens float64
	at     time.Time
}

func newWriteLimiter(l WriteLimit) *writeLimiter {
	return &writeLimiter{limit: l, buckets: map[string]*bucket{}}
}

// refill returns b's tokens at now.
func (l *writeLimiter) refill(b *bucket, now time.Time) float64 {
	dt := max(now.Sub(b.at), 0)
	return min(float64(l.limit.Burst), b.tokens+float64(dt)/float64(l.limit.Every))
}

// take charges one write by actor at now. When the actor's bucket is empty
// it charges nothing and returns how long until the next write is allowed.
func (l *writeLimiter) take(actor string, now time.Time) (retry time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[actor]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			for k, o := range l.buckets {
				if l.refill(o, now) >= float64(l.limit.Burst) {
					delete(l.buckets, k)
				}
			}
		}
		b = &bucket{tokens: float64(l.limit.Burst), at: now}
		l.buckets[actor] = b
	}
	if now.After(b.at) {
		b.tokens, b.at = l.refill(b, now), now
	}
	if b.tokens < 1 {
		return time.Duration(math.Ceil((1 - b.tokens) * float64(l.limit.Every))), false
	}
	b.tokens--
	return 0, true
}
