package authserver

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/seed"
)

// MinSecretBits is the strength a secret the server is given must have: the
// operator key and the seeded clients' fixed secrets (Config.OperatorKey,
// Config.Secrets). The server's own secrets are 256 random bits.
const MinSecretBits = 128

// SettingError is a Config setting that breaks a rule: Field names it
// (OperatorKey, Secrets, HTTP.TrustedProxies), Key the entry of a map or
// list (a client id, a network), Rule says what to change. It never holds
// the value of a secret.
type SettingError struct {
	Field, Key, Rule string
}

func (e *SettingError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("authserver: %s %q: %s", e.Field, e.Key, e.Rule)
	}
	return fmt.Sprintf("authserver: %s: %s", e.Field, e.Rule)
}

// SecretRule says why s is too weak to be a secret the server is given, or
// "". Its strength is counted from its length, as if it were drawn at random
// from the smallest alphabet it fits: 4 bits a character when every
// character is a hexadecimal digit, else 6 (base64 and base64url); so at
// least 32 hexadecimal digits or 22 other characters, such as the output of
// `openssl rand -hex 16` or `openssl rand -base64 24`. A value of fewer than
// 8 different characters is refused whatever its length ("aaaa…"), and so
// is one with a space or a control character, which a shell or an HTTP
// header would mangle.
func SecretRule(s string) string {
	bits, hex := 0, true
	seen := map[rune]bool{}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return "a secret has no spaces or control characters"
		}
		seen[r] = true
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			hex = false
		}
	}
	n := len([]rune(s))
	if hex {
		bits = 4 * n
	} else {
		bits = 6 * n
	}
	const how = "at least 128 bits, 22 characters of base64url or 32 hexadecimal digits (openssl rand -base64 24, openssl rand -hex 16)"
	switch {
	case bits < MinSecretBits:
		return fmt.Sprintf("too short: %d characters, about %d bits; a secret needs %s", n, bits, how)
	case len(seen) < 8:
		return fmt.Sprintf("too regular: %d different characters; a secret needs %s, drawn at random", len(seen), how)
	}
	return ""
}

// privateNetworks are the networks a trusted proxy may span without
// Config.TrustAnyProxy: RFC 1918 and RFC 4193 private networks, and
// loopback.
var privateNetworks = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fc00::/7"), netip.MustParsePrefix("::1/128"),
}

// proxyRule says why p is too wide to trust without TrustAnyProxy, or "":
// a trusted proxy is one host, or a network inside a private one.
func proxyRule(p netip.Prefix) string {
	if p.Bits() == p.Addr().BitLen() {
		return ""
	}
	for _, n := range privateNetworks {
		if p.Addr().Is4() == n.Addr().Is4() && p.Bits() >= n.Bits() && n.Contains(p.Addr()) {
			return ""
		}
	}
	return "trusts every address of a public network, each then free to name any client in X-Forwarded-For; " +
		"name the proxies' own addresses, or a private network (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7), " +
		"or set TrustAnyProxy (serve --trust-any-proxy) if every peer of this server really is a proxy"
}

// validateSettings checks the credentials and the trusted proxies of c.
func (c *Config) validateSettings() error {
	if c.OperatorKey != "" {
		if rule := SecretRule(c.OperatorKey); rule != "" {
			return &SettingError{Field: "OperatorKey", Rule: rule}
		}
	}
	if len(c.Secrets) > 0 {
		w, err := seed.Read()
		if err != nil {
			return err
		}
		confidential := w.ConfidentialClients()
		slices.Sort(confidential)
		types := map[string]string{}
		for _, wc := range w.Clients {
			types[wc.ID] = wc.Type
		}
		ids := make([]string, 0, len(c.Secrets))
		for id := range c.Secrets {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			switch types[id] {
			case "":
				return &SettingError{Field: "Secrets", Key: id, Rule: "no seeded client has this id; the seeded confidential clients are " +
					strings.Join(confidential, ", ")}
			case "public":
				return &SettingError{Field: "Secrets", Key: id, Rule: "a public client has no secret (RFC 6749 §2.1); the seeded confidential clients are " +
					strings.Join(confidential, ", ")}
			}
			if rule := SecretRule(c.Secrets[id]); rule != "" {
				return &SettingError{Field: "Secrets", Key: id, Rule: rule}
			}
		}
	}
	if !c.TrustAnyProxy {
		for _, p := range c.HTTP.TrustedProxies {
			if rule := proxyRule(p); rule != "" {
				return &SettingError{Field: "HTTP.TrustedProxies", Key: p.String(), Rule: rule}
			}
		}
	}
	return nil
}
