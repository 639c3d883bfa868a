package oauth

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"

	"github.com/miniapp-host/miniapp-host/authserver/seed"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
)

// newTestServer returns a server on a seeded temporary database, without
// listeners: the fuzz target calls validateAuthorize directly.
func newTestServer(t testing.TB) *Server {
	t.Helper()
	return newTestServerOn(t, func(st *store.Store) Storage { return st })
}

// newTestServerOn is newTestServer on the storage wrap makes of the
// database.
func newTestServerOn(t testing.TB, wrap func(*store.Store) Storage) *Server {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w, err := seed.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := w.LoadPolicies(ctx, st, time.Now()); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(catalog.Endpoints{BaseURL: "http://127.0.0.1:8600/bank",
		SigningBaseURL: "http://127.0.0.1:8602/api", InvoicingBaseURL: "http://127.0.0.1:8603/api"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, Config{Issuer: "http://127.0.0.1:8600", Catalog: cat, Store: wrap(st)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzAuthorize feeds arbitrary query strings to the authorization
// endpoint's parsing and validation. Whatever the input: no panic; an error
// is redirected only to a redirect_uri registered, byte for byte, for the
// named client; and an accepted request has S256 PKCE and response_type
// code.
func FuzzAuthorize(f *testing.F) {
	valid := url.Values{"client_id": {"demo-public"}, "redirect_uri": {"http://127.0.0.1:8701/callback"},
		"response_type": {"code"}, "scope": {"openid profile"}, "resource": {"http://127.0.0.1:8600/bank"}, "state": {"s"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	f.Add(valid.Encode())
	for _, mut := range []func(q url.Values){
		func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:8701/callback/../x") },
		func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:8701/callback#f") },
		func(q url.Values) { q.Set("code_challenge_method", "plain") },
		func(q url.Values) { q.Add("state", "t") },
		func(q url.Values) { q.Set("client_id", "demo-confidential") },
		func(q url.Values) {
			q.Set("authorization_details", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}}]`)
		},
		func(q url.Values) {
			q.Set("authorization_details", `[{"type":"http://127.0.0.1:8600/bank/authorization-details/company-identity","actions":["read"],"locations":["http://127.0.0.1:8600/bank"]}]`)
		},
	} {
		q := url.Values{}
		for k, v := range valid {
			q[k] = append([]string(nil), v...)
		}
		mut(q)
		f.Add(q.Encode())
	}
	f.Add("client_id=demo-public&client_id=demo-confidential&redirect_uri=http%3A%2F%2F127.0.0.1%3A8701%2Fcallback")
	f.Add("%zz&&==;")
	s := newTestServer(f)
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw)
		v, redirect, err := s.requests.validateAuthorize(context.Background(), q)
		if v == nil || v.req == nil {
			t.Fatal("validateAuthorize returned no request")
		}
		if redirect {
			if v.client == nil || !redirectAllowed(v.client.RedirectURIs, v.req.RedirectURI) {
				t.Fatalf("redirect allowed to unverified %q", v.req.RedirectURI)
			}
			if len(q["redirect_uri"]) != 1 || len(q["client_id"]) != 1 {
				t.Fatal("redirect allowed with a repeated client_id or redirect_uri")
			}
		}
		if err != nil {
			if redirect {
				to := s.errorRedirect(v.req.RedirectURI, v.req.State, s.asError(nil, err))
				if !strings.HasPrefix(to, v.req.RedirectURI+"?") {
					t.Fatalf("error redirect %q leaves the registered redirect_uri", to)
				}
			}
			return
		}
		if !redirect || v.req.ResponseType != "code" || v.req.CodeChallengeMethod != "S256" || !validChallenge(v.req.CodeChallenge) || v.result == nil || !v.result.Valid() {
			t.Fatalf("accepted an invalid request: %+v", v.req)
		}
	})
}
