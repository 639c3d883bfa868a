package authserver

import (
	"net/netip"
	"strings"
	"testing"
)

// TestSecretRule: the 128-bit rule at its bounds, in both alphabets.
func TestSecretRule(t *testing.T) {
	for _, c := range []struct {
		secret string
		ok     bool
	}{
		{"Zq3-x_9LmW2vB7nR4tYp0k", true},                  // 22 base64url characters: 132 bits
		{"Zq3-x_9LmW2vB7nR4tYp0", false},                  // 21: 126 bits
		{"3f9a0c7be21d48f6a5c0e9b7d2143f8a", true},        // 32 hex digits: 128 bits
		{"3f9a0c7be21d48f6a5c0e9b7d2143f8", false},        // 31: 124 bits
		{"3F9A0C7BE21D48F6A5C0E9B7D2143F8A", true},        // upper-case hex
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false}, // long, one character
		{"Zq3-x_9LmW2vB7nR 4tYp0kk", false},               // a space
		{"", false},
	} {
		if rule := SecretRule(c.secret); (rule == "") != c.ok {
			t.Errorf("SecretRule(%q) = %q, want ok %v", c.secret, rule, c.ok)
		} else if rule != "" && strings.Contains(rule, c.secret) && c.secret != "" {
			t.Errorf("the rule repeats the secret: %s", rule)
		}
	}
}

// TestProxyRule: one host or a network inside a private one is trusted
// without TrustAnyProxy; anything wider is not.
func TestProxyRule(t *testing.T) {
	for p, ok := range map[string]bool{
		"203.0.113.7/32": true, "10.0.0.0/8": true, "10.1.2.0/24": true, "172.16.0.0/12": true, "172.16.0.0/11": false,
		"192.168.1.0/24": true, "127.0.0.0/8": true, "fd00::/8": true, "2001:db8::1/128": true, "2001:db8::/32": false,
		"0.0.0.0/0": false, "::/0": false, "203.0.113.0/24": false, "::ffff:0.0.0.0/96": false, "8.0.0.0/7": false,
	} {
		if rule := proxyRule(netip.MustParsePrefix(p)); (rule == "") != ok {
			t.Errorf("proxyRule(%s) = %q, want ok %v", p, rule, ok)
		}
	}
}
