package origin

import (
	"net/netip"
	"strings"
)

// The address policy: which hosts and addresses a server fetches from
// when a URL was registered by someone else (a client's jwks_uri,
// docs/fapi.md, "Keys at a jwks_uri"). One policy serves the check at
// registration, on the URL's host ([HostRule]), and the check at dial
// time, on each address the name resolved to ([AddrRule], from a
// net.Dialer's Control, so that a name that resolves to a public address
// when registered and to a private one when fetched, DNS rebinding, is
// refused too).
//
// An address is public when it is a unicast address that the IANA
// special-purpose address registries (RFC 6890; IPv4 and IPv6 Special-
// Purpose Address Registries) do not set aside: the standard library's
// net/netip classification (loopback, private, link-local, multicast,
// unspecified) plus the blocks it does not know (shared address space,
// benchmarking, documentation, protocol assignments, reserved, site-local,
// discard-only, ...). IPv6 is public only inside the global unicast space
// 2000::/3, as IANA allocates it. An IPv6 address that carries an IPv4
// address (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96 of RFC 6052,
// 6to4 2002::/16 of RFC 3056) is judged by the IPv4 address it carries,
// so that ::ffff:127.0.0.1, 64:ff9b::a00:1 and 2002:7f00:1:: are the
// loopback and private addresses they reach. IPv4-compatible addresses
// (::/96, deprecated by RFC 4291 §2.5.5.1) and IPv4-translated ones are
// outside 2000::/3 and refused as a whole.

// v4Special are the IPv4 blocks that are not public, with their names.
var v4Special = []struct {
	p    netip.Prefix
	name string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network" (0.0.0.0/8, RFC 791)`},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (10.0.0.0/8, RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space, carrier-grade NAT (100.64.0.0/10, RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (127.0.0.0/8, RFC 1122)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (169.254.0.0/16, RFC 3927)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (172.16.0.0/12, RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24, RFC 6890)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (192.0.2.0/24, RFC 5737)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "the deprecated 6to4 relay anycast (192.88.99.0/24, RFC 7526)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (192.168.0.0/16, RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15, RFC 2544)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (198.51.100.0/24, RFC 5737)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (203.0.113.0/24, RFC 5737)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (224.0.0.0/4, RFC 5771)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved, or the limited broadcast (240.0.0.0/4, RFC 1112; RFC 919)"},
}

// v6Special are the IPv6 blocks inside 2000::/3 that are not public,
// and, outside it, the names of the blocks an address is most likely in.
var v6Special = []struct {
	p    netip.Prefix
	name string
}{
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments, Teredo included (2001::/23, RFC 2928; RFC 4380)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (2001:db8::/32, RFC 3849)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation (3fff::/20, RFC 9637)"},
	// Outside 2000::/3, named for the error only.
	{netip.MustParsePrefix("::1/128"), "loopback (::1, RFC 4291)"},
	{netip.MustParsePrefix("::/128"), "unspecified (::, RFC 4291)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible, deprecated (::/96, RFC 4291 §2.5.5.1)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use IPv4/IPv6 translation (64:ff9b:1::/48, RFC 8215)"},
	{netip.MustParsePrefix("100::/64"), "discard-only (100::/64, RFC 6666)"},
	{netip.MustParsePrefix("5f00::/16"), "SRv6 SIDs (5f00::/16, RFC 9602)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (fc00::/7, RFC 4193)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local (fe80::/10, RFC 4291)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local, deprecated (fec0::/10, RFC 3879)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast (ff00::/8, RFC 4291)"},
}

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// AddrRule reports why a server may not fetch from address a, or "" when
// a is a public address (the address policy above). The reason names the
// block and its RFC, and, for an IPv6 address carrying an IPv4 one, that
// address too: "64:ff9b::7f00:1 carries 127.0.0.1: loopback (...)".
func AddrRule(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "not an IP address"
	case a.Zone() != "":
		return "an address with a zone (" + a.Zone() + ") is on a local link"
	case a.Is4In6():
		return carried(a, a.Unmap(), "IPv4-mapped")
	case a.Is4():
		for _, s := range v4Special {
			if s.p.Contains(a) {
				return s.name
			}
		}
		return ""
	case nat64.Contains(a):
		b := a.As16()
		return carried(a, netip.AddrFrom4([4]byte(b[12:16])), "NAT64 (64:ff9b::/96, RFC 6052)")
	case sixToFour.Contains(a):
		b := a.As16()
		return carried(a, netip.AddrFrom4([4]byte(b[2:6])), "6to4 (2002::/16, RFC 3056)")
	}
	for _, s := range v6Special {
		if s.p.Contains(a) {
			return s.name
		}
	}
	if !globalUnicast6.Contains(a) {
		return "outside the IPv6 global unicast space 2000::/3 (reserved by the IETF, RFC 4291)"
	}
	return ""
}

// carried judges the IPv6 address a by the IPv4 address v4 it carries in
// the form named.
func carried(a, v4 netip.Addr, form string) string {
	if rule := AddrRule(v4); rule != "" {
		return a.String() + " is " + form + " and carries " + v4.String() + ": " + rule
	}
	return ""
}

// IsPublicAddr reports whether a is a public address (AddrRule is "").
func IsPublicAddr(a netip.Addr) bool { return AddrRule(a) == "" }

// HostRule reports why a server may not fetch from the canonical host of
// a URL that [ParseURL] made (lower-case punycode, dotted IPv4, IPv6 in
// brackets), or "" when it may: an IP address that is not public
// (AddrRule), a loopback name (localhost and its sub-domains, with or
// without a final dot, RFC 6761 §6.3), a single-label name (searched in
// the server's own domains), or a name of the special-use domains that
// name local networks (local, RFC 6762; home.arpa, RFC 8375; internal,
// reserved for private use). A public name may still resolve to a private
// address: the dial-time check (AddrRule) refuses that.
func HostRule(host string) string {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil {
			return "not an IPv6 address"
		}
		return AddrRule(a)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return AddrRule(a)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case name == "":
		return "an empty host"
	case name == "localhost" || strings.HasSuffix(name, ".localhost"):
		return "a loopback name (localhost, RFC 6761 section 6.3)"
	case !strings.Contains(name, "."):
		return "a single-label name, which resolves in the server's own network"
	}
	for _, d := range []string{"local", "home.arpa", "internal"} {
		if name == d || strings.HasSuffix(name, "."+d) {
			return "a name of the local network (." + d + ")"
		}
	}
	return ""
}
