package netlog

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/redact"
)

// Secrets the tests put in requests; none may appear in anything the log
// keeps.
const (
	secretCookie = "cookie-value-7f3a91"
	secretClient = "client-secret-5b2e77"
	secretToken  = "eyJhbGciOi.access-token-0c4d.sig"
	secretCode   = "code-a81b29"
	secretVerify = "verifier-d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a"
)

var allSecrets = []string{secretCookie, secretClient, secretToken, secretCode, secretVerify}

func assertNoSecret(t *testing.T, what string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range allSecrets {
		if strings.Contains(string(b), s) {
			t.Errorf("%s holds the secret %q: %s", what, s, b)
		}
		if strings.Contains(string(b), url.QueryEscape(s)) {
			t.Errorf("%s holds the secret %q, escaped: %s", what, s, b)
		}
	}
}

// TestRecordRedacts: a token request and its answer as the backend sends
// them keep their shape and lose their secrets.
func TestRecordRedacts(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	x := Exchange{Source: SourceBackend, Kind: KindToken, Method: "post",
		URL: "https://svc.example/oauth/token?client_secret=" + secretClient,
		RequestHeader: http.Header{
			"Authorization":   {"Basic " + secretClient},
			"Cookie":          {"demo_login=" + secretCookie + "; theme=dark"},
			"Content-Type":    {"application/x-www-form-urlencoded"},
			"X-Client-Secret": {secretClient},
		},
		RequestBody: []byte("grant_type=authorization_code&code=" + secretCode + "&code_verifier=" + secretVerify + "&redirect_uri=https%3A%2F%2Fapp.example%2Fcb"),
		Status:      200, HTTPVersion: "HTTP/1.1",
		ResponseHeader: http.Header{
			"Content-Type": {"application/json"},
			"Set-Cookie":   {"demo_session=" + secretCookie + "; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=3600"},
			"Location":     {"https://app.example/cb?code=" + secretCode + "&state=xyz"},
		},
		ResponseBody: []byte(`{"access_token":"` + secretToken + `","token_type":"Bearer","nested":{"refresh_token":"` + secretToken +
			`"},"redirect":"https://app.example/cb?code=` + secretCode + `"}`),
		Started: start, Sent: start.Add(time.Millisecond), FirstByte: start.Add(5 * time.Millisecond), Done: start.Add(7 * time.Millisecond),
	}
	x.RequestSize, x.ResponseSize = int64(len(x.RequestBody)), int64(len(x.ResponseBody))
	e := record(x)
	assertNoSecret(t, "the entry", e)

	if e.Request.Method != "POST" {
		t.Errorf("method %q, want POST", e.Request.Method)
	}
	want := map[string]string{
		// A client secret is chosen by people: no fingerprint to check a
		// guess against.
		"Authorization":   "Basic " + withheld,
		"Cookie":          "demo_login=" + redacted(secretCookie) + "; theme=" + redacted("dark"),
		"X-Client-Secret": withheld,
	}
	for _, h := range e.Request.Headers {
		if w, ok := want[h.Name]; ok && h.Value != w {
			t.Errorf("request header %s: %q, want %q", h.Name, h.Value, w)
		}
	}
	if len(e.Request.Cookies) != 2 || e.Request.Cookies[0].Name != "demo_login" {
		t.Errorf("request cookies %+v, want demo_login and theme by name", e.Request.Cookies)
	}
	if !strings.Contains(e.Request.Body.Text, "code="+url.QueryEscape(redacted(secretCode))) ||
		!strings.Contains(e.Request.Body.Text, "redirect_uri=https%3A%2F%2Fapp.example%2Fcb") {
		t.Errorf("form body %q: want the code's fingerprint and the rest as sent", e.Request.Body.Text)
	}
	r := e.Response
	if r == nil || r.Status != 200 || r.StatusText != "OK" {
		t.Fatalf("response %+v", r)
	}
	if len(r.Cookies) != 1 {
		t.Fatalf("response cookies %+v", r.Cookies)
	}
	c := r.Cookies[0]
	if c.Name != "demo_session" || !c.HTTPOnly || !c.Secure || c.SameSite != "Lax" || c.Path != "/" || c.MaxAge == nil || *c.MaxAge != 3600 {
		t.Errorf("Set-Cookie read as %+v; want its name and every flag", c)
	}
	if !strings.Contains(r.Body.Text, `"access_token": "`+redacted(secretToken)+`"`) {
		t.Errorf("response body %s: want the token as its fingerprint", r.Body.Text)
	}
	if !strings.Contains(r.Body.Text, `"token_type": "Bearer"`) {
		t.Errorf("response body %s lost what is not secret", r.Body.Text)
	}
	if e.DurationMS != 7 || e.Timings.Send+e.Timings.Wait+e.Timings.Receive != e.DurationMS || e.Timings.Wait != 4 {
		t.Errorf("duration %v, timings %+v; want 7 ms split 1/4/2", e.DurationMS, e.Timings)
	}
}

// TestBodiesOtherThanJSONAndFormAreNotKept: the log cannot tell what in an
// HTML page is secret, so it keeps its size and type only.
func TestBodiesOtherThanJSONAndFormAreNotKept(t *testing.T) {
	html := "<p>your token is " + secretToken + "</p>"
	e := record(Exchange{Method: "GET", URL: "https://app.example/", Status: 200,
		ResponseHeader: http.Header{"Content-Type": {"text/html"}}, ResponseBody: []byte(html), ResponseSize: int64(len(html))})
	assertNoSecret(t, "the entry", e)
	if e.Response.Body == nil || e.Response.Body.Size != int64(len(html)) || e.Response.Body.Comment == "" {
		t.Errorf("body %+v: want its size and why it was not kept", e.Response.Body)
	}
}

// TestCurlQuotes: copy as curl gives one shell word per argument, whatever
// the request holds.
func TestCurlQuotes(t *testing.T) {
	r := Request{Method: "POST", URL: "https://a.example/x?q=it's", Headers: []Header{{"X-Note", `a 'b' "c" $d`}},
		Body: &Body{Text: `{"a":"it's"}`}}
	got := curl(r)
	want := `curl -X 'POST' 'https://a.example/x?q=it'\''s' -H 'X-Note: a '\''b'\'' "c" $d' --data-raw '{"a":"it'\''s"}'`
	if got != want {
		t.Errorf("curl:\n got %s\nwant %s", got, want)
	}
	words, ok := shellWords(got)
	if !ok || len(words) != 8 || words[3] != "https://a.example/x?q=it's" || words[5] != `X-Note: a 'b' "c" $d` {
		t.Errorf("the line splits into %q", words)
	}
}

// shellWords splits a line of single-quoted words and '\” as a POSIX
// shell does; it knows nothing else.
func shellWords(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	in, has := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in && c == '\'':
			in = false
		case in:
			cur.WriteByte(c)
		case c == '\'':
			in, has = true, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			has = true
		case c == ' ':
			if has {
				words = append(words, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteByte(c)
			has = true
		}
	}
	if in {
		return nil, false
	}
	if has {
		words = append(words, cur.String())
	}
	return words, true
}

// TestAuthorizeDecoded: the caught request is listed parameter by
// parameter, its authorization_details pretty-printed and state withheld.
func TestAuthorizeDecoded(t *testing.T) {
	u, _ := url.Parse("https://svc.example/oauth/authorize?response_type=code&client_id=c1&state=" + secretCode +
		"&authorization_details=" + url.QueryEscape(`[{"type":"payment_initiation","actions":["initiate"]}]`))
	e := authorizeEntry(u, time.Now())
	assertNoSecret(t, "the entry", e)
	a := e.Authorize
	if a == nil || a.Endpoint != "https://svc.example/oauth/authorize" || len(a.Params) != 4 {
		t.Fatalf("authorize %+v", a)
	}
	if a.Params[2].Name != "state" || a.Params[2].Value != redact.Withheld {
		t.Errorf("state %+v, want it withheld (the client made it up: no fingerprint to check a guess against)", a.Params[2])
	}
	if !strings.Contains(a.AuthorizationDetails, "\n  {\n    \"actions\": [") {
		t.Errorf("authorization_details not pretty-printed: %s", a.AuthorizationDetails)
	}
	bad, _ := url.Parse("https://svc.example/oauth/authorize?authorization_details=%5B")
	if e := authorizeEntry(bad, time.Now()); e.Authorize.AuthorizationDetailsError == "" {
		t.Error("broken authorization_details gives no error")
	}
}

// TestTransportRecordsFlow: a flow's calls through the transport are
// entries with request, response and timings, and the caller reads the
// body unchanged.
func TestTransportRecordsFlow(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "s="+secretCookie+"; HttpOnly")
		_, _ = w.Write([]byte(`{"echo":` + string(b) + `,"access_token":"` + secretToken + `"}`))
	}))
	defer srv.Close()
	bus := &events{}
	l := New(Config{Events: bus})
	la := l.BeginLaunch("https://app.example", "app", "c1")
	u, _ := url.Parse(srv.URL + "/oauth/authorize?client_id=c1")
	f := la.BeginFlow(u)
	c := Client(srv.Client())
	ctx := Into(t.Context(), f, SourceHost, KindNativeConsent)
	if FlowOf(ctx) != f || FlowOf(t.Context()) != nil {
		t.Error("FlowOf does not give the flow the context records in")
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/native", strings.NewReader(`{"client_secret":"`+secretClient+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), secretClient) || !strings.Contains(string(body), secretToken) {
		t.Errorf("the caller got %s, not the server's answer", body)
	}
	// A request without a flow in its context is not recorded.
	if _, err := c.Get(srv.URL + "/other"); err != nil {
		t.Fatal(err)
	}
	f.End(OutcomeCompleted, "")
	x, ok := l.Flow(f.ID())
	if !ok || len(x.Entries) != 2 {
		t.Fatalf("flow %+v, want the authorize entry and the call", x)
	}
	assertNoSecret(t, "the flow", x)
	e := x.Entries[1]
	if e.Kind != KindNativeConsent || e.Response == nil || e.Response.Status != 200 || e.Request.Body == nil ||
		!strings.Contains(e.Response.Body.Text, `"echo"`) || e.DurationMS < 0 {
		t.Errorf("entry %+v", e)
	}
	if x.Outcome != OutcomeCompleted || x.Ended == nil || x.ClientID != "c1" || x.Origin != "https://app.example" {
		t.Errorf("summary %+v", x.FlowSummary)
	}
	// Then one flow.ended, once the log holds the outcome; a second End
	// changes nothing and says nothing.
	f.End(OutcomeError, "too late")
	if len(bus.evs) != 3 || bus.evs[1].(NetworkEvent).EntryKind != KindNativeConsent {
		t.Fatalf("events %+v, want one network event per entry, then flow.ended", bus.evs)
	}
	if end, ok := bus.evs[2].(FlowEndedEvent); !ok || end != (FlowEndedEvent{Flow: f.ID(), Launch: la.ID, Outcome: OutcomeCompleted}) ||
		end.Kind() != "flow.ended" {
		t.Errorf("last event %+v, want flow.ended completed of %s", bus.evs[2], f.ID())
	}
	if x, _ := l.Flow(f.ID()); x.Outcome != OutcomeCompleted {
		t.Errorf("a second End changed the outcome to %s", x.Outcome)
	}
	h, ok := l.HAR(f.ID())
	if !ok || h.Log.Version != "1.2" || len(h.Log.Entries) != 2 {
		t.Fatalf("HAR %+v", h)
	}
	assertNoSecret(t, "the HAR", h)
	if _, ok := l.HAR("f999"); ok {
		t.Error("an unknown flow has a HAR")
	}
}

// TestBounds: the log keeps at most MaxFlows flows and MaxEntries entries
// a flow, the authorize entry always.
func TestBounds(t *testing.T) {
	l := New(Config{MaxFlows: 3, MaxEntries: 4})
	la := l.BeginLaunch("https://app.example", "app", "c1")
	u, _ := url.Parse("https://svc.example/authorize?client_id=c1")
	var last *Flow
	for range 5 {
		last = la.BeginFlow(u)
	}
	for i := range 10 {
		last.Add(Exchange{Kind: KindResource, Method: "GET", URL: "https://app.example/" + string(rune('a'+i)), Started: time.Now()})
	}
	fs := l.Flows()
	if len(fs) != 3 || fs[2].ID != last.ID() {
		t.Fatalf("flows %+v, want the 3 latest", fs)
	}
	x, _ := l.Flow(last.ID())
	if len(x.Entries) != 4 || x.Entries[0].Kind != KindAuthorize || x.Dropped != 7 || !strings.HasSuffix(x.Entries[3].Request.URL, "/j") {
		t.Errorf("entries %d (dropped %d): want the authorize entry and the 3 latest", len(x.Entries), x.Dropped)
	}
	// Nil receivers do nothing.
	var nl *Log
	nl.BeginLaunch("", "", "").BeginFlow(u).Add(Exchange{})
}

type events struct{ evs []Event }

func (b *events) Publish(e Event) { b.evs = append(b.evs, e) }

// FuzzRecord: whatever a server or page sends, recording never panics,
// and a secret in a secret place never survives.
func FuzzRecord(f *testing.F) {
	f.Add("application/json", `{"access_token":"SECRET","a":[{"code":"SECRET"}]}`, "s=SECRET; Path=/", "Bearer SECRET")
	f.Add("application/x-www-form-urlencoded", "code=SECRET&client_secret=SECRET", "bad", "SECRET")
	f.Add("text/plain", "SECRET", "=SECRET;;", "Basic  SECRET")
	f.Fuzz(func(t *testing.T, ctype, body, setCookie, auth string) {
		const secret = "SECRET"
		e := record(Exchange{Method: "POST", URL: "https://a.example/?code=" + secret,
			RequestHeader: http.Header{"Content-Type": {ctype}, "Authorization": {auth}, "Cookie": {"a=" + secret}},
			RequestBody:   []byte(body), RequestSize: int64(len(body)), Status: 200,
			ResponseHeader: http.Header{"Content-Type": {ctype}, "Set-Cookie": {setCookie}}, ResponseBody: []byte(body)})
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		// Where a secret goes in a header the log knows, it never stays.
		for _, h := range e.Request.Headers {
			if (h.Name == "Cookie" || h.Name == "Authorization") && strings.Contains(h.Value, secret) &&
				!strings.Contains(auth, "redacted:") {
				t.Errorf("header %s kept the secret: %q", h.Name, h.Value)
			}
		}
		if strings.Contains(e.Request.URL, "code="+secret) {
			t.Errorf("URL kept the code: %s", e.Request.URL)
		}
		if !json.Valid(b) {
			t.Errorf("the entry is not JSON: %s", b)
		}
		if _, ok := shellWords(e.Curl); !ok {
			t.Errorf("copy as curl is not one shell line: %s", e.Curl)
		}
	})
}

// TestInjectedMarked: an answer that carries Miniapp-Host-Injected (a
// development fault made it) is an entry marked injected, in the log's
// JSON, its network event and its HAR (_injected); a real answer is not.
func TestInjectedMarked(t *testing.T) {
	const mark = "fault=flt_abc; endpoint=token; effect=error"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/faulty" {
			w.Header().Set(HeaderInjected, mark)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
	}))
	defer srv.Close()
	bus := &events{}
	l := New(Config{Events: bus})
	la := l.BeginLaunch("https://app.example", "app", "c1")
	u, _ := url.Parse(srv.URL + "/oauth/authorize?client_id=c1")
	f := la.BeginFlow(u)
	c := Client(srv.Client())
	for _, p := range []string{"/faulty", "/real"} {
		req, _ := http.NewRequestWithContext(Into(t.Context(), f, SourceHost, KindToken), "POST", srv.URL+p, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	x, _ := l.Flow(f.ID())
	if len(x.Entries) != 3 || x.Entries[1].Injected != mark || x.Entries[2].Injected != "" {
		t.Fatalf("entries: want the first call marked %q and the second not, got %+v", mark, x.Entries)
	}
	b, _ := json.Marshal(x.Entries[1])
	if !strings.Contains(string(b), `"injected":"`+mark+`"`) {
		t.Errorf("the entry's JSON has no injected member: %s", b)
	}
	if ev := bus.evs[1].(NetworkEvent); ev.Injected != mark {
		t.Errorf("network event %+v: want injected %q", ev, mark)
	}
	h, _ := l.HAR(f.ID())
	hb, _ := json.Marshal(h.Log.Entries)
	if h.Log.Entries[1].Injected != mark || strings.Count(string(hb), `"_injected"`) != 1 {
		t.Errorf("HAR: want _injected on the faulty entry only: %s", hb)
	}
}
