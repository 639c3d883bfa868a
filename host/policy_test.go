package host

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestPolicyDecide(t *testing.T) {
	p := &Policy{Authorize: &url.URL{Scheme: "http", Host: "127.0.0.1:8080", Path: "/oauth/authorize"},
		Allowed: []string{"https://app.example", "http://127.0.0.1:8701"}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		url     string
		gesture bool
		redir   bool
		newWin  bool
		want    Action
	}{
		// The authorization endpoint, however it is spelled.
		{url: "http://127.0.0.1:8080/oauth/authorize?client_id=x", want: Consent},
		{url: "http://127.0.0.1:8080/oauth/authorize", redir: true, want: Consent},
		{url: "http://127.0.0.1:8080/oauth/authorize/", want: Consent},
		{url: "http://127.0.0.1:8080/oauth/%61uthorize", want: Consent},
		{url: "http://127.0.0.1:8080/oauth/x/../authorize", want: Consent},
		{url: "http://127.0.0.1:8080/oauth/%2e%2e/oauth/authorize", want: Consent},
		{url: `http://127.0.0.1:8080\oauth\authorize`, want: Consent},
		{url: "HTTP://127.0.0.1:8080/oauth/authorize", want: Consent},
		{url: "http://2130706433:8080/oauth/authorize", want: Consent},
		{url: "http://0x7f.1:8080/oauth/authorize", want: Consent},
		{url: "http://127.0.0.1:8080/oauth/authorize", newWin: true, want: Consent},
		{url: "http://127.0.0.1:8080/oauth/authorizex", want: Block},
		{url: "http://127.0.0.1:8080/oauth/token", want: Block},
		{url: "https://127.0.0.1:8080/oauth/authorize", want: Block},
		{url: "http://127.0.0.1:8081/oauth/authorize", want: Block},
		// Other names of the service's server: never loaded, never handed
		// to the system browser, even on a click.
		{url: "http://localhost:8080/oauth/authorize", gesture: true, want: Block},
		{url: "http://localhost.:8080/oauth/authorize", gesture: true, want: Block},
		{url: "http://[::1]:8080/oauth/authorize", gesture: true, want: Block},
		{url: "http://127.0.0.2:8080/oauth/authorize", gesture: true, want: Block},
		// Allowed origins, compared whole.
		{url: "https://app.example/x", want: Allow},
		{url: "HTTPS://APP.EXAMPLE:443/x", want: Allow},
		{url: "https://app.example/x", newWin: true, want: Allow},
		{url: "http://localhost:8701/", want: Block},
		{url: "http://127.0.0.1:8701/cb?code=1", want: Allow},
		{url: "https://app.example./", want: Block},
		{url: "https://app.example.evil/", want: Block},
		{url: "https://app.example.community/", want: Block},
		{url: "https://app.example@evil.example/", want: Block},
		{url: "http://app.example/", want: Block},
		{url: "https://app.example:8443/", want: Block},
		{url: "//evil.example/app", want: Block},
		{url: "/relative", want: Block},
		// Schemes without a network origin.
		{url: "javascript:alert(1)", gesture: true, want: Block},
		{url: "java\tscript:alert(1)", gesture: true, want: Block},
		{url: "data:text/html,hi", want: Block},
		{url: "blob:https://evil.example/3f1a", want: Block},
		{url: "blob:https://app.example/3f1a", want: Allow},
		{url: "file:///etc/passwd", gesture: true, want: Block},
		{url: "intent://scan#Intent;end", gesture: true, want: Block},
		{url: "about:blank", want: Allow},
		{url: "about:srcdoc", want: Allow},
		{url: "about:blank", newWin: true, want: Block},
		// Elsewhere: the system browser on a user gesture only.
		{url: "https://docs.example/help", gesture: true, want: External},
		{url: "https://docs.example/help", want: Block},
		{url: "https://docs.example/help", gesture: true, redir: true, want: Block},
		{url: "ftp://docs.example/file", gesture: true, want: Block},
		// URLs a browser loads but Go's url.URL cannot carry (a "%" that
		// starts no escape): their origin decides.
		{url: "https://app.example/#/sale/50%", want: Allow},
		{url: "https://app.example/#/sale/50%", newWin: true, want: Allow},
		{url: "https://app.example/50%/off", want: Allow},
		{url: "https://docs.example/#50%", gesture: true, want: Block},
		{url: "http://127.0.0.1:8080/oauth/authorize#50%", want: Block},
		{url: "http://127.0.0.1:8080/oauth/authorize?client_id=x#50%", gesture: true, want: Block},
		{url: "data:text/html,50%", want: Block},
	}
	for _, c := range cases {
		got, rule, u := p.DecideRule(Navigation{URL: c.url, UserGesture: c.gesture, Redirect: c.redir, NewWindow: c.newWin})
		if got != c.want {
			t.Errorf("Decide(%q, gesture %v, redirect %v, new window %v) = %v, want %v", c.url, c.gesture, c.redir, c.newWin, got, c.want)
		}
		// Every decision names its rule, which the notice and -v explain.
		if DescribeRule(rule) == "" {
			t.Errorf("Decide(%q) = %v by the rule %q, which DescribeRule does not know", c.url, got, rule)
		}
		// The window needs the canonical URL to consent or hand it on.
		if (got == Consent || got == External) && u == nil {
			t.Errorf("Decide(%q) = %v without a URL", c.url, got)
		}
	}
}

// TestPolicyOtherServer: a sign-in with an authorization server that is
// not the service (another port of the same machine, another host, an
// endpoint named otherwise but carrying an authorization request) is
// blocked by its own rule, even on a click, which would otherwise hand it
// to the system browser; the Miniapp's own origins and pages that merely
// look alike are not.
func TestPolicyOtherServer(t *testing.T) {
	p := &Policy{Authorize: &url.URL{Scheme: "http", Host: "127.0.0.1:8600", Path: "/oauth/authorize"},
		Allowed: []string{"http://127.0.0.1:8701"}}
	for _, c := range []struct {
		url     string
		gesture bool
		want    Action
		rule    string
	}{
		{"http://127.0.0.1:8610/oauth/authorize?response_type=code&client_id=demo-public&state=s", false, Block, RuleOtherServer},
		{"http://127.0.0.1:8610/oauth/authorize?response_type=code&client_id=demo-public&state=s", true, Block, RuleOtherServer},
		{"https://id.other.example/authorize", true, Block, RuleOtherServer},
		{"https://id.other.example/oauth2/v1/AUTHORIZE/", true, Block, RuleOtherServer},
		{"https://id.other.example/realms/x/protocol/openid-connect/auth?client_id=c&response_type=code", true, Block, RuleOtherServer},
		{"http://127.0.0.1:8600/oauth/authorize?client_id=demo-public", false, Consent, RuleAuthorize},
		{"http://localhost:8600/oauth/authorize", true, Block, RuleAuthorizeAlias},
		{"http://127.0.0.1:8701/oauth/authorize", false, Allow, RuleAllowedOrigin},
		{"https://docs.example/authorize-me", true, External, RuleExternal},
		{"https://docs.example/help?client_id=c", true, External, RuleExternal},
		{"https://docs.example/help", false, Block, RuleNotAllowed},
	} {
		got, rule, _ := p.DecideRule(Navigation{URL: c.url, UserGesture: c.gesture, Trigger: TriggerLink})
		if got != c.want || rule != c.rule {
			t.Errorf("DecideRule(%q, gesture %v) = %v by %q, want %v by %q", c.url, c.gesture, got, rule, c.want, c.rule)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []*Policy{{}, {Authorize: &url.URL{Scheme: "data", Opaque: "x"}}} {
		if err := p.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", p)
		}
	}
}

func TestPolicyFilterRules(t *testing.T) {
	cases := []struct {
		authorize      string
		blocked, loads []string
	}{
		{"http://127.0.0.1:8080/oauth/authorize",
			[]string{"http://127.0.0.1:8080/oauth/authorize?client_id=x", "ws://127.0.0.1:8080/oauth/authorize",
				"ws://localhost:8080/oauth/authorize", "http://localhost.:8080/oauth/authorize", "ws://[::1]:8080/oauth/authorize",
				"http://127.0.0.2:8080/oauth/authorize", "http://127.0.0.1:8080/oauth/%61uthorize", "ws://u:p@127.0.0.1:8080/oauth/authorize",
				"http://127.0.0.1:8080/oauth/authorize/x", "http://127.0.0.1:8080/x/%2e%2e/oauth/authorize"},
			[]string{"http://127.0.0.1:8080/oauth/token", "http://127.0.0.1:8081/oauth/authorize", "http://127.0.0.1:80800/oauth/authorize",
				"http://127.0.0.1:8080/api/x", "https://app.example/oauth/authorize", "ws://127.0.0.1:8081/oauth/authorize"}},
		{"https://auth.example/oauth/authorize",
			[]string{"https://auth.example/oauth/authorize?x", "wss://auth.example/oauth/authorize", "https://auth.example./oauth/authorize"},
			[]string{"https://auth.example.evil/oauth/authorize", "https://evil.auth.example/oauth/authorize",
				"https://auth.example:8443/oauth/authorize", "wss://auth.example/other"}},
	}
	for _, c := range cases {
		u, err := url.Parse(c.authorize)
		if err != nil {
			t.Fatal(err)
		}
		p := &Policy{Authorize: u}
		var rules []struct {
			Trigger struct {
				URLFilter    string   `json:"url-filter"`
				ResourceType []string `json:"resource-type"`
			} `json:"trigger"`
			Action struct {
				Type string `json:"type"`
			} `json:"action"`
		}
		if err := json.Unmarshal([]byte(p.FilterRules()), &rules); err != nil {
			t.Fatalf("rules are not JSON: %v\n%s", err, p.FilterRules())
		}
		var res []*regexp.Regexp
		for i, r := range rules {
			if r.Action.Type != "block" {
				t.Errorf("rule %d: %q", i, r.Action.Type)
			}
			if strings.Contains(r.Trigger.URLFilter, "|") {
				t.Errorf("rule %d has a disjunction, which WebKit's content blockers refuse: %s", i, r.Trigger.URLFilter)
			}
			types := strings.Join(r.Trigger.ResourceType, ",")
			if strings.Contains(types, "popup") || !strings.Contains(types, "websocket") || !strings.Contains(types, "fetch") {
				t.Errorf("rule %d types %s: want fetch and websocket, never popup (which must reach the create signal)", i, types)
			}
			res = append(res, regexp.MustCompile(r.Trigger.URLFilter))
		}
		matches := func(u string) bool {
			for _, re := range res {
				if re.MatchString(u) {
					return true
				}
			}
			return false
		}
		for _, b := range c.blocked {
			if !matches(b) {
				t.Errorf("%s: %s is not blocked", c.authorize, b)
			}
		}
		for _, l := range c.loads {
			if matches(l) {
				t.Errorf("%s: %s is blocked", c.authorize, l)
			}
		}
	}
}

// TestPolicyNoSignInFromOpaqueSchemes: a URL with a scheme that no server
// receives (javascript:, data:, blob:) is never a request to the
// authorization endpoint, whatever authorization URL its text carries: in
// any spelling of the scheme, %-encoded and JSON-escaped as a page puts it
// in a frame's src, and also with an endpoint served at the root of the
// service, where an opaque path would otherwise read as "/". A blob: URL
// has the origin of its inner URL, so the service's own blob: URL is
// blocked as not allowed, and an allowed origin's loads.
func TestPolicyNoSignInFromOpaqueSchemes(t *testing.T) {
	for _, ep := range []string{"/oauth/authorize", "/"} {
		authz := "http://127.0.0.1:8080" + strings.TrimSuffix(ep, "/")
		q := "?client_id=cli_x&code_challenge=c&probe=nav-javascript-frame&redirect_uri=http%3A%2F%2F127.0.0.1%3A8701%2Fcb&response_type=code"
		full := authz + q
		if ep == "/" {
			full = authz + "/" + q
		}
		lit, err := json.Marshal(full)
		if err != nil {
			t.Fatal(err)
		}
		// What a hostile page sets as a frame's src: the script, its
		// string JSON-escaped, the whole %-encoded.
		frameSrc := "javascript:" + url.PathEscape("void(location.href="+string(lit)+")")
		escapedAmp := strings.ReplaceAll(string(lit), "&", `\u0026`)
		p := &Policy{Authorize: mustParse(t, "http://127.0.0.1:8080"+ep), Allowed: []string{"http://127.0.0.1:8701"}}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			url  string
			want Action
			rule string
		}{
			{"javascript:location.href=" + string(lit), Block, RuleNoOrigin},
			{"JaVaScRiPt:location.href=" + string(lit), Block, RuleNoOrigin},
			{"java\tscript:location.href=" + string(lit), Block, RuleNoOrigin},
			{" javascript:" + full, Block, RuleNoOrigin},
			{"javascript:" + full, Block, RuleNoOrigin},
			{"javascript://" + strings.TrimPrefix(full, "http://"), Block, RuleNoOrigin},
			{frameSrc, Block, RuleNoOrigin},
			{"javascript:void(location.href=" + escapedAmp + ")", Block, RuleNoOrigin},
			{"data:text/html,<script>location.href=" + string(lit) + "</script>", Block, RuleNoOrigin},
			{"DATA:text/html;base64,aHR0cDovLzEyNy4wLjAuMTo4MDgwL29hdXRoL2F1dGhvcml6ZQ==", Block, RuleNoOrigin},
			{"blob:" + full, Block, RuleNotAllowed},
			{"BLOB:" + full, Block, RuleNotAllowed},
			{"blob:http://127.0.0.1:8701/" + q, Allow, RuleAllowedOrigin},
			{"blob:https://evil.example/3f1a" + q, Block, RuleNotAllowed},
			// The control: the URL the script navigates to is the sign-in,
			// decided on its own when the view asks for it.
			{full, Consent, RuleAuthorize},
		} {
			for _, gesture := range []bool{false, true} {
				got, rule, _ := p.DecideRule(Navigation{URL: c.url, UserGesture: gesture, Trigger: TriggerOther})
				if got != c.want || rule != c.rule {
					t.Errorf("endpoint %s: DecideRule(%q, gesture %v) = %v by %q, want %v by %q", ep, c.url, gesture, got, rule, c.want, c.rule)
				}
			}
			if u, err := parseCanonical(c.url); err == nil && c.want != Consent && p.IsAuthorize(u) {
				t.Errorf("endpoint %s: IsAuthorize(%q) = true", ep, c.url)
			}
		}
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
