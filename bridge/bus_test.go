package bridge

import (
	"encoding/json"
	"testing"
	"time"
)

func TestBus(t *testing.T) {
	clock := time.Date(2026, 11, 22, 18, 0, 0, 5, time.FixedZone("x", 3600))
	t.Run("envelope", func(t *testing.T) {
		bus := NewBus(func() time.Time { return clock })
		s := bus.Subscribe(2)
		bus.Publish(CookiesSyncedEvent{Origin: "https://app.example", Names: []string{"sid", "csrf"}})
		got := string(<-s.C())
		want := `{"type":"event","seq":1,"time":"2026-11-22T17:00:00.000000005Z","kind":"cookies.synced","data":{"origin":"https://app.example","names":["sid","csrf"]}}`
		if got != want || !json.Valid([]byte(got)) {
			t.Fatalf("envelope\n got %s\nwant %s", got, want)
		}
	})
	t.Run("a full subscriber is dropped, others are not", func(t *testing.T) {
		bus := NewBus(nil)
		slow, fast := bus.Subscribe(2), bus.Subscribe(8)
		for i := 0; i < 3; i++ {
			bus.Publish(BridgeCallEvent{Method: "ready", Decision: DecisionAllowed})
		}
		if !slow.Dropped() || fast.Dropped() || bus.Subscribers() != 1 {
			t.Fatalf("slow dropped %v, fast dropped %v, %d subscribers", slow.Dropped(), fast.Dropped(), bus.Subscribers())
		}
		n := 0
		for range slow.C() {
			n++
		}
		if n != 2 {
			t.Fatalf("slow subscriber kept %d envelopes, want the 2 it had room for", n)
		}
		if len(fast.C()) != 3 {
			t.Fatalf("fast subscriber has %d envelopes", len(fast.C()))
		}
		fast.Close()
		fast.Close() // twice is fine
		slow.Close() // after a drop is fine
		if bus.Subscribers() != 0 {
			t.Fatal("subscribers left")
		}
	})
	t.Run("nil bus discards", func(t *testing.T) {
		var bus *Bus
		bus.Publish(NavigationEvent{URL: "https://app.example/"})
	})
	t.Run("fingerprint", func(t *testing.T) {
		// The FIPS 180-2 vector for "abc": a test driver in any
		// language computes the same value.
		if got := Fingerprint("abc"); got != "ba7816bf8f01cfea" {
			t.Fatalf("Fingerprint(abc) = %s", got)
		}
	})
}

// TestNavigationEventRedacted: an OAuth redirect caught by the navigation
// policy carries the code (or tokens) in its URL; on the channel they are
// replaced by their fingerprints and the client's state withheld, whatever
// the host put in the event.
func TestNavigationEventRedacted(t *testing.T) {
	bus := NewBus(nil)
	s := bus.Subscribe(1)
	bus.Publish(NavigationEvent{
		URL:      "https://app.example/cb?code=SplxlOBeZQQYbYS6WxSbIA&state=xyz&iss=https%3A%2F%2Fas.example#access_token=2YotnFZFEjr1zCsicMWpAA&token_type=Bearer",
		Decision: NavigationAllowed, Rule: "miniapp-origin",
	})
	var env struct {
		Data NavigationEvent `json:"data"`
	}
	if err := json.Unmarshal(<-s.C(), &env); err != nil {
		t.Fatal(err)
	}
	want := "https://app.example/cb?code=" + Fingerprint("SplxlOBeZQQYbYS6WxSbIA") + "&state=withheld" +
		"&iss=https%3A%2F%2Fas.example#access_token=" + Fingerprint("2YotnFZFEjr1zCsicMWpAA") + "&token_type=Bearer"
	if env.Data.URL != want {
		t.Fatalf("url\n got %s\nwant %s", env.Data.URL, want)
	}
}

func TestRedactURL(t *testing.T) {
	fp := Fingerprint
	tests := []struct{ in, want string }{
		{"https://app.example/", "https://app.example/"},
		{"https://app.example/path?x=1&y=2#top", "https://app.example/path?x=1&y=2#top"},
		{"https://app.example/cb?code=abc", "https://app.example/cb?code=" + fp("abc")},
		// The server's codes and tokens get a fingerprint; what a client made
		// up (state, verifier) or a person chose (secret, password) is
		// withheld, since a guess could be checked against a fingerprint.
		{"https://app.example/cb?state=s1&code=abc&iss=x", "https://app.example/cb?state=withheld&code=" + fp("abc") + "&iss=x"},
		// Values are fingerprinted as the server reads them, percent-decoded.
		{"https://app.example/cb?code=a%2Bb", "https://app.example/cb?code=" + fp("a+b")},
		{"https://app.example/cb?code=a+b", "https://app.example/cb?code=" + fp("a b")},
		{"https://app.example/cb?code=%zz", "https://app.example/cb?code=" + fp("%zz")},
		// Names as a server might read them.
		{"https://app.example/cb?%63ode=abc", "https://app.example/cb?%63ode=" + fp("abc")},
		{"https://app.example/cb?CODE=abc", "https://app.example/cb?CODE=" + fp("abc")},
		{"https://app.example/cb?a=1;code=abc", "https://app.example/cb?a=1;code=" + fp("abc")},
		// Every name of the list, in the fragment too (implicit flow).
		{"https://app.example/cb#access_token=at&token_type=Bearer&id_token=it&state=s",
			"https://app.example/cb#access_token=" + fp("at") + "&token_type=Bearer&id_token=" + fp("it") + "&state=withheld"},
		{"https://as.example/token?refresh_token=rt&client_secret=cs&code_verifier=cv",
			"https://as.example/token?refresh_token=" + fp("rt") + "&client_secret=withheld&code_verifier=withheld"},
		{"https://as.example/t?password=hunter2&client_assertion=eyJ&assertion=x&token=t&DPoP=p",
			"https://as.example/t?password=withheld&client_assertion=withheld&assertion=withheld&token=" + fp("t") + "&DPoP=withheld"},
		// A single-page app's fragment route.
		{"https://app.example/#/cb?code=abc&state=s", "https://app.example/#/cb?code=" + fp("abc") + "&state=withheld"},
		// Whatever the spelling of the URL: a scheme in any case, spaces
		// around it, a relative URL, a header's syntax, a bare parameter.
		{"HTTP://127.0.0.1:19556/cb?code=abc&state=s", "HTTP://127.0.0.1:19556/cb?code=" + fp("abc") + "&state=withheld"},
		{"  https://app.example/cb?code=abc ", "  https://app.example/cb?code=" + fp("abc ")},
		{"/cb?code=abc", "/cb?code=" + fp("abc")},
		{"cb?code=abc", "cb?code=" + fp("abc")},
		{"0; url=/cb?code=abc", "0; url=/cb?code=" + fp("abc")},
		{`</cb?code=abc>; rel="next"`, "</cb?code=" + fp("abc>") + `; rel="next"`},
		{"code=abc&state=s", "code=" + fp("abc") + "&state=withheld"},
		{"https://app.example/cb?code[]=abc", "https://app.example/cb?code[]=" + fp("abc")},
		// A URL percent-encoded in another's parameter: decoded, redacted.
		{"https://as.example/a?redirect_uri=https%3A%2F%2Fapp.example%2Fcb%3Fcode%3Dabc",
			"https://as.example/a?redirect_uri=https://app.example/cb?code=" + fp("abc")},
		{"https://as.example/a?r=https%253A%252F%252Fa.example%252Fcb%253Fstate%253Ds",
			"https://as.example/a?r=https://a.example/cb?state=withheld"},
		// Only the values of those names; an empty value stays empty.
		{"https://app.example/cb?code=&codes=abc&xcode=abc&code", "https://app.example/cb?code=&codes=abc&xcode=abc&code"},
		// A value that contains "=" or "?" is one value; a name hidden
		// in another parameter's value is found.
		{"https://app.example/cb?code=a=b&x=1", "https://app.example/cb?code=" + fp("a=b") + "&x=1"},
		{"https://app.example/cb?code=a?b&x=1", "https://app.example/cb?code=" + fp("a?b") + "&x=1"},
		{"https://app.example/cb?x=1?code=abc", "https://app.example/cb?x=1?code=" + fp("abc")},
		{"https://app.example/cb?x=1#code=abc", "https://app.example/cb?x=1#code=" + fp("abc")},
		// Not a URL at all: still redacted, never an error.
		{"::?code=abc", "::?code=" + fp("abc")},
		{"", ""},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
