package playground

import (
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/devapp"
)

// TestDefaultLayout: the default ports of the playground's world are
// each taken once (a `dev` folder on the FAPI demo's port made `dev` fail
// on a fresh machine), and agree with what other packages name: the seed
// world's demo origins, the service's default address, the issuer that
// `new` writes into config.json.
func TestDefaultLayout(t *testing.T) {
	a := DefaultAddrs()
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	parts := a.Parts()
	for _, p := range parts {
		if other, dup := seen[p.Addr]; dup {
			t.Errorf("%s and %s both on %s", other, p.Name, p.Addr)
		}
		seen[p.Addr] = p.Name
	}
	if len(parts) != 14 {
		t.Errorf("%d parts in the layout, want 14: %+v", len(parts), parts)
	}
	for _, c := range []struct{ got, want, what string }{
		{a.Service, authserver.DefaultServiceAddr, "service"},
		{a.Dashboard, authserver.DefaultDashboardAddr, "dashboard"},
		{a.Signing, authserver.DefaultSigningAddr, "signing"},
		{a.Invoicing, authserver.DefaultInvoicingAddr, "invoicing"},
		{a.Public, demoapps.PublicAddr, "public demo"},
		{a.Confidential, demoapps.ConfidentialAddr, "confidential demo"},
		{a.FAPI, demoapps.FAPIAddr, "FAPI demo"},
		{"http://" + a.Service, devapp.DefaultIssuer, "the issuer `new` writes"},
		{a.Launcher, "127.0.0.1:8700", "launcher"},
		{a.Dev, "127.0.0.1:8708", "dev's folder"},
		{a.Automation, "127.0.0.1:8709", "automation channel"},
		{strings.Join(a.Broken, " "), "127.0.0.1:8703 127.0.0.1:8704 127.0.0.1:8705 127.0.0.1:8706", "broken Miniapps"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.what, c.got, c.want)
		}
	}
	if got := a.PartOn(8707); got != "the FAPI demo" {
		t.Errorf("PartOn(8707) = %q", got)
	}

	// Port 0 gives free ports to every part; no collision is possible.
	free := Layout("127.0.0.1:0", "127.0.0.1:0")
	for _, p := range free.Parts() {
		if p.Addr != "127.0.0.1:0" {
			t.Errorf("%s on %s with port 0 given", p.Name, p.Addr)
		}
	}
	if err := free.Check(); err != nil {
		t.Error(err)
	}
}

// TestLayoutCollision: two parts given one port are refused before
// anything listens, naming the port and both parts.
func TestLayoutCollision(t *testing.T) {
	a := Layout("127.0.0.1:8600", "127.0.0.1:8602")
	err := a.Check()
	if err == nil || !strings.Contains(err.Error(), "port 8602") || !strings.Contains(err.Error(), "the signing role") ||
		!strings.Contains(err.Error(), "the launcher") {
		t.Errorf("overlapping layout: %v, want port 8602 named with the signing role and the launcher", err)
	}
	a = DefaultAddrs()
	a.Dev = demoapps.FAPIAddr
	if err := a.Check(); err == nil || !strings.Contains(err.Error(), "the FAPI demo") || !strings.Contains(err.Error(), "dev") {
		t.Errorf("dev on the FAPI demo's port: %v", err)
	}
	if _, err := Start(t.Context(), Config{Addrs: Addrs{Launcher: "127.0.0.1:0", Public: "127.0.0.1:1", Dev: "127.0.0.1:1"}}); err == nil ||
		!strings.Contains(err.Error(), "port 1 ") {
		t.Errorf("Start with two parts on one port: %v", err)
	}
}
