package host_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/origin"
)

// TestBridgeAuthorizeServerRefusal: when the service refuses the bridge's
// authorization request, the page's authorize fails with host_error
// carrying the service's OAuth error code and error_description
// (docs/bridge.md, "Errors"): for a refusal the native-consent API answers
// itself (a redirect_uri the client did not register, which no redirect
// may carry) and for one it addresses to the redirect_uri (an unknown
// scope, RFC 6749 §4.1.2.1).
func TestBridgeAuthorizeServerRefusal(t *testing.T) {
	for _, tc := range []struct {
		name, redirect, scope, code string
		says                        []string
	}{
		{"unregistered redirect_uri", "/elsewhere", "openid", "invalid_request", []string{"redirect_uri '", "/elsewhere' is not registered for client 'demo-public'", "its registered redirect URIs are '"}},
		{"unknown scope", "", "openid nonsense", "invalid_scope", []string{"nonsense"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := world(t)
			c := newCore(t, host.Options{})
			redirect := e.Public.RedirectURI()
			if tc.redirect != "" {
				redirect = e.Public.Origin + tc.redirect
			}
			d, err := c.w.NewBridge(host.BridgeConfig{Origin: origin.MustParse(e.Public.Origin), ID: "demo-public", ClientID: "demo-public",
				RedirectURI: redirect, AuthorizeURL: e.Authorize, TokenURL: e.Token, Issuer: e.Svc.URL,
				Resource: e.Svc.URL + "/api", Events: c.bus})
			if err != nil {
				t.Fatal(err)
			}
			app := host.Miniapp{Name: "Demo public Miniapp", LoadURL: mustURL(t, e.Public.Origin+"/"), ClientID: "demo-public",
				Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Public.Origin}}, Consent: e.Consent, Bridge: d}
			if err := c.w.Mount(t.Context(), app); err != nil {
				t.Fatal(err)
			}
			c.rec.Wait(t, "the public demo's page", kind(host.EventLoadFinished))
			key := bridgeKey(t, c.eng.Script())
			msg, _ := json.Marshal(map[string]any{"v": 1, "id": 7, "key": key, "method": "authorize", "params": map[string]any{"scope": tc.scope}})
			c.eng.Post(host.ViewMiniapp, c.w.TransportKey()+string(msg))
			js := waitEval(t, c.eng, host.ViewMiniapp, `"id":7`)
			var reply struct {
				OK    bool `json:"ok"`
				Error struct {
					Code                   string `json:"code"`
					Message                string `json:"message"`
					ServerError            string `json:"server_error"`
					ServerErrorDescription string `json:"server_error_description"`
				} `json:"error"`
			}
			arg := js[strings.IndexByte(js, '(')+1 : strings.LastIndexByte(js, ')')]
			if err := json.Unmarshal([]byte(arg), &reply); err != nil {
				t.Fatalf("reply %s: %v", js, err)
			}
			if reply.OK || reply.Error.Code != "host_error" || reply.Error.ServerError != tc.code {
				t.Fatalf("want host_error with server_error %s, got %s", tc.code, arg)
			}
			for _, s := range tc.says {
				if !strings.Contains(reply.Error.ServerErrorDescription, s) || !strings.Contains(reply.Error.Message, s) {
					t.Errorf("the page's error does not say %q: %s", s, arg)
				}
			}
		})
	}
}
