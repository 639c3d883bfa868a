package bridge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/redact"
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
		if got := redact.Fingerprint("abc"); got != "ba7816bf8f01cfea" {
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
	want := "https://app.example/cb?code=" + redact.Fingerprint("SplxlOBeZQQYbYS6WxSbIA") + "&state=withheld" +
		"&iss=https%3A%2F%2Fas.example#access_token=" + redact.Fingerprint("2YotnFZFEjr1zCsicMWpAA") + "&token_type=Bearer"
	if env.Data.URL != want {
		t.Fatalf("url\n got %s\nwant %s", env.Data.URL, want)
	}
}

// TestNavigationEventWithholdsUserinfo: a navigation to a URL with a
// password in its userinfo (RFC 3986 section 3.2.1) goes on the channel
// with the password withheld and the user kept.
func TestNavigationEventWithholdsUserinfo(t *testing.T) {
	bus := NewBus(nil)
	s := bus.Subscribe(1)
	bus.Publish(NavigationEvent{URL: "https://qa:hunter2-PASSW0RD@app.example/cb?x=1", Decision: NavigationBlocked, Rule: "other-origin"})
	var env struct {
		Data NavigationEvent `json:"data"`
	}
	raw := <-s.C()
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	if want := "https://qa:withheld@app.example/cb?x=1"; env.Data.URL != want || strings.Contains(string(raw), "PASSW0RD") {
		t.Fatalf("url %s, want %s; the event: %s", env.Data.URL, want, raw)
	}
}
