package config

import (
	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/clusterhealth"
	"github.com/drwatch/drwatch/failover/remediate/hooks"
	"github.com/drwatch/drwatch/probes"
	"reflect"
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
	// Remediations are the leader's repairs; each is off unless enabled.
	Remediations remediate.Config `yaml:"remediations" doc:"Repairs the leader runs in its reconciliation loop; each is off (or dry-run) until enabled."`
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
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level" default:"info" doc:"debug, info, warn or error."`
	Format string `yaml:"format" default:"text" doc:"text or json."`
}

var probeStructType = reflect.TypeOf(probes.Spec{})
