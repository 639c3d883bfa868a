package oauth

import (
	"context"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
)

// What a development server's fixtures (package devctl, docs/dashboard.md
// "Fixtures") take from the OAuth server, so that a grant written from a
// file is the grant an approval would have stored, and its token the
// token the token endpoint would have issued.

// CompleteGrant sets g's audience and consumerInstallationId as an
// approval of granted sets them (docs/service.md §2.6).
func (s *Server) CompleteGrant(g *store.Grant, granted *catalog.Result) {
	g.Audience = s.flow.audience(granted)
	g.InstallationID = installationID(g.ClientID, g.SubjectID, g.OrgID)
}

// MintAccessToken signs a Bearer access token of g for g's client, with
// the grant's scopes, valid for the server's access-token lifetime from
// now on its clock, and returns it with the record that stores it; the
// caller stores it (nothing is written here).
func (s *Server) MintAccessToken(ctx context.Context, g *store.Grant) (string, *store.AccessToken, time.Duration, error) {
	c, err := s.clients.get(ctx, g.ClientID)
	if err != nil {
		return "", nil, 0, err
	}
	m, err := s.token.mint(c, g, g.Scopes, "", false, "", "")
	if err != nil {
		return "", nil, 0, err
	}
	return m.resp.AccessToken, m.at, s.cfg.AccessTokenTTL, nil
}
