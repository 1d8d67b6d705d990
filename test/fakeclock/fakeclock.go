package fakeclock

import (
	"sync"
	"time"
)

// Clock is a time that moves only when Add is called. Safe for
// concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// At returns a Clock standing at t.
func At(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d (backwards when d is negative).
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
