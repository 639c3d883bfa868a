package oauth

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSessionTable: sessions leave at their deadline from the front of the
// queue and give their source's quota back; sessions removed early (a
// sign-in rotates its session) do not pile up in the queue.
func TestSessionTable(t *testing.T) {
	tb := newSessionTable()
	t0 := time.Unix(1_000_000, 0).UnixNano()
	src := sourceKeyOf("192.0.2.7")
	key := func(i int) sessionKey { return sessionKey{byte(i), byte(i >> 8), byte(i >> 16), 1} }
	const n = 100_000
	for i := range n {
		tb.add(key(i), sessionRec{source: src, expires: t0 + int64(i)*int64(time.Millisecond)})
		if i%2 == 1 {
			tb.remove(key(i))
		}
	}
	if len(tb.byKey) != n/2 || tb.used[src] != n/2 {
		t.Fatalf("%d sessions, %d charged to the source; want %d and %d", len(tb.byKey), tb.used[src], n/2, n/2)
	}
	if q := len(tb.queue) - tb.head; q > 2*len(tb.byKey)+1024 {
		t.Fatalf("the queue holds %d entries for %d sessions: removed ones pile up", q, len(tb.byKey))
	}
	if _, ok := tb.get(key(2), t0); !ok {
		t.Fatal("a live session is not found")
	}
	if _, ok := tb.get(key(3), t0); ok {
		t.Fatal("a removed session is found")
	}
	if _, ok := tb.get(key(2), t0+int64(3*time.Millisecond)); ok {
		t.Fatal("a session past its deadline is found")
	}
	tb.expire(t0 + int64(n/2)*int64(time.Millisecond) - 1) // sessions 0 .. n/2-1 are past their deadline
	if len(tb.byKey) != n/4 || tb.used[src] != n/4 {
		t.Fatalf("after expiry: %d sessions, %d charged; want %d and %d", len(tb.byKey), tb.used[src], n/4, n/4)
	}
	if _, ok := tb.get(key(n/2), t0); !ok {
		t.Fatal("the first session still in its lifetime was expired")
	}
	tb.expire(t0 + int64(time.Hour))
	if len(tb.byKey) != 0 || len(tb.used) != 0 || len(tb.queue) != 0 {
		t.Fatalf("everything expired: %d sessions, quota map %v, queue %d", len(tb.byKey), tb.used, len(tb.queue))
	}
}

// TestSessionsHoldNoPointers: the session tables' keys, records and queue
// entries hold no pointer, so the garbage collector never scans them and
// the cost of a collection does not grow with the live sessions (which last
// 12 hours).
func TestSessionsHoldNoPointers(t *testing.T) {
	for _, v := range []any{sessionKey{}, sessionRec{}, queued{}, sourceKey{}} {
		if typ := reflect.TypeOf(v); hasPointers(typ) {
			t.Errorf("%v holds pointers", typ)
		}
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	}
	return true
}

// TestSignedInSessionsEvictTheSourcesOldest: a source at its cap of
// signed-in sessions (a test runner signing in with a fresh browser profile
// each time) loses its own oldest session to its newest, instead of being
// locked out for the sessions' 12 hours; another source's sessions are
// untouched, and the total cap still refuses.
func TestSignedInSessionsEvictTheSourcesOldest(t *testing.T) {
	ss := newSessionSet(3, 5)
	now := time.Unix(1_000_000, 0)
	a, b := sourceKeyOf("192.0.2.1"), sourceKeyOf("192.0.2.2")
	key := func(i int) sessionKey { return sessionKey{byte(i), 7} }
	admit := func(i int, src sourceKey) error {
		return ss.admitLocked(ss.signed, key(i), sessionRec{source: src, expires: now.Add(12 * time.Hour).UnixNano()}, now)
	}
	if err := admit(100, b); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := admit(i, a); err != nil {
			t.Fatalf("sign-in %d from a source at its cap: %v, want its oldest session evicted", i, err)
		}
	}
	ns := now.UnixNano()
	for i := range 10 {
		_, live := ss.signed.get(key(i), ns)
		if want := i >= 7; live != want {
			t.Errorf("session %d of source a live %v, want %v (the newest 3 kept)", i, live, want)
		}
	}
	if _, ok := ss.signed.get(key(100), ns); !ok || ss.signed.used[a] != 3 || ss.signed.used[b] != 1 {
		t.Fatalf("source b's session lost, or counts a=%d b=%d", ss.signed.used[a], ss.signed.used[b])
	}
	// The total cap (5) refuses a new source once full.
	if err := admit(200, sourceKeyOf("192.0.2.3")); err != nil {
		t.Fatal(err)
	}
	if err := admit(201, sourceKeyOf("192.0.2.4")); err == nil || !strings.Contains(err.Error(), "in all") {
		t.Fatalf("over the total cap: %v, want a refusal", err)
	}
	if q := ss.signed.bySource[a]; q == nil || len(q.keys)-q.head > 2*3+64 {
		t.Errorf("source a's order queue holds gone keys without bound: %+v", q)
	}
}
