package config

import (
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/dnsname"
)

// Drill is the drill section: the canary record a drill moves, how often
// the leader runs one by itself, and what the readiness checks demand. It
// is not part of the replicated policy, so a config without it hashes as
// it did before drills existed.
type Drill struct {
	Record          string        `yaml:"record" default:"drwatch-drill.<first record>" doc:"The canary record a drill flips to the backup values and back, relative to dns.zone or fully qualified inside it; same zone and provider as dns.records, never one of them. Its values and TTL mirror the first record. For A and AAAA a host name, without '_': BIND's default check-names refuses such an owner."`
	Schedule        string        `yaml:"schedule" default:"off" doc:"How often the leader runs a drill by itself: a duration such as 168h (weekly), or off. A drill that a rule refuses is recorded as skipped."`
	CertMinValidity time.Duration `yaml:"cert_min_validity" default:"336h" doc:"A drill's certificate check fails when a backup certificate for a public name expires sooner than this."`
	RTOBudget       time.Duration `yaml:"rto_budget" default:"5m" doc:"A drill's 'ttl vs rto budget' check fails when the worst detection, the decision and write and the propagation the drill measured, plus the records' longest TTL, add up to more than this."`
}

// Drill schedule bounds: a drill writes DNS, so not more often than
// hourly; and at least yearly.
const (
	minDrillSchedule = time.Hour
	maxDrillSchedule = failover.MaxWindow
)

// ScheduleInterval is the schedule as an interval, 0 when off.
func (d Drill) ScheduleInterval() time.Duration {
	if d.Schedule == "off" || d.Schedule == "" {
		return 0
	}
	iv, err := time.ParseDuration(d.Schedule)
	if err != nil {
		return 0
	}
	return iv
}

// Canary is the drill's canary record under policy p: the drill record,
// mirroring the first managed record.
func (c *Config) Canary(p failover.Policy) failover.DrillCanary {
	return failover.CanaryFor(p, c.Drill.Record)
}

// DrillFence is the fence TXT record of drills, relative to the zone: the
// production fence's name with "-drill", so a drill never bumps the fence
// the production reconciler writes with.
func (c *Config) DrillFence() string {
	f := c.DNS.FenceName
	if f == "" {
		f = "_drwatch"
	}
	return f + "-drill"
}

// deriveDrill defaults the canary record to drwatch-drill.<first record>.
func deriveDrill(c *Config, present func(string) bool) {
	if present("drill.record") {
		return
	}
	c.Drill.Record = ""
	switch {
	case len(c.DNS.Records) == 0:
	case c.DNS.Records[0].Name == "@":
		c.Drill.Record = "drwatch-drill"
	default:
		c.Drill.Record = "drwatch-drill." + c.DNS.Records[0].Name
	}
}

func (v *validator) drill(c *Config) {
	d := c.Drill
	switch iv, err := time.ParseDuration(d.Schedule); {
	case d.Schedule == "off":
	case err != nil:
		v.add("drill.schedule", "%q must be a duration such as 168h, or off", d.Schedule)
	case iv < minDrillSchedule || iv > maxDrillSchedule:
		v.add("drill.schedule", "%s must be between %s and %s, or off", iv, minDrillSchedule, maxDrillSchedule)
	}
	if d.CertMinValidity <= 0 || d.CertMinValidity > failover.MaxWindow {
		v.add("drill.cert_min_validity", "%s must be > 0 and ≤ %s", d.CertMinValidity, failover.MaxWindow)
	}
	if d.RTOBudget <= 0 || d.RTOBudget > failover.MaxWindow {
		v.add("drill.rto_budget", "%s must be > 0 and ≤ %s", d.RTOBudget, failover.MaxWindow)
	}
	if !v.required("drill.record", d.Record) || !dnsname.IsDomainName(c.DNS.Zone) {
		return
	}
	fq, ok := qualify(d.Record, c.DNS.Zone)
	if !ok || !dnsname.InZone(fq, strings.ToLower(dnsname.Absolute("@", c.DNS.Zone))) {
		v.add("drill.record", "%q is not in zone %s", d.Record, c.DNS.Zone)
		return
	}
	if len(c.DNS.Records) > 0 && c.DNS.Records[0].Type != "CNAME" && strings.Contains(fq, "_") {
		v.add("drill.record", "%q holds '_': the canary is an %s record, and BIND's default check-names refuses a host record whose name is not a host name", d.Record, c.DNS.Records[0].Type)
	}
	for _, r := range c.DNS.Records {
		if rq, _ := qualify(r.Name, c.DNS.Zone); rq == fq {
			v.add("drill.record", "%q is the managed record %s: a drill never moves a production record", d.Record, r.Name)
			return
		}
	}
	for _, f := range []string{c.DNS.FenceName, c.DrillFence()} {
		if fence, _ := qualify(f, c.DNS.Zone); f != "" && fence == fq {
			v.add("drill.record", "%q is a fence record", d.Record)
			return
		}
	}
}
