package origin

import (
	"net/netip"
	"strings"
	"testing"
)

// TestAddrRule: the address policy refuses the special-purpose blocks
// netip does not know (the jwks_uri guard let them through), the IPv6
// forms that carry a loopback, private or link-local IPv4 address, and
// site-local IPv6; public addresses, and the IPv6 forms carrying one, pass.
func TestAddrRule(t *testing.T) {
	for _, tc := range []struct {
		addr, want string // want: a part of the reason, "" for public
	}{
		{"100.64.0.1", "shared address space"},
		{"100.100.100.200", "shared address space"}, // a cloud's metadata service
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"192.0.0.1", "IETF protocol assignments"},
		{"192.0.2.1", "documentation"},
		{"0.0.0.0", "this network"},
		{"255.255.255.255", "reserved"},
		{"240.0.0.1", "reserved"},
		{"127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"169.254.169.254", "link-local"},
		{"::ffff:127.0.0.1", "carries 127.0.0.1: loopback"},
		{"::ffff:169.254.169.254", "carries 169.254.169.254: link-local"},
		{"::7f00:1", "IPv4-compatible"},
		{"::a00:1", "IPv4-compatible"},
		{"::a9fe:a9fe", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "NAT64 (64:ff9b::/96, RFC 6052) and carries 127.0.0.1: loopback"},
		{"64:ff9b::a00:1", "carries 10.0.0.1: private"},
		{"64:ff9b::a9fe:a9fe", "carries 169.254.169.254: link-local"},
		{"64:ff9b::6464:64c8", "carries 100.100.100.200: shared address space"},
		{"64:ff9b:1::a00:1", "local-use IPv4/IPv6 translation"},
		{"2002:7f00:1::", "6to4 (2002::/16, RFC 3056) and carries 127.0.0.1: loopback"},
		{"2002:a00:1::1", "carries 10.0.0.1: private"},
		{"fec0::1", "site-local"},
		{"fc00::1", "unique local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "zone"},
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"ff02::1", "multicast"},
		{"2001::1", "Teredo"},
		{"2001:db8::1", "documentation"},
		{"100::1", "discard-only"},
		{"4000::1", "outside the IPv6 global unicast space"},
		{"8.8.8.8", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
		{"2606:4700:4700::1111", ""},
		{"192.31.196.1", ""},
	} {
		got := AddrRule(netip.MustParseAddr(tc.addr))
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("AddrRule(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// TestHostRule: a URL's host, as ParseURL canonicalises it, is refused
// when it is a non-public address in any spelling a browser or resolver
// reads as one (127.1, 0177.0.0.1, 0x7f.1, 2130706433), a loopback name
// (localhost, with a final dot, or a sub-domain), a single label or a
// local-network name; public names and addresses pass.
func TestHostRule(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://127.1/jwks", "loopback"},
		{"https://0177.0.0.1/jwks", "loopback"},
		{"https://0x7f.1/jwks", "loopback"},
		{"https://2130706433/jwks", "loopback"},
		{"https://100.100.100.200/jwks", "shared address space"},
		{"https://[::ffff:7f00:1]/jwks", "loopback"},
		{"https://[64:ff9b::a9fe:a9fe]/jwks", "link-local"},
		{"https://localhost/jwks", "loopback name"},
		{"https://localhost./jwks", "loopback name"},
		{"https://LOCALHOST./jwks", "loopback name"},
		{"https://api.localhost/jwks", "loopback name"},
		{"https://metadata/jwks", "single-label"},
		{"https://metadata./jwks", "single-label"},
		{"https://printer.local/jwks", "local network"},
		{"https://nas.home.arpa/jwks", "local network"},
		{"https://keys.corp.internal/jwks", "local network"},
		{"https://keys.example.com/jwks", ""},
		{"https://keys.example.com./jwks", ""},
		{"https://8.8.8.8/jwks", ""},
		{"https://[2606:4700:4700::1111]/jwks", ""},
	} {
		u, err := ParseURL(tc.url)
		if err != nil {
			t.Fatalf("ParseURL(%q): %v", tc.url, err)
		}
		got := HostRule(u.Host)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("HostRule of %s (host %s) = %q, want %q", tc.url, u.Host, got, tc.want)
		}
	}
}

// FuzzAddrPolicy is a differential test of the address policy against
// net/netip's own classification: whatever netip calls loopback, private,
// link-local, multicast, unspecified or not global unicast (once an
// IPv4-mapped address is unmapped) the policy refuses too; a public IPv6
// address is in 2000::/3 or carries a public IPv4 address; and an IPv4
// address wrapped as IPv4-mapped, NAT64 or 6to4 is judged as the address
// itself, while as IPv4-compatible it is always refused. HostRule agrees
// with AddrRule on every address literal ParseURL accepts.
func FuzzAddrPolicy(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "100.100.100.200", "198.18.0.1", "192.0.0.8", "::ffff:10.0.0.1", "::7f00:1",
		"64:ff9b::a9fe:a9fe", "2002:7f00:1::", "fec0::1", "2001:db8::1", "8.8.8.8", "2606:4700::1"} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a netip.Addr
		switch {
		case len(b) >= 16:
			a = netip.AddrFrom16([16]byte(b[:16]))
		case len(b) >= 4:
			a = netip.AddrFrom4([4]byte(b[:4]))
		default:
			return
		}
		rule := AddrRule(a)
		u := a.Unmap()
		if rule == "" && (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsMulticast() || u.IsUnspecified() ||
			u.IsInterfaceLocalMulticast() || u.IsLinkLocalMulticast() || !u.IsGlobalUnicast()) {
			t.Fatalf("%s: public to the policy, but netip classifies %s as not global unicast or special", a, u)
		}
		if rule == "" && a.Is6() && !a.Is4In6() && !globalUnicast6.Contains(a) && !nat64.Contains(a) {
			t.Fatalf("%s: public to the policy, outside 2000::/3", a)
		}
		if a.Is4In6() && (rule == "") != (AddrRule(u) == "") {
			t.Fatalf("%s: %q, but the IPv4 address it maps %s: %q", a, rule, u, AddrRule(u))
		}
		if a.Is4() {
			v4 := a.As4()
			var n, s, c [16]byte
			copy(n[:], netip.MustParseAddr("64:ff9b::").AsSlice())
			copy(n[12:], v4[:])
			s[0], s[1] = 0x20, 0x02
			copy(s[2:6], v4[:])
			copy(c[12:], v4[:])
			for _, w := range []struct {
				name string
				addr netip.Addr
			}{{"IPv4-mapped", netip.AddrFrom16(a.As16())}, {"NAT64", netip.AddrFrom16(n)}, {"6to4", netip.AddrFrom16(s)}} {
				if got := AddrRule(w.addr); (got == "") != (rule == "") {
					t.Fatalf("%s as %s %s: %q, the address itself: %q", a, w.name, w.addr, got, rule)
				}
			}
			if AddrRule(netip.AddrFrom16(c)) == "" {
				t.Fatalf("%s as IPv4-compatible %s is public to the policy", a, netip.AddrFrom16(c))
			}
		}
		host := a.String()
		if a.Is6() {
			host = "[" + host + "]"
		}
		if pu, err := ParseURL("https://" + host + "/"); err == nil {
			if got := HostRule(pu.Host); (got == "") != (rule == "") {
				t.Fatalf("https://%s/ (host %s): HostRule %q, AddrRule %q", host, pu.Host, got, rule)
			}
		}
	})
}
