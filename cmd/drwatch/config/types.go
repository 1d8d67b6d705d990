package config

import (
	"fmt"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate/all"
	"github.com/drwatch/drwatch/executor/remediate/hooks"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/regularfile"
	"github.com/drwatch/drwatch/monitor/clusterhealth"
	"github.com/drwatch/drwatch/probes"
	"reflect"
	"time"
)

// Config is one watcher node's configuration file.
type Config struct {
	Node   Node                `yaml:"node" doc:"This watcher's identity and listen addresses."`
	TLS    TLS                 `yaml:"tls" doc:"Mutual TLS for the Raft transport, the cluster RPC and the HTTP API."`
	Peers  []Peer              `yaml:"peers" doc:"Every watcher of the cluster, this one included (three, or five)."`
	API    API                 `yaml:"api" doc:"The HTTP API and status page."`
	Raft   cluster.RaftTiming  `yaml:"raft" doc:"Raft timing. The defaults suit three sites across a WAN."`
	Policy failover.PolicySpec `yaml:"policy" doc:"When to fail over. Replicated: the leader proposes it and every node decides by the same rules."`
	Sites  Sites               `yaml:"sites" doc:"The probes of the primary and the backup site."`
	DNS    DNS                 `yaml:"dns" doc:"The records drwatch flips and the authoritative DNS that serves them."`
	// Groups are the failover groups besides the default one that sites
	// and dns.records describe.
	Groups []Group `yaml:"groups" doc:"Failover groups: platforms that each fail over as a unit, with their own probes, records, fence and failback. Without groups the top-level sites and dns.records are the one group, named default; with groups and no dns.records there is no default group. A probe named on the same site by several groups (a region's Kubernetes API) must be defined the same in each (only critical may differ): it runs once per round. A group writes in its own zone and fence through the dns section's provider and verification, or through a provider of its own (groups[].dns.provider) for records at another provider or server. Replicated as part of the policy; a config without groups keeps its policy hash."`
	// Remediations are the leader's repairs; each is off unless enabled.
	Remediations all.Config `yaml:"remediations" doc:"Repairs the leader runs in its reconciliation loop; each is off (or dry-run) until enabled."`
	// Hooks run around a flip.
	Hooks hooks.Config `yaml:"hooks" doc:"Commands or signed webhooks run before and after a flip."`
	// ClusterHealth tunes the read-only Cluster health section; the clusters
	// are those of remediations.kubernetes.
	ClusterHealth clusterhealth.Config `yaml:"cluster_health" doc:"Every watcher reads each site's cluster named in remediations.kubernetes (read-only) for the status page's Cluster health section, metrics and alerts; never for a decision."`
	Drill         Drill                `yaml:"drill" doc:"Rehearsals of the failover on a canary record (drwatch drill), by hand or on a schedule. Not replicated: a config without it keeps its policy hash."`
	Log           Log                  `yaml:"log" doc:"Logging."`
}

// Node is this watcher's identity.
type Node struct {
	ID       string `yaml:"id" doc:"Node ID; must appear in peers. Also the identity its certificate must carry."`
	DataDir  string `yaml:"data_dir" default:"/var/lib/drwatch" doc:"Raft log, stable store and snapshots."`
	RaftAddr string `yaml:"raft_addr" doc:"host:port the Raft transport and cluster RPC listen on (mTLS)."`
	APIAddr  string `yaml:"api_addr" doc:"host:port the HTTP API and status page listen on (TLS)."`
}

// TLS names the PEM files for mutual TLS.
type TLS struct {
	CAFile   string `yaml:"ca_file" doc:"The cluster CA bundle that peer and client certificates must chain to."`
	CertFile string `yaml:"cert_file" doc:"This node's certificate; its SAN carries the node ID."`
	KeyFile  string `yaml:"key_file" doc:"This node's private key (mode 0600)."`
}

// Peer is one member of the cluster.
type Peer struct {
	ID       string `yaml:"id" doc:"Node ID."`
	RaftAddr string `yaml:"raft_addr" doc:"host:port of its Raft transport, as the other nodes reach it."`
	APIAddr  string `yaml:"api_addr" doc:"host:port of its HTTP API, as the CLI and the other nodes reach it."`
}

// API configures the HTTP API.
type API struct {
	TokensFile   string `yaml:"tokens_file" doc:"Bearer tokens for write calls, one 'actor:token' or 'actor:token:role' per line ('#' comments allowed), role read, operate or admin (no role: admin, full power as before roles); a line with a bare token is an error. Required: without it no write is accepted."`
	MaxBodyBytes int64  `yaml:"max_body_bytes" default:"65536" doc:"Largest request body accepted."`
	ClientCerts  string `yaml:"client_certs" default:"optional" doc:"optional: anyone who reaches the port may read (writes still need a token); required: every connection must present a client certificate from the cluster CA (drwatch certs issue NAME --client), reads and probes of /livez, /readyz and /metrics included."`
}

// Sites holds the two sites.
type Sites struct {
	Primary Site `yaml:"primary" doc:"The site that normally takes traffic."`
	Backup  Site `yaml:"backup" doc:"The disaster-recovery site."`
}

// Site lists the probes of one site.
type Site struct {
	Probes []probes.Spec `yaml:"probes" doc:"At least one probe, and at least one critical."`
}

// Specs are the scheduler's input: the probes of both sites, as configured.
func (s Sites) Specs() []probes.SiteSpec {
	return []probes.SiteSpec{
		probes.ConfiguredSite(string(failover.Primary), s.Primary.Probes),
		probes.ConfiguredSite(string(failover.Backup), s.Backup.Probes),
	}
}

// DNS is the dns section: the provider, the zone and the verification are
// dnsprovider's to decode, default and check; the records to flip are the
// decision core's.
type DNS struct {
	dnsprovider.Config `yaml:",inline"`
	Records            []failover.Record `yaml:"records" doc:"The records to flip. Each has targets for both sites."`
	BreakGlass         BreakGlass        `yaml:"break_glass" doc:"The key that signs break-glass markers (drwatch dns set --no-quorum). Not replicated. Without it no marker is trusted: each is recorded as break_glass_rejected and changes nothing."`
}

// BreakGlass is dns.break_glass: the key a break-glass write is signed
// with and how old its marker may be when a leader finds it. The leader
// trusts a marker only when it verifies under this key (docs/security.md).
type BreakGlass struct {
	KeyFile string        `yaml:"key_file" doc:"File holding the break-glass HMAC-SHA256 key in base64, at least 32 bytes (head -c 32 /dev/urandom | base64). The same key on every node and with the operators who run dns set; never give it to anything that only needs to write DNS (an ACME solver, CI)."`
	MaxAge  time.Duration `yaml:"max_age" default:"72h" doc:"A marker older than this when the leader finds it (or more than 5m in its future) is recorded as stale and changes nothing."`
}

// Group is one entry of groups: a platform that fails over as a unit. The
// nodes, quorum, fall, rise and intervals are the policy section's, shared
// by every group; the rest is its own, defaulting to the policy's.
type Group struct {
	Name          string        `yaml:"name" doc:"The group's name: 1 to 63 lower-case letters, digits and '-', starting with a letter; not default. Commands take it with --group."`
	Sites         Sites         `yaml:"sites" doc:"The group's probes of its primary and backup site, as the top-level sites."`
	DNS           GroupDNS      `yaml:"dns" doc:"The records the group flips, in its zone, fenced on its own record."`
	AutoFailover  *bool         `yaml:"auto_failover" default:"(policy.auto_failover)" doc:"As policy.auto_failover, for this group."`
	BlockWindow   time.Duration `yaml:"block_window" default:"(policy.block_window)" doc:"As policy.block_window, for this group."`
	Failback      string        `yaml:"failback" default:"(policy.failback)" doc:"As policy.failback, for this group."`
	FailbackAfter time.Duration `yaml:"failback_after" default:"(policy.failback_after, when failback is not set)" doc:"As policy.failback_after, for this group."`
	FailbackGate  []string      `yaml:"failback_gate" doc:"As policy.failback_gate: primary probes of this group that must be UP at quorum before its failback."`
	// Remediations are the group's own repairs, run by a runner of their
	// own on the group's decision.
	Remediations all.Config `yaml:"remediations" docref:"remediations" doc:"The group's own repairs: every field of the top-level remediations section, each repair off until enabled, run on the leader by a runner of the group's own, on the group's decision, with its own caps and budgets (records carry the group). A repair that disrupts nodes (dead_node_out_of_service, orphaned_pods, openstack.never_ready_instances) may be enabled for one Kubernetes cluster (kubeconfig_file and context) in one section only: each runner has its own node disruption budget."`
	// Hooks run around the group's own flips, as the top-level hooks do
	// around the default group's.
	Hooks hooks.Config `yaml:"hooks" docref:"hooks" doc:"The group's own hooks: every field of the top-level hooks section, none by default, run around this group's flips only (the top-level hooks run around the default group's only). Each is told the group: DRWATCH_GROUP for a command, the body's group field for a webhook. Its pre_failover hooks run after the group's own backup warm-up."`
}

// GroupDNS is a group's dns section. Without a provider of its own the
// group writes through the top-level dns section's provider, credentials
// and verification, in its own zone; with one, through its own, by the
// same types and rules. A provider is no part of the replicated policy:
// the zone and records are.
type GroupDNS struct {
	Zone      string            `yaml:"zone" default:"(dns.zone)" doc:"The zone of the group's records, fully qualified, served by the group's provider (the dns section's unless provider is set)."`
	FenceName string            `yaml:"fence" default:"(_drwatch-NAME)" doc:"The group's fence TXT record, relative to its zone; distinct from every other group's fence in that zone, so one group's decision never fences another's."`
	Records   []failover.Record `yaml:"records" doc:"The records the group flips: at least one, each with targets for both sites, none another group's."`
	Provider  string            `yaml:"provider" default:"(dns.provider)" doc:"A provider of the group's own, for records in another zone or at another provider: one of dns.provider's values, with its section beside it (groups[].dns.rfc2136, ...). Unset: the group writes through the dns section's provider and credentials, and sets no provider section of its own. Not replicated: a config that adds one keeps its policy hash."`
	// Verify is the group's verification; nil: the dns section's without
	// a provider of its own (derive sets it when the group names one).
	Verify *dnsprovider.VerifyConfig `yaml:"verify" docref:"dns.verify" default:"(dns.verify, or with provider its zone's NS set)" doc:"How the group's records are checked at every authoritative server. Unset: dns.verify without a provider of the group's own; with one, the group zone's NS set (found through its rfc2136 server), timeout 30s."`
	// Sections are the provider sections; only Provider's may be set.
	dnsprovider.Sections `yaml:",inline" docref:"dns"`
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level" default:"info" doc:"debug, info, warn or error."`
	Format string `yaml:"format" default:"text" doc:"text or json."`
}

var probeStructType = reflect.TypeOf(probes.Spec{})

// Key reads the break-glass key from KeyFile; nil and no error when none is
// configured (then no marker is trusted). Errors name the field, never the
// path (it may be a secret pasted where the path belongs) nor the file.
func (b BreakGlass) Key() ([]byte, error) {
	if b.KeyFile == "" {
		return nil, nil
	}
	raw, err := regularfile.Read("dns.break_glass.key_file", b.KeyFile)
	if err != nil {
		return nil, err
	}
	key, err := reconcile.ParseBreakGlassKey(raw)
	if err != nil {
		return nil, fmt.Errorf("dns.break_glass.key_file: %w", err)
	}
	return key, nil
}
