package oauth

import (
	"reflect"
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
