package httplimit

import (
	"net/http"
	"strings"
	"testing"
)

func TestClientAddr(t *testing.T) {
	ps, err := ParseProxies("10.0.0.0/24, 192.168.1.7 fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no proxy: the peer", "203.0.113.9:5000", []string{"198.51.100.1"}, "203.0.113.9"},
		{"trusted proxy: the client it appended", "10.0.0.3:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a forged left part is not believed", "10.0.0.3:5000", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1"},
		{"a chain of trusted proxies", "10.0.0.3:5000", []string{"198.51.100.1, 192.168.1.7"}, "198.51.100.1"},
		{"headers joined in order", "10.0.0.3:5000", []string{"1.2.3.4", "198.51.100.1"}, "198.51.100.1"},
		{"IPv6 proxy and client", "[fd00::1]:5000", []string{"2001:db8::5"}, "2001:db8::5"},
		{"unreadable hop: the proxy", "10.0.0.3:5000", []string{"1.2.3.4, not-an-ip"}, "10.0.0.3"},
		{"no header: the proxy", "10.0.0.3:5000", nil, "10.0.0.3"},
		{"only trusted hops: the leftmost", "10.0.0.3:5000", []string{"10.0.0.9"}, "10.0.0.9"},
		{"IPv4-mapped peer", "[::ffff:10.0.0.3]:5000", []string{"198.51.100.1"}, "198.51.100.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.peer, Header: http.Header{}}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := ps.ClientAddr(r); got != tc.want {
				t.Fatalf("ClientAddr = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseProxiesNamesTheBadOne(t *testing.T) {
	for _, in := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.1/"} {
		_, err := ParseProxies("10.0.0.1," + in)
		if err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseProxies(%q): %v, want an error naming it", in, err)
		}
	}
}

// FuzzClientAddr: whatever a client writes in X-Forwarded-For, the address
// counted is the peer's or one of the header's, never a panic.
func FuzzClientAddr(f *testing.F) {
	ps, _ := ParseProxies("127.0.0.0/8")
	f.Add("127.0.0.1:1", "1.2.3.4, 5.6.7.8")
	f.Add("127.0.0.1:1", ",,, ::1")
	f.Fuzz(func(t *testing.T, peer, xff string) {
		r := &http.Request{RemoteAddr: peer, Header: http.Header{"X-Forwarded-For": {xff}}}
		got := ps.ClientAddr(r)
		if got == "" && peer != "" && hostOf(peer) != "" {
			t.Fatalf("empty source for peer %q", peer)
		}
	})
}
