package httplimit

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the reverse proxies trusted to say whom they forward a request
// for. Behind a proxy every connection comes from the proxy's address, so
// per-source limits would count every user of the proxy as one: one user
// could spend the share of all. A request from a trusted proxy is counted
// against the client address the proxy appended to X-Forwarded-For, and the
// proxy's own connections are not capped per source (the proxy bounds them).
// Addresses in X-Forwarded-For are believed only from the right, up to the
// first one that is not a trusted proxy: what is left of it anybody could
// have written.
type Proxies []netip.Prefix

// ParseProxies reads proxy addresses or networks ("10.0.0.5",
// "10.0.0.0/24", "fd00::/8"), separated by commas or spaces.
func ParseProxies(s string) (Proxies, error) {
	var out Proxies
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		p, err := parsePrefix(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("trusted proxy %q: not an address or a network in CIDR notation (10.0.0.0/24, fd00::/8)", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q: not an address or a network in CIDR notation (10.0.0.5, 10.0.0.0/24)", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// Trusted reports whether an address is a trusted proxy's.
func (ps Proxies) Trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr is the address a request is counted against: its peer's, or,
// when the peer is a trusted proxy, the rightmost address of
// X-Forwarded-For that is not a trusted proxy's. A header that cannot be
// read leaves the peer's address: the request is then counted against the
// proxy, never against an address someone made up.
func (ps Proxies) ClientAddr(r *http.Request) string {
	peer := hostOf(r.RemoteAddr)
	if len(ps) == 0 {
		return peer
	}
	pa, err := netip.ParseAddr(peer)
	if err != nil || !ps.Trusted(pa) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		h := strings.TrimSpace(hops[i])
		if h == "" {
			continue
		}
		a, err := netip.ParseAddr(h)
		if err != nil {
			return client
		}
		client = a.Unmap().String()
		if !ps.Trusted(a) {
			return client
		}
	}
	return client
}

func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
