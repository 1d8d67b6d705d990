package dnsname

import (
	"net/netip"
	"slices"
	"strings"
)

// Absolute returns name as a lower-case absolute name in zone: "@" and ""
// are the apex, and a name ending in "." is already absolute. A zone given
// without its trailing dot gets one; an empty zone stays empty.
func Absolute(name, zone string) string {
	name = strings.ToLower(name)
	zone = strings.ToLower(zone)
	if zone != "" && !strings.HasSuffix(zone, ".") {
		zone += "."
	}
	switch {
	case name == "@" || name == "":
		return zone
	case strings.HasSuffix(name, "."):
		return name
	default:
		return name + "." + zone
	}
}

// InZone reports whether name is zone or lies below it. Both are absolute
// and lower-case, as Absolute returns them.
func InZone(name, zone string) bool {
	return zone == "." || name == zone || strings.HasSuffix(name, "."+zone)
}

// IsDomainName reports whether s is a syntactically valid absolute name:
// RFC 1035 labels of letters, digits and inner hyphens, at most 63 octets
// each and 254 in all with the final dot, allowing '_' as DNS-SD does and a
// whole label '*' as wildcards do.
func IsDomainName(s string) bool {
	if len(s) < 2 || len(s) > 254 || !strings.HasSuffix(s, ".") {
		return false
	}
	for _, lab := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if lab == "" || len(lab) > 63 {
			return false
		}
		for i, r := range lab {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			case r == '-' && i > 0 && i < len(lab)-1:
			case r == '*' && lab == "*":
			default:
				return false
			}
		}
	}
	return true
}

// AddrFits reports whether a is an address an RRset of type typ holds: an
// IPv4 address for A; an IPv6 address for AAAA, an IPv4-mapped one
// (::ffff:192.0.2.1) excluded, since that is an A record's address.
func AddrFits(typ string, a netip.Addr) bool {
	switch strings.ToUpper(typ) {
	case "A":
		return a.Is4()
	case "AAAA":
		return a.Is6() && !a.Is4In6()
	}
	return false
}

// Value returns v in the canonical form record values are compared in, and
// whether this package knows typ's presentation: an A or AAAA address as
// net/netip prints it (an IPv4-mapped IPv6 address unmapped), a CNAME
// target lower-cased and absolute, a TXT text as it is. A value that does
// not parse as its type is returned as it is. For other types ok is false
// and v comes back unchanged.
func Value(typ, v string) (canonical string, ok bool) {
	switch strings.ToUpper(typ) {
	case "A", "AAAA":
		if a, err := netip.ParseAddr(strings.TrimSpace(v)); err == nil {
			return a.Unmap().String(), true
		}
		return v, true
	case "CNAME":
		v = strings.ToLower(v)
		if v != "" && !strings.HasSuffix(v, ".") {
			v += "."
		}
		return v, true
	case "TXT":
		return v, true
	}
	return v, false
}

// Values returns vs in canonical form (Value), sorted, with duplicates
// removed: two RRsets of one type hold the same records exactly when their
// Values are equal.
func Values(typ string, vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i], _ = Value(typ, v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SameValues reports whether a and b hold the same records of type typ:
// as many values, equal in canonical form (Values), in any order.
func SameValues(typ string, a, b []string) bool {
	return len(a) == len(b) && slices.Equal(Values(typ, a), Values(typ, b))
}
