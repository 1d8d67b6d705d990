package cluster

import (
	"fmt"
	"math"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are read from raft at scrape time (GaugeFunc), so no goroutine
// polls raft and a scrape never waits on it.
type metrics struct {
	leaderChanges prometheus.Counter
	refused       prometheus.Counter
	collectors    []prometheus.Collector
	reg           prometheus.Registerer
}

func newMetrics(n *Node) *metrics {
	m := &metrics{
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drwatch_raft_leader_changes_total",
			Help: "Times this node saw a new leader elected.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drwatch_raft_refused_connections_total",
			Help: "Raft/RPC connections refused or failed at the TLS handshake, both directions.",
		}),
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	live := func() bool { return n.raft != nil && n.life.Err() == nil }
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if !live() {
				return 0
			}
			return f()
		})
	}
	m.collectors = []prometheus.Collector{
		m.leaderChanges, m.refused,
		gauge("drwatch_raft_is_leader", "1 if this node is the raft leader.", func() float64 {
			return b2f(n.raft.State() == raft.Leader)
		}),
		gauge("drwatch_raft_has_leader", "1 if this node knows a leader.", func() float64 {
			id, _ := n.Leader()
			return b2f(id != "")
		}),
		gauge("drwatch_raft_term", "Current raft term.", func() float64 { return float64(n.raft.CurrentTerm()) }),
		gauge("drwatch_raft_commit_index", "Highest log index known committed.", func() float64 { return float64(n.raft.CommitIndex()) }),
		gauge("drwatch_raft_applied_index", "Highest log index applied to the state machine.", func() float64 { return float64(n.raft.AppliedIndex()) }),
		gauge("drwatch_raft_last_contact_seconds", "Seconds since the leader was last heard from; 0 on the leader, +Inf if never.", func() float64 {
			d := n.lastContact()
			if d < 0 {
				return math.Inf(1)
			}
			return d.Seconds()
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "drwatch_raft_log_appended_entries_total",
			Help: "Log entries this node stored; on a follower, the entries the leader replicated to it.",
		}, func() float64 { return float64(n.store.appendedEntries.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "drwatch_raft_log_appended_bytes_total",
			Help: "Bytes of command data in the log entries this node stored (the payload replicated to a follower, without raft's framing or TLS).",
		}, func() float64 { return float64(n.store.appendedBytes.Load()) }),
		gauge("drwatch_raft_peers", "Servers in the latest raft configuration, this node included.", func() float64 {
			return float64(len(n.servers()))
		}),
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("register cluster metrics: %w", err)
		}
	}
	m.reg = reg
	return nil
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
	m.reg = nil
}
