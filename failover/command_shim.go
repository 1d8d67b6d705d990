package failover

// The three methods below are the last of the per-type Command wrappers.
// cmd/drwatch/node still calls them, and that code is being moved out of
// cmd in a parallel change; they go once it has moved and builds
// Command{Payload: ...} like every other caller. Add no more.

// Command wraps o in a Command; At is left to the leader's Stamp.
func (o Observe) Command() Command { return Command{Payload: o} }

// Command wraps t in a Command; At is left to the leader's Stamp.
func (t Tick) Command() Command { return Command{Payload: t} }

// Command wraps p in a Command; At is left to the leader's Stamp.
func (p SetPolicy) Command() Command { return Command{Payload: p} }
