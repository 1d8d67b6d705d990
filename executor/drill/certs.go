package drill

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/dnsname"
	"github.com/drwatch/drwatch/probes"
)

// CertTarget is one public name whose certificate the backup must serve.
type CertTarget struct {
	// Name is the public name: the SNI and the name verified.
	Name string
	// Address is the backup's host:port for it; "" when none is known,
	// which fails the check (fail closed).
	Address string
	// CAFile is the PEM bundle the probes trust for the name; "" means the
	// system roots.
	CAFile string
}

// CertTargets lists the public names to check at the backup: the host of
// every https probe URL of either site, once each, sorted. The backup's
// address for a name is the connect_to of the backup site's probe of that
// name (with the URL's port when connect_to has none); failing that, each
// backup value of the policy's records of that name, at the URL's port.
// A backup probe without connect_to would resolve the name, which points
// at the active site: it gives no address. A name with no address at all
// is listed with Address "", and its check fails saying so.
func CertTargets(sites []probes.SiteSpec, policy failover.Policy) []CertTarget {
	type seen struct {
		port, ca string
		addrs    []string
	}
	names := map[string]*seen{}
	for _, site := range sites {
		for _, p := range site.Probes {
			if p.HTTP == nil {
				continue
			}
			u, err := url.Parse(p.HTTP.URL)
			if err != nil || u.Scheme != "https" || u.Hostname() == "" {
				continue
			}
			host := strings.ToLower(u.Hostname())
			n := names[host]
			if n == nil {
				n = &seen{port: cmp.Or(u.Port(), "443")}
				names[host] = n
			}
			if site.Site == string(failover.Backup) {
				n.ca = cmp.Or(p.HTTP.CAFile, n.ca)
				if p.HTTP.ConnectTo != "" {
					n.addrs = append(n.addrs, dialTarget(p.HTTP.ConnectTo, n.port))
				}
			} else if n.ca == "" {
				n.ca = p.HTTP.CAFile
			}
		}
	}
	var out []CertTarget
	for _, host := range slices.Sorted(maps.Keys(names)) {
		n := names[host]
		addrs := n.addrs
		if len(addrs) == 0 {
			addrs = recordAddrs(policy, host, n.port)
		}
		if len(addrs) == 0 {
			out = append(out, CertTarget{Name: host, CAFile: n.ca})
		}
		slices.Sort(addrs)
		for _, a := range slices.Compact(addrs) {
			out = append(out, CertTarget{Name: host, Address: a, CAFile: n.ca})
		}
	}
	return out
}

// dialTarget is connect_to with port when it names none (as the http
// probe dials).
func dialTarget(connectTo, port string) string {
	if _, _, err := net.SplitHostPort(connectTo); err == nil {
		return connectTo
	}
	return net.JoinHostPort(strings.Trim(connectTo, "[]"), port)
}

// recordAddrs are the backup values of the policy's records named host,
// each at port.
func recordAddrs(p failover.Policy, host, port string) []string {
	zone := dnsname.Absolute("@", p.Zone)
	var out []string
	for _, r := range p.Records {
		if !strings.EqualFold(dnsname.Absolute(r.Name, zone), host+".") {
			continue
		}
		for _, v := range r.Backup {
			out = append(out, net.JoinHostPort(strings.TrimSuffix(v, "."), port))
		}
	}
	return out
}

// CertificateChecks connects to each target's backup address with the
// public name as SNI and verifies the chain and the name against the
// target's CA (or the system roots), as the probes do: the tcp prober
// itself runs the handshake, with minValidity as its cert_min_validity, so
// a certificate passes only with at least minValidity left. Each attempt
// is bounded by timeout. Reasons name the host, the address and the
// expiry. now only words the time left.
func CertificateChecks(ctx context.Context, targets []CertTarget, minValidity, timeout time.Duration, now time.Time) []Check {
	if len(targets) == 0 {
		return []Check{{Name: "certificates", Pass: false,
			Reason: "no public name to check: no site has an https probe, so nothing proves the backup can serve TLS"}}
	}
	out := make([]Check, 0, len(targets))
	for _, t := range targets {
		out = append(out, certificateCheck(ctx, t, minValidity, timeout, now))
	}
	return out
}

func certificateCheck(ctx context.Context, t CertTarget, minValidity, timeout time.Duration, now time.Time) Check {
	c := Check{Name: "certificate " + t.Name}
	if t.Address == "" {
		c.Reason = fmt.Sprintf("%s: no backup address known (give the backup site a probe of https://%s/ with connect_to, or a record of that name)", t.Name, t.Name)
		return c
	}
	spec := probes.Spec{Name: "drill-certificate", Type: "tcp", Timeout: timeout,
		TCP: &probes.TCPSpec{Address: t.Address, TLS: true, ServerName: t.Name, CAFile: t.CAFile, CertMinValidity: minValidity}}
	r := probes.ProbeTCP(ctx, spec, slog.New(slog.DiscardHandler))
	expiry := ""
	if !r.CertExpiry.IsZero() {
		expiry = fmt.Sprintf("certificate expires %s (%s left)", r.CertExpiry.UTC().Format(time.RFC3339), r.CertExpiry.Sub(now).Round(time.Second))
	}
	if r.OK {
		c.Pass = true
		c.Reason = fmt.Sprintf("%s at %s: %s, want at least %s", t.Name, t.Address, expiry, minValidity)
		return c
	}
	c.Reason = fmt.Sprintf("%s at %s: %s (%s)", t.Name, t.Address, r.Reason, r.Class)
	if expiry != "" && r.Class != probes.ClassCertExpiry {
		c.Reason += "; " + expiry
	}
	if r.Class == probes.ClassCertExpiry && !strings.Contains(r.Reason, "want at least") && !strings.Contains(r.Reason, "expired") {
		c.Reason += fmt.Sprintf("; want at least %s left", minValidity)
	}
	return c
}
