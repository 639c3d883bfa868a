package bridge

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// busEvent is an event envelope as a subscriber gets it, any kind.
type busEvent struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
	raw  string
}

// nextEvent waits for the fixture's next event of any kind.
func (fx *fixture) nextEvent(t testing.TB) busEvent {
	t.Helper()
	select {
	case env, ok := <-fx.events.C():
		if !ok {
			t.Fatal("the event subscription was dropped")
		}
		var e busEvent
		if err := json.Unmarshal(env, &e); err != nil {
			t.Fatalf("event %s: %v", env, err)
		}
		e.raw = string(env)
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return busEvent{}
	}
}

// noEvent asserts that no event is published for a while.
func (fx *fixture) noEvent(t testing.TB) {
	t.Helper()
	select {
	case env := <-fx.events.C():
		t.Fatalf("unexpected event %s", env)
	case <-time.After(50 * time.Millisecond):
	}
}

// refusedEvent waits for the next event and requires a bridge.refused
// with this count and these reasons.
func (fx *fixture) refusedEvent(t testing.TB, count int, reasons map[Code]int) {
	t.Helper()
	e := fx.nextEvent(t)
	want, _ := json.Marshal(struct {
		Count   int          `json:"count"`
		Reasons map[Code]int `json:"reasons"`
	}{count, reasons})
	if e.Kind != "bridge.refused" || string(e.Data) != string(want) {
		t.Fatalf("event %s, want bridge.refused %s", e.raw, want)
	}
}

// TestUntrustedGetsNothing: a message that cannot be attributed to this
// view's bridge script in the Miniapp's main frame gets no reply at all.
// A reply is a host Eval in the sender's page, which a foreign page could
// have prepared a receive function for, and which WebKit counts as a user
// gesture.
func TestUntrustedGetsNothing(t *testing.T) {
	const key = "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b"
	const method = "getContext<img src=x onerror=alert(1)>"
	tests := []struct {
		name   string
		msg    string
		sub    bool   // posted from a subframe
		url    string // the main frame's document, when not the Miniapp's
		reason Code
	}{
		{name: "no key", msg: `{"v":1,"id":1,"method":"` + method + `"}`, reason: CodeSubframe},
		{name: "wrong key", msg: `{"v":1,"id":1,"key":"` + strings.Repeat("0", 64) + `","method":"` + method + `"}`, reason: CodeSubframe},
		{name: "key of another case", msg: `{"v":1,"id":1,"KEY":"` + key + `","method":"ready"}`, reason: CodeSubframe},
		{name: "key not a string", msg: `{"v":1,"id":1,"key":1,"method":"ready"}`, reason: CodeSubframe},
		{name: "subframe with the right key", msg: `{"v":1,"id":1,"key":"` + key + `","method":"ready"}`, sub: true, reason: CodeSubframe},
		{name: "not JSON", msg: `window.__miniappHostReceive`, reason: CodeInvalidMessage},
		{name: "array", msg: `[1]`, reason: CodeInvalidMessage},
		{name: "null", msg: `null`, reason: CodeInvalidMessage},
		{name: "duplicate key field", msg: `{"v":1,"id":1,"key":"` + key + `","key":"` + key + `","method":"ready"}`, reason: CodeInvalidMessage},
		{name: "too large", msg: `{"v":1,"id":1,"key":"` + key + `","method":"` + strings.Repeat("a", MaxMessageSize) + `"}`, reason: CodeTooLarge},
		{name: "right key, foreign top-level document", msg: `{"v":1,"id":1,"key":"` + key + `","method":"ready"}`, url: "https://evil.example/", reason: CodeWrongOrigin},
		{name: "right key, opaque top-level document", msg: `{"v":1,"id":1,"key":"` + key + `","method":"getContext"}`, url: "about:blank", reason: CodeWrongOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			if tt.url != "" {
				fx.d.Navigated(fx.view.navigate(tt.url))
			}
			f := fx.view.frame()
			f.IsMainFrame = !tt.sub
			fx.d.Receive(f, tt.msg)
			fx.view.none(t) // not even a Deliver that evaluates nothing
			fx.refusedEvent(t, 1, map[Code]int{tt.reason: 1})
			fx.noEvent(t)
			fx.host.mu.Lock()
			defer fx.host.mu.Unlock()
			if fx.host.ready+len(fx.host.asked)+len(fx.host.opened) != 0 || fx.host.closed {
				t.Error("the host was called for an untrusted message")
			}
		})
	}
	t.Run("a trusted sender still gets its refusal", func(t *testing.T) {
		fx := newFixture(t, 0)
		fx.send(9, "ready", map[string]any{"x": 1})
		refusedWith(t, fx.view.next(t), 9, CodeInvalidParams)
	})
	t.Run("a refusal is not delivered to a document of another origin", func(t *testing.T) {
		// The host did not count a navigation (same Seq) and the view now
		// shows another site: the trusted caller's refusal is withheld.
		fx := newFixture(t, 0)
		fx.view.replaceURL("https://evil.example/")
		d := fx.d
		d.refuse(fx.view.frame().Document, 3, MethodReady, Errorf(CodeInvalidParams, "x"))
		if s := fx.view.nextScript(t); s != "" {
			t.Fatalf("delivered %s to another origin", s)
		}
	})
}

// TestRefusalFlood: a frame that posts hundreds of keyless messages must
// not disconnect automation clients by overflowing their buffer, and its
// chosen strings must not reach the channel.
func TestRefusalFlood(t *testing.T) {
	fx := newFixture(t, 0)
	client := fx.d.events.(*Bus).Subscribe(256) // the automation default
	defer client.Close()
	// The fake view's UI thread has bounded queues: count deliveries on
	// the side so that a dispatcher that delivers does not block here.
	var delivered atomic.Int64
	stop := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case <-fx.view.delivered:
				delivered.Add(1)
			case <-stop:
				return
			}
		}
	}()
	const n = 300
	for i := range n {
		msg := `{"v":1,"id":` + itoa(i+1) + `,"method":"flood-method-name","params":{"x":"flood-param"}}`
		fx.d.Receive(fx.view.frame(), msg)
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	<-drained
	if d := delivered.Load(); d != 0 {
		t.Errorf("%d deliveries for keyless messages, want none", d)
	}
	if client.Dropped() {
		t.Fatal("the automation client was dropped by a refusal flood")
	}
	// One event at once for the first refusal; the rest are counted.
	fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
	if len(client.C()) > 1 {
		t.Fatalf("%d events for one burst, want 1 until the interval ends", len(client.C()))
	}
	for len(client.C()) > 0 {
		if env := string(<-client.C()); strings.Contains(env, "flood") {
			t.Fatalf("an untrusted string reached the channel: %s", env)
		}
	}
}

// TestEventMethodNames: bridge.call names only methods of the API; any
// other method string a page sends becomes "".
func TestEventMethodNames(t *testing.T) {
	fx := newFixture(t, 0)
	fx.send(4, "<script>x</script>", nil)
	refusedWith(t, fx.view.next(t), 4, CodeUnknownMethod)
	e := fx.nextEvent(t)
	if e.Kind != "bridge.call" || string(e.Data) != `{"method":"","decision":"refused","code":"unknown_method"}` {
		t.Fatalf("event %s", e.raw)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// fakeClock is a clock the test moves, and a timer the test fires, for the
// spacing of bridge.refused events.
type fakeClock struct {
	mu    sync.Mutex // guards below
	now   time.Time
	timer func() // the scheduled flush; nil when none
	delay time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) after(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer, c.delay = f, d
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := c.timer != nil
		c.timer = nil
		return stopped
	}
}

// fire runs the scheduled flush, as the timer would when it expires.
func (c *fakeClock) fire(t *testing.T, wantDelay time.Duration) {
	t.Helper()
	c.mu.Lock()
	f, d := c.timer, c.delay
	c.timer = nil
	c.mu.Unlock()
	if f == nil {
		t.Fatal("no flush scheduled")
	}
	if d != wantDelay {
		t.Fatalf("flush scheduled in %v, want %v", d, wantDelay)
	}
	f()
}

func TestRefusedInterval(t *testing.T) {
	setup := func(t *testing.T) (*fixture, *fakeClock) {
		fx := newFixture(t, 0)
		clock := &fakeClock{now: time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC)}
		fx.d.now, fx.d.after = clock.Now, clock.after
		return fx, clock
	}
	keyless := `{"v":1,"id":1,"method":"ready"}`
	t.Run("one event per interval, the rest counted", func(t *testing.T) {
		fx, clock := setup(t)
		fx.d.Receive(fx.view.frame(), keyless)
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
		clock.advance(300 * time.Millisecond)
		for range 5 {
			fx.d.Receive(fx.view.frame(), keyless)
		}
		sub := fx.view.frame()
		sub.IsMainFrame = false
		fx.d.Receive(sub, `{"v":1,"id":1,"key":"`+fx.d.key+`","method":"ready"}`)
		fx.d.Receive(fx.view.frame(), `[]`)
		fx.noEvent(t)
		clock.advance(700 * time.Millisecond)
		clock.fire(t, 700*time.Millisecond)
		fx.refusedEvent(t, 7, map[Code]int{CodeSubframe: 6, CodeInvalidMessage: 1})
		// Quiet for an interval: the next refusal is reported at once.
		clock.advance(RefusedInterval)
		fx.d.Receive(fx.view.frame(), keyless)
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
		fx.view.none(t)
	})
	t.Run("late in the interval, reported when it ends", func(t *testing.T) {
		fx, clock := setup(t)
		fx.d.Receive(fx.view.frame(), keyless)
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
		clock.advance(999 * time.Millisecond)
		fx.d.Receive(fx.view.frame(), keyless)
		fx.noEvent(t)
		clock.advance(time.Millisecond)
		clock.fire(t, time.Millisecond)
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
	})
	t.Run("Close reports what is counted and stops the timer", func(t *testing.T) {
		fx, clock := setup(t)
		fx.d.Receive(fx.view.frame(), keyless)
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
		fx.d.Receive(fx.view.frame(), keyless)
		fx.d.Receive(fx.view.frame(), keyless)
		fx.d.Close()
		fx.refusedEvent(t, 2, map[Code]int{CodeSubframe: 2})
		clock.mu.Lock()
		if clock.timer != nil {
			clock.mu.Unlock()
			t.Fatal("the flush is still scheduled after Close")
		}
		clock.mu.Unlock()
	})
	t.Run("a flush that was already running does nothing", func(t *testing.T) {
		// The timer fired, but Close stopped it before the flush ran; a
		// new interval has started since. The stale flush must neither
		// report early nor forget the new timer.
		fx, clock := setup(t)
		fx.d.Receive(fx.view.frame(), keyless)
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
		fx.d.Receive(fx.view.frame(), keyless)
		clock.mu.Lock()
		stale := clock.timer
		clock.mu.Unlock()
		fx.d.Close()
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
		fx.d.Receive(fx.view.frame(), keyless)
		stale()
		fx.noEvent(t)
		clock.advance(RefusedInterval)
		clock.fire(t, RefusedInterval)
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
	})
	t.Run("the real clock and timer", func(t *testing.T) {
		fx := newFixture(t, 0)
		for range 3 {
			fx.d.Receive(fx.view.frame(), keyless)
		}
		fx.refusedEvent(t, 1, map[Code]int{CodeSubframe: 1})
		start := time.Now()
		fx.refusedEvent(t, 2, map[Code]int{CodeSubframe: 2})
		if waited := time.Since(start); waited > RefusedInterval+time.Second {
			t.Fatalf("the rest was reported after %v", waited)
		}
	})
}
