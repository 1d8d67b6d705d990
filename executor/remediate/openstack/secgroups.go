package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/secgroups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// SecurityGroupsName is security-groups' name.
const SecurityGroupsName = "security-groups"

// SecurityGroups is the security-groups remediator.
type SecurityGroups struct {
	c        *Clients
	sel      Selector
	group    string
	podCIDR  netip.Prefix
	fixPairs bool
}

var _ remediate.Remediator = (*SecurityGroups)(nil)

// NewSecurityGroups returns the remediator: every cluster instance must
// have the security group named group on a port, and its node port must
// allow podCIDR in allowed_address_pairs (skipped when podCIDR is invalid).
func NewSecurityGroups(c *Clients, sel Selector, group string, podCIDR netip.Prefix) *SecurityGroups {
	return &SecurityGroups{c: c, sel: sel, group: group, podCIDR: podCIDR.Masked(), fixPairs: podCIDR.IsValid()}
}

// Name implements remediate.Remediator.
func (s *SecurityGroups) Name() string { return SecurityGroupsName }

type sgData struct {
	server, groupID string
}

type pairData struct {
	server, port string
	revision     int
}

// groupID resolves the required group's name to its one ID.
func (s *SecurityGroups) groupID(ctx context.Context) (string, error) {
	pages, err := groups.List(s.c.Network, groups.ListOpts{Name: s.group}).AllPages(ctx)
	if err != nil {
		return "", fmt.Errorf("list security groups: %w", err)
	}
	gs, err := groups.ExtractGroups(pages)
	if err != nil {
		return "", fmt.Errorf("decode security groups: %w", err)
	}
	if len(gs) != 1 {
		return "", fmt.Errorf("security group %q: found %d, want exactly one", s.group, len(gs))
	}
	return gs[0].ID, nil
}

func serverPorts(ctx context.Context, c *gophercloud.ServiceClient, server string) ([]ports.Port, error) {
	ps, _, err := listPorts(ctx, c, server)
	return ps, err
}

// listPorts returns the ports of server (device_id), sorted by ID, and
// the IDs of those whose port security is off.
func listPorts(ctx context.Context, c *gophercloud.ServiceClient, server string) ([]ports.Port, map[string]bool, error) {
	pages, err := ports.List(c, ports.ListOpts{DeviceID: server}).AllPages(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list ports of %s: %w", server, err)
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, nil, fmt.Errorf("decode ports: %w", err)
	}
	// A second decode: ports.Port's own UnmarshalJSON would hide the
	// attribute from a struct embedding it.
	var sec []portSecurity
	if err := ports.ExtractPortsInto(pages, &sec); err != nil {
		return nil, nil, fmt.Errorf("decode ports: %w", err)
	}
	off := map[string]bool{}
	for _, p := range sec {
		if p.off() {
			off[p.ID] = true
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	return ps, off, nil
}

// portSecurity is a port's port_security_enabled. Absent (the extension
// is off) Neutron filters the port as with port security on.
type portSecurity struct {
	ID      string `json:"id"`
	Enabled *bool  `json:"port_security_enabled"`
}

func (p portSecurity) off() bool { return p.Enabled != nil && !*p.Enabled }

// nodePort returns the port that holds the instance's node address.
func nodePort(in Instance, ps []ports.Port) *ports.Port {
	if len(in.Addresses) == 0 {
		return nil
	}
	for i := range ps {
		for _, ip := range ps[i].FixedIPs {
			if a, err := netip.ParseAddr(ip.IPAddress); err == nil && a == in.Addresses[0] {
				return &ps[i]
			}
		}
	}
	return nil
}

// covers reports whether the pairs already allow the whole pod CIDR.
func (s *SecurityGroups) covers(pairs []ports.AddressPair) bool {
	for _, p := range pairs {
		pre, err := netip.ParsePrefix(p.IPAddress)
		if err != nil {
			continue
		}
		if pre.Bits() <= s.podCIDR.Bits() && pre.Contains(s.podCIDR.Addr()) {
			return true
		}
	}
	return false
}

// Plan lists the cluster's instances and their ports: an instance none of
// whose ports has the group gets "add-security-group" (key with the
// instance and group IDs and the ports' revisions); a node port whose
// pairs do not cover the pod CIDR gets "add-address-pair" (key with the
// port's revision_number, which Apply uses as the CAS).
func (s *SecurityGroups) Plan(ctx context.Context) ([]remediate.Action, error) {
	gid, err := s.groupID(ctx)
	if err != nil {
		return nil, err
	}
	insts, err := listInstances(ctx, s.c.Compute, s.sel)
	if err != nil {
		return nil, err
	}
	var out []remediate.Action
	for _, in := range insts {
		if in.gone() {
			continue
		}
		ps, off, err := listPorts(ctx, s.c.Network, in.ID)
		if err != nil {
			return nil, err
		}
		if len(ps) == 0 {
			continue
		}
		has, filtered := false, false
		revs := ""
		for _, p := range ps {
			has = has || slices.Contains(p.SecurityGroups, gid)
			filtered = filtered || !off[p.ID]
			revs += "/" + strconv.Itoa(p.RevisionNumber)
		}
		// A port with port security off filters nothing, and Neutron
		// refuses security groups on it: no group is missing there.
		if !has && filtered {
			out = append(out, remediate.Action{
				Target: "server/" + in.ID, Verb: "add-security-group",
				Reason: fmt.Sprintf("instance %s has no port in security group %s", in.Name, s.group),
				Key:    "add-security-group/" + in.ID + "/" + gid + revs,
				Data:   sgData{server: in.ID, groupID: gid},
			})
		}
		if !s.fixPairs {
			continue
		}
		// Nor a pair: Neutron refuses allowed_address_pairs on a port
		// with port security off (409 AddressPairAndPortSecurityRequired),
		// which lets the pod CIDR's traffic pass anyway.
		if np := nodePort(in, ps); np != nil && !off[np.ID] && !s.covers(np.AllowedAddressPairs) {
			out = append(out, remediate.Action{
				Target: "port/" + np.ID, Verb: "add-address-pair",
				Reason: fmt.Sprintf("node port %s of instance %s does not allow the pod CIDR %s", np.ID, in.Name, s.podCIDR),
				Key:    "add-address-pair/" + np.ID + "/rev" + strconv.Itoa(np.RevisionNumber),
				Data:   pairData{server: in.ID, port: np.ID, revision: np.RevisionNumber},
			})
		}
	}
	return out, nil
}

// Apply adds the group through Nova (after re-reading the ports: already
// there is done), or adds the pod CIDR pair with a port update that carries
// If-Match: revision_number=<Plan's revision>; Neutron refuses it (412)
// when the port changed since Plan, which is returned as ErrPrecondition.
func (s *SecurityGroups) Apply(ctx context.Context, a remediate.Action) error {
	switch d := a.Data.(type) {
	case sgData:
		ps, err := serverPorts(ctx, s.c.Network, d.server)
		if err != nil {
			return err
		}
		if len(ps) == 0 {
			return fmt.Errorf("instance %s has no ports: %w", d.server, remediate.ErrPrecondition)
		}
		for _, p := range ps {
			if slices.Contains(p.SecurityGroups, d.groupID) {
				return nil
			}
		}
		if err := secgroups.AddServer(ctx, s.c.Compute, d.server, d.groupID).ExtractErr(); err != nil {
			if gophercloud.ResponseCodeIs(err, 404) {
				return fmt.Errorf("add security group to %s: %w", d.server, fmt.Errorf("%w: %w", err, remediate.ErrPrecondition))
			}
			return fmt.Errorf("add security group to %s: %w", d.server, precondition(err))
		}
		return nil
	case pairData:
		res := ports.Get(ctx, s.c.Network, d.port)
		p, err := res.Extract()
		if gophercloud.ResponseCodeIs(err, 404) {
			return fmt.Errorf("port %s is gone: %w", d.port, remediate.ErrPrecondition)
		}
		var sec portSecurity
		if err == nil {
			err = res.ExtractInto(&sec)
		}
		if err != nil {
			return fmt.Errorf("get port %s: %w", d.port, err)
		}
		if s.covers(p.AllowedAddressPairs) {
			return nil
		}
		if sec.off() {
			return fmt.Errorf("port %s: port security was turned off since Plan, and Neutron refuses allowed_address_pairs there: %w", d.port, remediate.ErrPrecondition)
		}
		pairs := append(slices.Clone(p.AllowedAddressPairs), ports.AddressPair{IPAddress: s.podCIDR.String()})
		rev := d.revision
		if _, err := ports.Update(ctx, s.c.Network, d.port, ports.UpdateOpts{AllowedAddressPairs: &pairs, RevisionNumber: &rev}).Extract(); err != nil {
			head := fmt.Sprintf("update port %s at revision %d", d.port, rev)
			if typ, msg := neutronFault(err); typ == "AllowedAddressPairExhausted" {
				// Not a precondition: the next pass would be refused
				// the same way.
				return fmt.Errorf("%s: the port has %d allowed address pairs, and Neutron refuses one more (%s): remove an unused pair or cover the pod CIDR with a wider one by hand: %w",
					head, len(p.AllowedAddressPairs), msg, err)
			}
			return fmt.Errorf("%s: %w", head, precondition(err))
		}
		return nil
	}
	return fmt.Errorf("%s: action without security-groups data", a.Target)
}
