package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/failover"
	"github.com/spf13/cobra"
)

func newDNSCmd() *cobra.Command {
	c := asGroup(&cobra.Command{Use: "dns", Short: "Check the DNS records, or write them without quorum (break glass)"})
	c.AddCommand(newDNSCheckCmd(), newDNSSetCmd())
	return c
}

// dnsTarget is what both dns subcommands need: the node's config, its
// provider and its verifier.
type dnsTarget struct {
	cfg      *config.Config
	provider dnsprovider.Provider
	verifier *dnsprovider.Verifier
}

func loadDNSTarget(path string) (*dnsTarget, error) {
	cfg, err := loadDNSConfig(path)
	if err != nil {
		return nil, err
	}
	p, err := dnsprovider.New(cfg.DNS.Config, nil)
	if err != nil {
		return nil, fmt.Errorf("dns provider: %w", err)
	}
	v, err := dnsprovider.NewVerifierFromConfig(cfg.DNS.Config, nil)
	if err != nil {
		return nil, fmt.Errorf("dns verify: %w", err)
	}
	return &dnsTarget{cfg: cfg, provider: p, verifier: v}, nil
}

func loadDNSConfig(path string) (*config.Config, error) {
	if path == "" {
		path = os.Getenv("DRWATCH_CONFIG")
	}
	if path == "" {
		return nil, usageError{errors.New("--config is required: the DNS provider and its key come from a node's config file")}
	}
	return config.Load(path, config.Options{})
}

// groupCheckTarget is what dns check needs of failover group name in the
// config at path: its zone, its records and the verifier of its provider's
// servers (its own, when the group is verified otherwise than the dns
// section). An unknown group is a usage error naming the groups there are.
func groupCheckTarget(path, name string) (zone string, records []failover.Record, v *dnsprovider.Verifier, err error) {
	cfg, err := loadDNSConfig(path)
	if err != nil {
		return "", nil, nil, err
	}
	dc, ok := cfg.GroupDNS(name)
	if !ok {
		var names []string
		if cfg.HasDefaultGroup() {
			names = append(names, failover.DefaultGroup)
		}
		for _, g := range cfg.Groups {
			names = append(names, g.Name)
		}
		return "", nil, nil, usageError{fmt.Errorf("--group: unknown failover group %q; groups: %s", name, strings.Join(names, ", "))}
	}
	records = cfg.DNS.Records
	for _, g := range cfg.Groups {
		if g.Name == name {
			records = g.DNS.Records
		}
	}
	if v, err = dnsprovider.NewVerifierFromConfig(dc, nil); err != nil {
		return "", nil, nil, fmt.Errorf("dns verify: %w", err)
	}
	return dc.Zone, records, v, nil
}

// needsDefaultGroup refuses a check without --group when cfg has no
// default group: its dns section holds no records, and the cluster's
// decision would be another group's, checked in the wrong zone.
func needsDefaultGroup(cfg *config.Config) error {
	if cfg.HasDefaultGroup() {
		return nil
	}
	var names []string
	for _, g := range cfg.Groups {
		names = append(names, g.Name)
	}
	return usageError{fmt.Errorf("--group is required: the config has no default group (no dns.records); groups: %s", strings.Join(names, ", "))}
}

// siteRecords are the RRsets the config says site should have.
func siteRecords(cfg *config.Config, site failover.Site) []dnsprovider.RRset {
	return recordsFor(cfg.DNS.Records, cfg.DNS.Zone, site)
}

// recordsFor are the RRsets records give site in zone.
func recordsFor(records []failover.Record, zone string, site failover.Site) []dnsprovider.RRset {
	var out []dnsprovider.RRset
	for _, r := range records {
		vals := r.Primary
		if site == failover.Backup {
			vals = r.Backup
		}
		name := r.Name
		if strings.HasSuffix(name, ".") {
			name = dnsprovider.RelativeName(name, zone)
		}
		out = append(out, dnsprovider.RRset{Name: name, Type: r.Type, TTL: time.Duration(r.TTL) * time.Second, Values: append([]string(nil), vals...)})
	}
	return out
}

// dnsCheckCmd is `drwatch dns check`.
type dnsCheckCmd struct {
	flags clientFlags
	site  string
	group string
}

func newDNSCheckCmd() *cobra.Command {
	d := &dnsCheckCmd{}
	c := &cobra.Command{
		Use:   "check --config FILE [--site primary|backup] [--group NAME]",
		Short: "Desired vs actual records, per authoritative server",
		Long: `Compare the desired records with what every authoritative server answers.
The desired records come from the cluster (any node that answers); with
--site, from the config file's records for that site.
With --group, the failover group's records are checked in its zone at its
provider's servers (as its verify section says, else the dns section's);
without it, the dns section's records at its servers (with groups and no
default group, --group is required).
Exits 0 when every server matches, 1 otherwise.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return d.Run(c.Context(), stdout(c)) },
	}
	d.flags.register(c)
	c.Flags().StringVar(&d.site, "site", "", "compare against this site's records from the config instead of the cluster's decision")
	c.Flags().StringVar(&d.group, "group", "", "check this failover group's records, in its zone at its provider's servers (default: the dns section's)")
	return c
}

// Run compares and prints.
func (d *dnsCheckCmd) Run(ctx context.Context, w io.Writer) error {
	var (
		zone     string
		records  []failover.Record
		verifier *dnsprovider.Verifier
		of       string // whose records, for the source line
	)
	if d.group == "" {
		t, err := loadDNSTarget(d.flags.config)
		if err != nil {
			return err
		}
		if err := needsDefaultGroup(t.cfg); err != nil {
			return err
		}
		zone, records, verifier = t.cfg.DNS.Zone, t.cfg.DNS.Records, t.verifier
	} else {
		var err error
		if zone, records, verifier, err = groupCheckTarget(d.flags.config, d.group); err != nil {
			return err
		}
		of = "group " + d.group + ", "
	}
	var want []dnsprovider.RRset
	source := ""
	switch d.site {
	case "primary", "backup":
		want, source = recordsFor(records, zone, failover.Site(d.site)), of+"config, site "+d.site
	case "":
		if cl, err := d.flags.client(false); err == nil {
			if st, err := cl.groupStatus(ctx, d.group); err == nil && len(st.State.Desired.Records) > 0 {
				want = reconcile.ToProvider(st.State.Desired.Records, zone)
				source = fmt.Sprintf("%scluster decision gen %d (%s), served by %s", of, st.State.Desired.Gen, st.State.Desired.Active, st.ServedBy)
			}
		}
		if want == nil {
			return usageError{errors.New("no node answered with a decision; pass --site primary or --site backup")}
		}
	default:
		return usageError{fmt.Errorf("--site must be primary or backup, got %q", d.site)}
	}
	v, err := verifier.Check(ctx, want)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "desired (%s):\n", source)
	for _, s := range want {
		fmt.Fprintf(w, "  %s\n", s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nSERVER\tMATCH\tANSWER")
	for _, s := range v.Servers {
		var got []string
		for _, g := range s.Got {
			got = append(got, g.String())
		}
		ans := strings.Join(got, "; ")
		if s.Err != nil {
			ans = "error: " + s.Err.Error()
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\n", s.Server, s.Matched, ans)
	}
	_ = tw.Flush()
	if !v.OK() {
		return silentError{exitFailed}
	}
	return nil
}

// dnsSetCmd is `drwatch dns set`, the break-glass write.
type dnsSetCmd struct {
	flags        clientFlags
	site         string
	noQuo        bool
	ignoreLeader bool
	reason       string
	actor        string
	yes          bool
	confirm      confirmer
}

func newDNSSetCmd() *cobra.Command {
	d := &dnsSetCmd{}
	c := &cobra.Command{
		Use:   "set --site backup --no-quorum --reason TEXT --config FILE",
		Short: "Break glass: write a site's records directly, when the cluster has no quorum",
		Long: `Write the records of --site straight to DNS, bypassing the cluster. This is
for when fewer than a quorum of watchers survive and nothing can be decided.
It writes the dns section's records (the default group's) only, never a
failover group's.
It asks every node the config names (and each --endpoint) and refuses (exit 3)
while any of them reports a leader: then use 'drwatch failover'. A node that
does not answer reports nothing. --ignore-leader writes anyway and says so in
the marker and the history.

It needs the break-glass key (dns.break_glass.key_file). It asks for typed
confirmation. A marker TXT record (_drwatch-breakglass), signed with the key
over the zone and the records written, goes in the same update; the first
leader after quorum returns checks it, records the write in the history as
break_glass and removes the marker, and never writes over it. A marker it
cannot verify changes nothing (docs/security.md).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !d.noQuo {
				return usageError{errors.New("dns set is the break-glass path and needs --no-quorum; with quorum, use 'drwatch failover'")}
			}
			if d.site != "primary" && d.site != "backup" {
				return usageError{fmt.Errorf("--site must be primary or backup, got %q", d.site)}
			}
			if err := requireReason(d.reason); err != nil {
				return err
			}
			for _, f := range []struct{ name, v string }{{"reason", d.reason}, {"actor", d.actor}} {
				if err := failover.CheckText(f.v); err != nil {
					return usageError{fmt.Errorf("--%s: %w", f.name, err)}
				}
			}
			d.confirm = newConfirmer(c.InOrStdin(), c.ErrOrStderr())
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return d.Run(ctx, stdout(c))
		},
	}
	d.flags.register(c)
	c.Flags().StringVar(&d.site, "site", "", "primary or backup")
	c.Flags().BoolVar(&d.noQuo, "no-quorum", false, "acknowledge that the cluster has no quorum (required)")
	c.Flags().BoolVar(&d.ignoreLeader, "ignore-leader", false, "write even though a node reports a leader (recorded in the marker and the history)")
	c.Flags().StringVar(&d.reason, "reason", "", "why (required; recorded in the history when quorum returns)")
	c.Flags().StringVar(&d.actor, "actor", "", "who (default: $USER)")
	c.Flags().BoolVarP(&d.yes, "yes", "y", false, "skip the typed confirmation")
	return c
}

// Run performs the break-glass write.
func (d *dnsSetCmd) Run(ctx context.Context, w io.Writer) error {
	actor := cmp.Or(d.actor, os.Getenv("USER"), "unknown")
	var id [8]byte
	_, _ = rand.Read(id[:])
	m := reconcile.BreakGlassMarker{ID: hex.EncodeToString(id[:]), Site: failover.Site(d.site), Actor: actor, At: time.Now(), Reason: d.reason}
	// Checked as it will be written, signed and at its longest (with an
	// override), before anything is read: the first leader after quorum
	// could not read a longer marker back, and the write would never enter
	// the history.
	longest := m
	longest.Override = reconcile.OverrideLeader
	if err := longest.Sign(nil, reconcile.MarkerScope("", nil)).Check(); err != nil {
		return usageError{fmt.Errorf("--reason and --actor: %w", err)}
	}
	t, err := loadDNSTarget(d.flags.config)
	if err != nil {
		return err
	}
	key, err := t.cfg.DNS.BreakGlass.Key()
	if err != nil {
		return err
	}
	if key == nil {
		return usageError{errors.New("dns.break_glass.key_file is not set: no leader would trust the marker, and the write would be " +
			"recorded as break_glass_rejected; generate a key (head -c 32 /dev/urandom | base64 > breakglass.key), name it in " +
			"dns.break_glass.key_file on every node and in this config, and keep it with the operators")}
	}
	cl, err := d.flags.client(false)
	if err != nil {
		return fmt.Errorf("ask the nodes for a leader: %w", err)
	}
	leaders := askLeaders(ctx, cl, configEndpoints(t.cfg), w)
	if len(leaders) > 0 {
		if !d.ignoreLeader {
			return refusedError{fmt.Errorf("refused by rule quorum_present: %s; use 'drwatch failover --to %s' (or --ignore-leader)", strings.Join(leaders, "; "), d.site)}
		}
		m.Override = reconcile.OverrideLeader
		fmt.Fprintf(w, "WARNING: %s; writing anyway (--ignore-leader, recorded)\n", strings.Join(leaders, "; "))
	}
	want := siteRecords(t.cfg, failover.Site(d.site))
	m = m.Sign(key, reconcile.MarkerScope(t.cfg.DNS.Zone, want))
	if !d.yes {
		var b strings.Builder
		fmt.Fprintf(&b, "BREAK GLASS: write these records to %s directly, without the cluster:\n", t.cfg.DNS.Zone)
		for _, s := range want {
			fmt.Fprintf(&b, "  %s\n", s)
		}
		if err := d.confirm.confirm(b.String(), "break glass to "+d.site); err != nil {
			return err
		}
	}
	sets := append(want, m.MarkerRRset(time.Minute))
	written, err := t.provider.SetRecords(ctx, sets)
	if err != nil {
		return fmt.Errorf("break-glass write: %w", err)
	}
	fmt.Fprintf(w, "wrote %d RRset(s) to %s without quorum (marker %s)\n", len(written), t.cfg.DNS.Zone, m.ID)
	v, err := t.verifier.Verify(ctx, want)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return fmt.Errorf("written, but not yet served everywhere: %w", err)
	}
	fmt.Fprintln(w, "verified at every authoritative server; the first leader after quorum returns records this as break_glass")
	return nil
}

// configEndpoints are the API URLs of every node cfg names, itself first.
func configEndpoints(cfg *config.Config) []string {
	eps := []string{"https://" + cfg.Node.APIAddr}
	for _, p := range cfg.Peers {
		if p.ID != cfg.Node.ID {
			eps = append(eps, "https://"+p.APIAddr)
		}
	}
	return eps
}

// askLeaders asks every endpoint of cl, and every one of extra, for its
// status, each on its own and all at once, and returns a line for each that
// reports a leader. One node that answers "no leader" (it may be the one
// cut off) proves nothing about the others, so none ends the search; a node
// that does not answer reports nothing. Each answer is printed to w.
func askLeaders(ctx context.Context, cl *client, extra []string, w io.Writer) []string {
	eps := slices.Clone(cl.endpoints)
	for _, e := range extra {
		if !slices.Contains(eps, e) {
			eps = append(eps, e)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, askLeaderTimeout)
	defer cancel()
	type answer struct {
		st  api.Status
		err error
	}
	answers := make([]answer, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, answers[i].err = cl.once(ctx, ep, http.MethodGet, "/api/v1/status", nil, &answers[i].st)
		}()
	}
	wg.Wait()
	var leaders []string
	for i, a := range answers {
		switch {
		case a.err != nil:
			fmt.Fprintf(w, "asked %s: no answer (%v)\n", eps[i], a.err)
		case a.st.Leader != "":
			leaders = append(leaders, fmt.Sprintf("node %s (%s) reports leader %s", a.st.ServedBy, eps[i], a.st.Leader))
			fmt.Fprintf(w, "asked %s: node %s reports leader %s\n", eps[i], a.st.ServedBy, a.st.Leader)
		default:
			fmt.Fprintf(w, "asked %s: node %s reports no leader\n", eps[i], a.st.ServedBy)
		}
	}
	return leaders
}

// askLeaderTimeout bounds the question to all nodes at once.
const askLeaderTimeout = 5 * time.Second
