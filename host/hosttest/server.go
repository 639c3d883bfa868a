package hosttest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/demoapps"
)

// StartServer starts the whole reference server (authserver.Start: the
// service, the dashboard the resolver reads, the providers) on loopback
// with the host's credential set to HostSecret, and the public demo
// Miniapp registered at the origin it got: what `miniapp-host open` needs.
// Both stop when the test ends.
func StartServer(t testing.TB) (*authserver.Server, *demoapps.App) {
	t.Helper()
	ctx := context.Background()
	srv, err := authserver.Start(ctx, authserver.Config{DB: filepath.Join(t.TempDir(), "svc.db"),
		Secrets: map[string]string{"miniapp-host": HostSecret}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	u := srv.URLs()
	app, err := demoapps.StartPublic(demoapps.Config{ID: "demo-public", Name: "Demo public Miniapp", ClientID: "demo-public",
		AuthURL: u.Authorization, TokenURL: u.Token, Scope: Scope, Resource: u.BaseURL}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	if _, err := srv.RegisterClient(ctx, authserver.ClientSpec{ID: "demo-public", Name: "Demo public Miniapp",
		RedirectURIs: []string{app.RedirectURI()}, AllowedOrigins: []string{app.Origin}}); err != nil {
		t.Fatal(err)
	}
	return srv, app
}

// StartPublic starts another public demo Miniapp, with manifest id and
// client id id, on an origin of its own, and registers its client with
// srv. It stops when the test ends.
func StartPublic(t testing.TB, srv *authserver.Server, id string) *demoapps.App {
	t.Helper()
	u := srv.URLs()
	app, err := demoapps.StartPublic(demoapps.Config{ID: id, Name: "Demo Miniapp " + id, ClientID: id,
		AuthURL: u.Authorization, TokenURL: u.Token, Scope: Scope, Resource: u.BaseURL}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	if _, err := srv.RegisterClient(context.Background(), authserver.ClientSpec{ID: id, Name: "Demo Miniapp " + id,
		RedirectURIs: []string{app.RedirectURI()}, AllowedOrigins: []string{app.Origin}}); err != nil {
		t.Fatal(err)
	}
	return app
}
