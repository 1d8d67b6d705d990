package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/dns/v2/recordsets"
	"github.com/gophercloud/gophercloud/v2/openstack/dns/v2/zones"
	"github.com/miekg/dns"
)

// DesignateConfig configures OpenStack Designate (DNS v2 API), typically in
// a region other than the primary site's, so the flip does not depend on the
// cloud that failed. Passwords and application credential secrets come from
// files only.
type DesignateConfig struct {
	AuthURL   string `yaml:"auth_url" doc:"Keystone v3 URL of the region that serves DNS."`
	Region    string `yaml:"region" doc:"Region of the Designate used (not the primary's)."`
	Interface string `yaml:"interface" default:"public" doc:"Endpoint interface: public, internal or admin."`
	// Application credentials replace username/password when set.
	ApplicationCredentialID         string        `yaml:"application_credential_id" doc:"Application credential ID (not secret)."`
	ApplicationCredentialSecretFile string        `yaml:"application_credential_secret_file" doc:"File holding the application credential secret."`
	Username                        string        `yaml:"username" doc:"User name, instead of an application credential."`
	UserDomainName                  string        `yaml:"user_domain_name" doc:"The user's domain."`
	ProjectName                     string        `yaml:"project_name" doc:"Project that owns the zone."`
	ProjectDomainName               string        `yaml:"project_domain_name" doc:"The project's domain."`
	PasswordFile                    string        `yaml:"password_file" doc:"File holding the user's password."`
	Timeout                         time.Duration `yaml:"-"`
}

// Designate writes recordsets through the Designate v2 API (gophercloud).
//
// It has no compare-and-swap: Designate's recordset update takes no
// precondition. What it does instead (a weak guard): SetRecords reads the
// recordsets, and right before each update re-reads that recordset and
// refuses with a *ConflictError if its version moved since the read; a
// create that Designate refuses as a duplicate (409: another writer
// created the recordset since the read) is a *ConflictError too. That
// narrows, but does not close, the window in which a concurrent writer's
// change is overwritten, and RRsets are written one by one, not atomically.
// Safe for concurrent use.
type Designate struct {
	zone string
	cfg  DesignateConfig
	log  *slog.Logger

	mu     sync.Mutex
	client *gophercloud.ServiceClient
	zoneID string
}

var _ Provider = (*Designate)(nil)

// NewDesignate builds the provider; it authenticates lazily on first use.
func NewDesignate(zone string, cfg DesignateConfig, log *slog.Logger) (*Designate, error) {
	var errs []error
	if cfg.AuthURL == "" {
		errs = append(errs, fmt.Errorf("%w: designate.auth_url is empty", ErrConfig))
	}
	if cfg.Region == "" {
		errs = append(errs, fmt.Errorf("%w: designate.region is empty", ErrConfig))
	}
	if cfg.ApplicationCredentialID == "" && cfg.Username == "" {
		errs = append(errs, fmt.Errorf("%w: designate needs username or application_credential_id", ErrConfig))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	zone = dns.CanonicalName(zone)
	return &Designate{zone: zone, cfg: cfg, log: log.With("zone", zone, "provider", "designate", "region", cfg.Region)}, nil
}

// Zone implements Provider.
func (d *Designate) Zone() string { return d.zone }

func (d *Designate) connect(ctx context.Context) (*gophercloud.ServiceClient, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		return d.client, d.zoneID, nil
	}
	opts := gophercloud.AuthOptions{
		IdentityEndpoint: d.cfg.AuthURL,
		Username:         d.cfg.Username,
		DomainName:       d.cfg.UserDomainName,
		AllowReauth:      true,
	}
	if d.cfg.ApplicationCredentialID != "" {
		sec, err := (Secret{File: d.cfg.ApplicationCredentialSecretFile}).Value()
		if err != nil {
			return nil, "", fmt.Errorf("designate application_credential_secret: %w", err)
		}
		opts = gophercloud.AuthOptions{IdentityEndpoint: d.cfg.AuthURL, ApplicationCredentialID: d.cfg.ApplicationCredentialID, ApplicationCredentialSecret: sec, AllowReauth: true}
	} else {
		pw, err := (Secret{File: d.cfg.PasswordFile}).Value()
		if err != nil {
			return nil, "", fmt.Errorf("designate password: %w", err)
		}
		opts.Password = pw
		opts.Scope = &gophercloud.AuthScope{ProjectName: d.cfg.ProjectName, DomainName: d.cfg.ProjectDomainName}
	}
	pc, err := openstack.AuthenticatedClient(ctx, opts)
	if err != nil {
		return nil, "", fmt.Errorf("designate auth: %w", classifyGophercloud(err))
	}
	avail := gophercloud.AvailabilityPublic
	switch d.cfg.Interface {
	case "internal":
		avail = gophercloud.AvailabilityInternal
	case "admin":
		avail = gophercloud.AvailabilityAdmin
	}
	sc, err := openstack.NewDNSV2(pc, gophercloud.EndpointOpts{Region: d.cfg.Region, Availability: avail})
	if err != nil {
		return nil, "", fmt.Errorf("designate endpoint in region %s: %w", d.cfg.Region, errors.Join(ErrConfig, err))
	}
	pages, err := zones.List(sc, zones.ListOpts{Name: d.zone}).AllPages(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("designate list zones: %w", classifyGophercloud(err))
	}
	zs, err := zones.ExtractZones(pages)
	if err != nil {
		return nil, "", fmt.Errorf("designate list zones: %w", errors.Join(ErrBadReply, err))
	}
	for _, z := range zs {
		if dns.CanonicalName(z.Name) == d.zone {
			d.client, d.zoneID = sc, z.ID
			return sc, z.ID, nil
		}
	}
	return nil, "", fmt.Errorf("designate: %w: zone %s not found in region %s", ErrWrongZone, d.zone, d.cfg.Region)
}

// recordsets lists the zone's recordsets keyed by (name, type).
func (d *Designate) recordsets(ctx context.Context) (map[RRsetID]recordsets.RecordSet, error) {
	sc, zid, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	pages, err := recordsets.ListByZone(sc, zid, recordsets.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("designate list recordsets: %w", classifyGophercloud(err))
	}
	rss, err := recordsets.ExtractRecordSets(pages)
	if err != nil {
		return nil, fmt.Errorf("designate list recordsets: %w", errors.Join(ErrBadReply, err))
	}
	out := map[RRsetID]recordsets.RecordSet{}
	for _, rs := range rss {
		if !inZone(rs.Name, d.zone) {
			return nil, fmt.Errorf("designate: %w: recordset %s outside %s", ErrWrongZone, rs.Name, d.zone)
		}
		out[normalizeID(RRsetID{Name: RelativeName(rs.Name, d.zone), Type: rs.Type}, d.zone)] = rs
	}
	return out, nil
}

func fromRecordSet(id RRsetID, rs recordsets.RecordSet) RRset {
	s := RRset{Name: id.Name, Type: id.Type, TTL: time.Duration(rs.TTL) * time.Second}
	for _, v := range rs.Records {
		if id.Type == "TXT" {
			v = unquoteTXT(v)
		}
		s.Values = append(s.Values, v)
	}
	return s
}

// GetRecords implements Provider (one list of the zone's recordsets).
func (d *Designate) GetRecords(ctx context.Context, want []RRsetID) ([]RRset, error) {
	have, err := d.recordsets(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RRset, len(want))
	for i, id := range want {
		nid := normalizeID(id, d.zone)
		if rs, ok := have[nid]; ok {
			out[i] = fromRecordSet(RRsetID{Name: id.Name, Type: nid.Type}, rs)
		} else {
			out[i] = RRset{Name: id.Name, Type: nid.Type}
		}
	}
	return out, nil
}

func designateValues(s RRset) []string {
	out := make([]string, len(s.Values))
	for i, v := range s.Values {
		if strings.EqualFold(s.Type, "TXT") {
			v = `"` + escapeTXT(v) + `"`
		}
		out[i] = v
	}
	return out
}

// zoneState reads the zone's status and action: Designate accepts writes
// into a zone in ERROR (and they reach the name servers only once the zone
// recovers), refuses them (400) for a zone being deleted.
func (d *Designate) zoneState(ctx context.Context, sc *gophercloud.ServiceClient, zid string) (*zones.Zone, error) {
	z, err := zones.Get(ctx, sc, zid).Extract()
	if err != nil {
		return nil, fmt.Errorf("designate get zone: %w", classifyGophercloud(err))
	}
	if z.Action == "DELETE" {
		return nil, fmt.Errorf("designate: %w: zone %s is being deleted (status %s)", ErrWrongZone, d.zone, z.Status)
	}
	return z, nil
}

// SetRecords implements Provider. Per RRset: create, update (guarded by the
// recordset version, see the type doc) or delete. Not atomic across RRsets.
//
// A zone being deleted is ErrWrongZone, before any write. A zone in ERROR
// (its last change did not reach every name server) still gets the writes,
// as Designate accepts them and each one makes it push the zone again;
// SetRecords then returns what it wrote with an error wrapping
// ErrZoneError, retryable: the writes are not known to be served until
// Designate reports the zone out of ERROR. PENDING is normal for a few
// seconds after every change and is not an error.
func (d *Designate) SetRecords(ctx context.Context, sets []RRset) ([]RRset, error) {
	have, err := d.recordsets(ctx)
	if err != nil {
		return nil, err
	}
	sc, zid, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	z, err := d.zoneState(ctx, sc, zid)
	if err != nil {
		return nil, err
	}
	var changed []RRset
	for _, s := range sets {
		id := normalizeID(s.ID(), d.zone)
		rs, exists := have[id]
		if exists && sameRRset(s, fromRecordSet(id, rs)) || !exists && len(s.Values) == 0 {
			continue
		}
		ttl := int(s.TTL / time.Second)
		switch {
		case !exists:
			_, err = recordsets.Create(ctx, sc, zid, recordsets.CreateOpts{Name: AbsoluteName(s.Name, d.zone), Type: id.Type, TTL: ttl, Records: designateValues(s)}).Extract()
			if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
				// 409 duplicate recordset: another writer created it
				// since our read.
				return changed, fmt.Errorf("designate create %s: %w", id, d.conflict(ctx, id))
			}
		default:
			// Weak guard: the recordset must still be the version we read.
			now, gerr := recordsets.Get(ctx, sc, zid, rs.ID).Extract()
			if gerr != nil {
				return changed, fmt.Errorf("designate get recordset %s: %w", id, classifyGophercloud(gerr))
			}
			if now.Version != rs.Version {
				cur := fromRecordSet(id, *now)
				return changed, fmt.Errorf("designate set %s: %w", id, &ConflictError{Rcode: "VERSION", Current: []RRset{cur}})
			}
			if len(s.Values) == 0 {
				err = recordsets.Delete(ctx, sc, zid, rs.ID).ExtractErr()
			} else {
				_, err = recordsets.Update(ctx, sc, zid, rs.ID, recordsets.UpdateOpts{TTL: &ttl, Records: designateValues(s)}).Extract()
			}
		}
		if err != nil {
			return changed, fmt.Errorf("designate write %s: %w", id, classifyGophercloud(err))
		}
		changed = append(changed, s)
	}
	if len(changed) > 0 {
		d.log.Info("dns records set", "rrsets", len(changed), "mode", "unconditional")
	}
	if z.Status == "ERROR" {
		return changed, fmt.Errorf("designate zone %s: %w", d.zone, ErrZoneError)
	}
	return changed, nil
}

// conflict builds the *ConflictError for a write another writer beat us
// to, carrying the RRset as it is now.
func (d *Designate) conflict(ctx context.Context, id RRsetID) error {
	ce := &ConflictError{Rcode: "DUPLICATE"}
	have, err := d.recordsets(ctx)
	if err != nil {
		ce.ReadErr = err
		return ce
	}
	cur := RRset{Name: id.Name, Type: id.Type}
	if rs, ok := have[id]; ok {
		cur = fromRecordSet(id, rs)
	}
	ce.Current = []RRset{cur}
	return ce
}

// classifyGophercloud maps HTTP statuses: 401/403 ErrAuth, 5xx retryable.
func classifyGophercloud(err error) error {
	var ec gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ec) {
		if ec.Actual >= 500 {
			return &HTTPStatusError{Status: ec.Actual, Err: errServerSide}
		}
		return &HTTPStatusError{Status: ec.Actual, Err: errors.New(http.StatusText(ec.Actual))}
	}
	return err
}

func (g *DesignateConfig) validate() field.Errors {
	var errs field.Errors
	if required(&errs, "auth_url", g.AuthURL) {
		if u, err := url.Parse(g.AuthURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs.Add("auth_url", "%q is not an http(s) URL", g.AuthURL)
		}
	}
	required(&errs, "region", g.Region)
	switch {
	case g.ApplicationCredentialID != "":
		requiredFile(&errs, "application_credential_secret_file", g.ApplicationCredentialSecretFile)
	case g.Username != "":
		requiredFile(&errs, "password_file", g.PasswordFile)
		required(&errs, "project_name", g.ProjectName)
	default:
		errs.Add("", "needs application_credential_id + application_credential_secret_file, or username + password_file")
	}
	return errs
}

// credentials is the secret of the way validate accepts: the application
// credential's, else the password.
func (g *DesignateConfig) credentials() []Credential {
	switch {
	case g.ApplicationCredentialID != "":
		return fileCredential("application_credential_secret_file", g.ApplicationCredentialSecretFile)
	case g.Username != "":
		return fileCredential("password_file", g.PasswordFile)
	}
	return nil
}

func (g *DesignateConfig) build(b build) (Provider, error) {
	return NewDesignate(b.zone, *g, b.logger)
}
