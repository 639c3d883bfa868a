package demoapps_test

import (
	"slices"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/seed"
	"github.com/miniapp-host/miniapp-host/demoapps"
)

// TestSeedRegistersTheDefaults: the seed world registers each demo's id
// with the origin of its default address, so that a hint naming the two
// (`open`'s usage error) is one a user can follow.
func TestSeedRegistersTheDefaults(t *testing.T) {
	w, err := seed.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ id, addr, typ string }{
		{demoapps.PublicID, demoapps.PublicAddr, "public"},
		{demoapps.ConfidentialID, demoapps.ConfidentialAddr, "confidential"},
	} {
		found := false
		for _, c := range w.Clients {
			if c.ID != d.id {
				continue
			}
			found = true
			if c.Type != d.typ || !slices.Contains(c.AllowedOrigins, "http://"+d.addr) {
				t.Errorf("the seed registers %s as %s with allowed_origins %v; want %s with http://%s", d.id, c.Type, c.AllowedOrigins, d.typ, d.addr)
			}
		}
		if !found {
			t.Errorf("the seed registers no client %s", d.id)
		}
	}
}
