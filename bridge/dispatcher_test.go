package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/origin"
)

func TestMethods(t *testing.T) {
	details := []any{map[string]any{"type": "bank_account", "actions": []string{"read"},
		"subject": map[string]any{"type": "profile"}, "selection": map[string]any{"max": 1}}}
	tests := []struct {
		name    string
		method  string
		params  any
		consent *bool // the subject's answer when authorize asks
		want    string
		code    Code
		check   func(t *testing.T, h *memHost)
	}{
		{name: "ready", method: "ready", want: ``, check: func(t *testing.T, h *memHost) {
			if h.ready != 1 {
				t.Errorf("host saw %d ready calls, want 1", h.ready)
			}
		}},
		{name: "ready with empty params", method: "ready", params: map[string]any{}, want: ``},
		{name: "close", method: "close", want: ``, check: func(t *testing.T, h *memHost) {
			if !h.closed {
				t.Error("host not closed")
			}
		}},
		{name: "getContext", method: "getContext",
			want: `{"id":"com.example.app","origin":"https://app.example","theme":"dark","host_version":"0.1.0","bridge_version":"1.0.0","subject":"sub-1"}`},
		{name: "authorize approved", method: "authorize", consent: ptr(true),
			params: map[string]any{"scope": "openid profile", "authorization_details": details, "org_id": "org-1"},
			want:   `{"access_token":"at-openid+profile","token_type":"Bearer","expires_in":300,"scope":"openid profile","authorization_details":[{"actions":["read"],"selection":{"max":1},"subject":{"type":"profile"},"type":"bank_account"}]}`,
			check: func(t *testing.T, h *memHost) {
				if len(h.asked) != 1 || h.asked[0].OrgID != "org-1" || len(h.asked[0].Scopes) != 2 {
					t.Errorf("host was asked %+v", h.asked)
				}
			}},
		{name: "authorize denied", method: "authorize", consent: ptr(false),
			params: map[string]any{"scope": "openid"}, code: CodeAccessDenied},
		{name: "openExternal", method: "openExternal",
			params: map[string]any{"url": "HTTPS://Docs.Example:443/a/../guide", "gesture": true}, want: ``,
			check: func(t *testing.T, h *memHost) {
				if len(h.opened) != 1 || h.opened[0] != "https://docs.example/guide" {
					t.Errorf("host opened %q, want the canonical URL", h.opened)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			fx.send(41, tt.method, tt.params)
			if tt.consent != nil {
				<-fx.host.started
				fx.host.consent <- *tt.consent
			}
			r := fx.view.next(t)
			if ev := fx.event(t); ev.Method != tt.method || ev.Decision != DecisionAllowed {
				t.Errorf("event %+v, want %s allowed", ev, tt.method)
			}
			if tt.code != "" {
				refusedWith(t, r, 41, tt.code)
				return
			}
			if !r.OK || r.ID != 41 || r.Error != nil {
				t.Fatalf("reply %+v, want ok for id 41", r)
			}
			if string(r.Result) != tt.want {
				t.Errorf("result\n got %s\nwant %s", r.Result, tt.want)
			}
			if tt.check != nil {
				fx.host.mu.Lock()
				defer fx.host.mu.Unlock()
				tt.check(t, fx.host)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestParamsRefused(t *testing.T) {
	tests := []struct {
		name   string
		method string
		params any
		code   Code
	}{
		{"ready with params", "ready", map[string]any{"x": 1}, CodeInvalidParams},
		{"getContext with params", "getContext", map[string]any{"id": "x"}, CodeInvalidParams},
		{"authorize without params", "authorize", nil, CodeInvalidParams},
		{"authorize empty", "authorize", map[string]any{}, CodeInvalidParams},
		{"authorize unknown field", "authorize", map[string]any{"scope": "openid", "resource": "x"}, CodeInvalidParams},
		{"authorize scope not a string", "authorize", map[string]any{"scope": []string{"openid"}}, CodeInvalidParams},
		{"authorize double space", "authorize", map[string]any{"scope": "openid  profile"}, CodeInvalidParams},
		{"authorize quote in scope", "authorize", map[string]any{"scope": `open"id`}, CodeInvalidParams},
		{"authorize repeated scope", "authorize", map[string]any{"scope": "openid openid"}, CodeInvalidParams},
		{"authorize details not an array", "authorize", map[string]any{"authorization_details": map[string]any{"type": "x"}}, CodeInvalidParams},
		{"authorize details empty", "authorize", map[string]any{"authorization_details": []any{}}, CodeInvalidParams},
		{"authorize detail without type", "authorize", map[string]any{"authorization_details": []any{map[string]any{"actions": []string{"read"}}}}, CodeInvalidParams},
		{"authorize detail not an object", "authorize", map[string]any{"authorization_details": []any{"bank_account"}}, CodeInvalidParams},
		{"authorize empty org_id", "authorize", map[string]any{"scope": "openid", "org_id": ""}, CodeInvalidParams},
		{"authorize org_id with space", "authorize", map[string]any{"scope": "openid", "org_id": "a b"}, CodeInvalidParams},
		{"openExternal javascript", "openExternal", map[string]any{"url": "javascript:alert(1)", "gesture": true}, CodeInvalidURL},
		{"openExternal tab in scheme", "openExternal", map[string]any{"url": "java\tscript:alert(1)", "gesture": true}, CodeInvalidURL},
		{"openExternal file", "openExternal", map[string]any{"url": "file:///etc/passwd", "gesture": true}, CodeInvalidURL},
		{"openExternal data", "openExternal", map[string]any{"url": "data:text/html,hi", "gesture": true}, CodeInvalidURL},
		{"openExternal intent", "openExternal", map[string]any{"url": "intent://x#Intent;end", "gesture": true}, CodeInvalidURL},
		{"openExternal relative", "openExternal", map[string]any{"url": "/path", "gesture": true}, CodeInvalidURL},
		{"openExternal userinfo", "openExternal", map[string]any{"url": "https://good.example@evil.example/", "gesture": true}, CodeInvalidURL},
		{"openExternal without gesture", "openExternal", map[string]any{"url": "https://docs.example/", "gesture": false}, CodeNoUserGesture},
		{"openExternal gesture missing", "openExternal", map[string]any{"url": "https://docs.example/"}, CodeInvalidParams},
		{"openExternal gesture as string", "openExternal", map[string]any{"url": "https://docs.example/", "gesture": "true"}, CodeInvalidParams},
		{"openExternal url not a string", "openExternal", map[string]any{"url": map[string]any{}, "gesture": true}, CodeInvalidParams},
		{"unknown method", "eval", nil, CodeUnknownMethod},
		{"method name case", "GetContext", nil, CodeUnknownMethod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			fx.send(7, tt.method, tt.params)
			refusedWith(t, fx.view.next(t), 7, tt.code)
			if ev := fx.event(t); ev.Decision != DecisionRefused || ev.Code != tt.code {
				t.Errorf("event %+v, want refused %s", ev, tt.code)
			}
			fx.host.mu.Lock()
			defer fx.host.mu.Unlock()
			if fx.host.ready+len(fx.host.asked)+len(fx.host.opened) != 0 || fx.host.closed {
				t.Error("the host was called for a refused request")
			}
		})
	}
}

func TestGateCallTime(t *testing.T) {
	foreign := []string{
		"https://evil.example/",
		"http://app.example/",       // another scheme
		"https://app.example:8443/", // another port
		"https://app.example.evil/", // suffix
		"https://sub.app.example/",  // sub-domain
		"https://app.example./",     // trailing dot
		"https://app.example@evil.example/",
		"about:blank",
		"data:text/html,<script>miniapp.ready()</script>",
		"blob:https://evil.example/0f6c",
		"file:///app.example/index.html",
		"",
		"not a url",
	}
	for _, u := range foreign {
		t.Run("top-level "+u, func(t *testing.T) {
			fx := newFixture(t, 0)
			fx.view.navigate(u)
			fx.send(3, "getContext", nil)
			// Another site gets nothing evaluated in it, not even an error.
			fx.view.none(t)
			fx.refusedEvent(t, 1, map[Code]int{CodeWrongOrigin: 1})
		})
	}
	t.Run("same origin spelled otherwise", func(t *testing.T) {
		fx := newFixture(t, 0)
		fx.view.navigate("HTTPS://APP.example:443/other/page#x")
		fx.send(3, "ready", nil)
		if r := fx.view.next(t); !r.OK {
			t.Fatalf("refused %+v", r.Error)
		}
	})
	t.Run("blob of the Miniapp's origin", func(t *testing.T) {
		fx := newFixture(t, 0)
		fx.view.navigate("blob:https://app.example/0f6c")
		fx.send(3, "ready", nil)
		if r := fx.view.next(t); !r.OK {
			t.Fatalf("refused %+v", r.Error)
		}
	})
	t.Run("the consent view's origin", func(t *testing.T) {
		// If a host-owned page (the consent view, the service) were ever
		// shown in the Miniapp's view, its origin is not the Miniapp's.
		fx := newFixture(t, 0)
		fx.view.navigate("http://127.0.0.1:8441/authorize?client_id=c")
		fx.send(3, "authorize", map[string]any{"scope": "openid"})
		fx.view.none(t)
		fx.refusedEvent(t, 1, map[Code]int{CodeWrongOrigin: 1})
	})
	t.Run("after navigating away", func(t *testing.T) {
		// An allowed page redirects to another site, which then calls.
		fx := newFixture(t, 0)
		fx.send(1, "ready", nil)
		if r := fx.view.next(t); !r.OK {
			t.Fatalf("first call refused: %+v", r.Error)
		}
		if ev := fx.event(t); ev.Decision != DecisionAllowed {
			t.Fatalf("event %+v", ev)
		}
		fx.d.Navigated(fx.view.navigate("https://evil.example/landing"))
		fx.send(2, "getContext", nil)
		fx.view.none(t)
		fx.refusedEvent(t, 1, map[Code]int{CodeWrongOrigin: 1})
	})
	t.Run("message of a document no longer shown", func(t *testing.T) {
		fx := newFixture(t, 0)
		old := fx.view.frame()
		fx.d.Navigated(fx.view.navigate(appURL))
		b, _ := json.Marshal(map[string]any{"v": 1, "id": 9, "key": fx.d.key, "method": "close"})
		fx.d.Receive(old, string(b))
		fx.view.none(t) // the new document never asked
		if ev := fx.event(t); ev.Decision != DecisionRefused || ev.Code != CodeNavigatedAway {
			t.Errorf("event %+v, want refused navigated_away", ev)
		}
		if fx.host.closed {
			t.Error("a stale document closed the view")
		}
	})
	t.Run("subframe", func(t *testing.T) {
		fx := newFixture(t, 0)
		f := fx.view.frame()
		f.IsMainFrame = false
		b, _ := json.Marshal(map[string]any{"v": 1, "id": 5, "key": fx.d.key, "method": "close"})
		fx.d.Receive(f, string(b))
		// Any reply would reach the main frame, where it could settle a
		// promise by a forged id, or run in a page that defined the
		// receive function itself: none is sent.
		fx.view.none(t)
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
		if fx.host.closed {
			t.Error("a subframe closed the view")
		}
	})
	for name, key := range map[string]any{"wrong key": strings.Repeat("6b", 31) + "6a", "no key": nil, "empty key": ""} {
		t.Run(name, func(t *testing.T) {
			// A subframe posting straight to the webview's message
			// handler, which the host cannot tell from the main frame.
			fx := newFixture(t, 0)
			msg := map[string]any{"v": 1, "id": 5, "method": "close"}
			if key != nil {
				msg["key"] = key
			}
			b, _ := json.Marshal(msg)
			fx.d.Receive(fx.view.frame(), string(b))
			fx.view.none(t)
			fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
			if fx.host.closed {
				t.Error("a message without the key closed the view")
			}
		})
	}
	t.Run("closed", func(t *testing.T) {
		fx := newFixture(t, 0)
		fx.d.Close()
		fx.send(1, "ready", nil)
		fx.view.none(t)
		if ev := fx.event(t); ev.Code != CodeClosed {
			t.Errorf("event %+v, want closed", ev)
		}
	})
	t.Run("busy", func(t *testing.T) {
		fx := newFixture(t, 1)
		fx.send(1, "authorize", map[string]any{"scope": "openid"})
		<-fx.host.started
		fx.send(2, "ready", nil)
		refusedWith(t, fx.view.next(t), 2, CodeBusy)
		fx.host.consent <- true
		if r := fx.view.next(t); !r.OK || r.ID != 1 {
			t.Fatalf("reply %+v", r)
		}
	})
}

func TestGateReplyTime(t *testing.T) {
	tests := []struct {
		name string
		move func(fx *fixture)
		code Code
	}{
		{"origin changed, new document", func(fx *fixture) { fx.view.navigate("https://evil.example/") }, CodeNavigatedAway},
		{"origin changed, host did not count it", func(fx *fixture) { fx.view.replaceURL("https://evil.example/") }, CodeWrongOrigin},
		{"same origin, new document", func(fx *fixture) { fx.view.navigate(appURL) }, CodeNavigatedAway},
		{"went away and came back", func(fx *fixture) {
			fx.view.navigate("https://evil.example/")
			fx.view.navigate(appURL)
		}, CodeNavigatedAway},
		{"view closed", func(fx *fixture) { fx.d.Close() }, CodeClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			fx.send(1, "authorize", map[string]any{"scope": "openid"})
			<-fx.host.started
			if ev := fx.event(t); ev.Decision != DecisionAllowed {
				t.Fatalf("event %+v", ev)
			}
			tt.move(fx)
			fx.host.consent <- true
			if tt.code == CodeClosed {
				// A closed dispatcher does not even reach for the view,
				// which may be destroyed.
				fx.view.none(t)
			} else if s := fx.view.nextScript(t); s != "" {
				t.Fatalf("reply delivered to a document that did not ask: %s", s)
			}
			if ev := fx.event(t); ev.Decision != DecisionWithheld || ev.Code != tt.code || ev.Method != "authorize" {
				t.Errorf("event %+v, want authorize withheld %s", ev, tt.code)
			}
		})
	}
	t.Run("navigation cancels the call", func(t *testing.T) {
		fx := newFixture(t, 0)
		fx.send(1, "authorize", map[string]any{"scope": "openid"})
		<-fx.host.started
		fx.d.Navigated(fx.view.navigate(appURL))
		if err := <-fx.host.cancelled; !errors.Is(err, context.Canceled) {
			t.Fatalf("authorize ended with %v, want context.Canceled", err)
		}
		if s := fx.view.nextScript(t); s != "" {
			t.Fatalf("delivered %s", s)
		}
	})
	t.Run("same document, replied", func(t *testing.T) {
		// A pushState or fragment change is not a new document.
		fx := newFixture(t, 0)
		fx.send(1, "authorize", map[string]any{"scope": "openid"})
		<-fx.host.started
		fx.view.replaceURL(appOrigin + "/settings#tab")
		fx.host.consent <- true
		if r := fx.view.next(t); !r.OK || r.ID != 1 {
			t.Fatalf("reply %+v", r)
		}
	})
}

func TestHostErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		code    Code
		message string
	}{
		{"plain error hides its text", errors.New("sqlite: disk I/O error at /home/u/db"), CodeHostError, "the host could not complete getContext"},
		{"typed error passes", Errorf(CodeCancelled, "the user closed the consent view"), CodeCancelled, "the user closed the consent view"},
		{"wrapped typed error passes", errors.Join(errors.New("x"), Errorf(CodeAccessDenied, "denied")), CodeAccessDenied, "denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			fx.host.failing = tt.err
			fx.send(4, "getContext", nil)
			r := fx.view.next(t)
			refusedWith(t, r, 4, tt.code)
			if r.Error.Message != tt.message {
				t.Errorf("message %q, want %q", r.Error.Message, tt.message)
			}
		})
	}
}

func TestPageEvents(t *testing.T) {
	tests := []struct {
		name string
		emit func(d *Dispatcher)
		want string
	}{
		{"shown", (*Dispatcher).EmitShown, `{"v":1,"event":"shown","data":{}}`},
		{"hidden", (*Dispatcher).EmitHidden, `{"v":1,"event":"hidden","data":{}}`},
		{"themechanged", func(d *Dispatcher) { d.EmitThemeChanged(ThemeLight) }, `{"v":1,"event":"themechanged","data":{"theme":"light"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			tt.emit(fx.d)
			if s := fx.view.nextScript(t); s != "window."+ReceiveFunction+"("+tt.want+")" {
				t.Errorf("script %s", s)
			}
			fx.view.navigate("https://evil.example/")
			tt.emit(fx.d)
			if s := fx.view.nextScript(t); s != "" {
				t.Errorf("event given to another origin: %s", s)
			}
		})
	}
}

func TestNew(t *testing.T) {
	host, view := newMemHost(), newMemView(t, appURL)
	tests := []struct {
		name string
		cfg  Config
	}{
		{"opaque origin", Config{Host: host, View: view}},
		{"no host", Config{Origin: origin.MustParse(appOrigin), View: view}},
		{"no view", Config{Origin: origin.MustParse(appOrigin), Host: host}},
		{"short random", Config{Origin: origin.MustParse(appOrigin), Host: host, View: view, Rand: strings.NewReader("short")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.HasPrefix(err.Error(), "bridge: ") {
				t.Fatalf("err %v, want a bridge: error", err)
			}
		})
	}
	t.Run("script carries a fresh key", func(t *testing.T) {
		cfg := Config{Origin: origin.MustParse(appOrigin), Host: host, View: view}
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if a.key == b.key || len(a.key) != 64 {
			t.Fatalf("keys %q and %q: want two different 256-bit keys", a.key, b.key)
		}
		if !strings.Contains(a.Script(), `"key":"`+a.key+`"`) || strings.Contains(a.Script(), scriptPlaceholder) {
			t.Fatal("the script does not carry its configuration")
		}
	})
}
