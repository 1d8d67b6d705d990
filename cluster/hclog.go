package cluster

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter feeds hashicorp/raft's hclog output into the node's
// *slog.Logger, so the library never writes to stderr on its own.
//
// raft repeats some warnings for as long as a peer is unreachable (every
// HeartbeatTimeout/2 for heartbeats). Warnings and errors that name a peer
// are therefore rate-limited per (message, peer), like refusals; the next
// line that gets through says how many were suppressed.
type hclogAdapter struct {
	l        *slog.Logger
	name     string
	implied  []any
	limit    *repeatLimiter
	departed *departures // peers that stopped in order; nil: none
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func newHCLog(l *slog.Logger, limit *repeatLimiter, departed *departures) hclog.Logger {
	return &hclogAdapter{l: l, limit: limit, departed: departed}
}

// repeatLimiter lets one line per key through per interval and counts the rest.
type repeatLimiter struct {
	log        refusalLog
	mu         sync.Mutex
	suppressed map[string]int
}

func newRepeatLimiter(interval time.Duration) *repeatLimiter {
	return &repeatLimiter{log: refusalLog{interval: interval, last: map[string]time.Time{}}, suppressed: map[string]int{}}
}

// allow reports whether to log key now, and how many were suppressed since.
func (r *repeatLimiter) allow(key string) (bool, int) {
	ok := r.log.allow(key, time.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok {
		if len(r.suppressed) < maxRefusalKeys {
			r.suppressed[key]++
		}
		return false, 0
	}
	n := r.suppressed[key]
	delete(r.suppressed, key)
	return true, n
}

// peerKey is the peer a raft log line is about, if any.
func peerKey(args []any) (string, bool) {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && (k == "peer" || k == "target" || k == "server-id" || k == "candidate") {
			return fmt.Sprint(args[i+1]), true
		}
	}
	return "", false
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// raftLevels re-grades raft messages whose level says "a human must act"
// for what is a normal, self-healing state change.
var raftLevels = map[string]hclog.Level{
	// A leader learns that a peer has a newer term: it was deposed, and it
	// steps down. Every leadership transfer (a graceful shutdown hands
	// leadership over) ends with it, and after a partition heals it is
	// the cluster recovering.
	"peer has newer term, stopping replication": hclog.Warn,
}

func (h *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if l, ok := raftLevels[msg]; ok {
		level = l
	}
	// A peer that stopped in order is not an error to reach; its lines
	// stay rate-limited as the warnings they were.
	limited := level >= hclog.Warn
	if peer, ok := peerKey(args); ok {
		if l, id, quiet := h.departed.quietLevel(msg, level, peer); quiet {
			level = l
			args = append(args, "stopped_in_order", id)
		}
	}
	lv := slogLevel(level)
	ctx := context.Background()
	if !h.l.Enabled(ctx, lv) {
		return
	}
	if limited && h.limit != nil {
		if peer, ok := peerKey(args); ok {
			allow, n := h.limit.allow(msg + "|" + peer)
			if !allow {
				return
			}
			if n > 0 {
				args = append(args, "suppressed", n)
			}
		}
	}
	// raft's messages start upper-case sometimes; our convention is lower-case.
	msg = strings.ToLower(msg[:min(1, len(msg))]) + msg[min(1, len(msg)):]
	h.l.Log(ctx, lv, msg, render(append(append([]any(nil), h.implied...), args...))...)
}

// render formats the values raft wraps in hclog.Fmt, which slog would
// otherwise print as a slice with the bare format string in it.
func render(args []any) []any {
	for i, a := range args {
		if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			if format, ok := f[0].(string); ok {
				args[i] = fmt.Sprintf(format, f[1:]...)
			}
		}
	}
	return args
}

func (h *hclogAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogAdapter) enabled(l hclog.Level) bool {
	return h.l.Enabled(context.Background(), slogLevel(l))
}
func (h *hclogAdapter) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hclogAdapter) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hclogAdapter) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hclogAdapter) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hclogAdapter) IsError() bool { return h.enabled(hclog.Error) }

func (h *hclogAdapter) ImpliedArgs() []any { return h.implied }
func (h *hclogAdapter) With(args ...any) hclog.Logger {
	return &hclogAdapter{l: h.l, name: h.name, implied: append(append([]any(nil), h.implied...), args...), limit: h.limit, departed: h.departed}
}
func (h *hclogAdapter) Name() string { return h.name }
func (h *hclogAdapter) Named(name string) hclog.Logger {
	n := name
	if h.name != "" {
		n = h.name + "." + name
	}
	return h.ResetNamed(n)
}
func (h *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return &hclogAdapter{l: h.l.With("component", name), name: name, implied: h.implied, limit: h.limit, departed: h.departed}
}
func (h *hclogAdapter) SetLevel(hclog.Level) {} // the slog handler owns the level
func (h *hclogAdapter) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn} {
		if h.enabled(l) {
			return l
		}
	}
	return hclog.Error
}
func (h *hclogAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.l.Handler(), slog.LevelInfo)
}
func (h *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(nil).Writer()
}
