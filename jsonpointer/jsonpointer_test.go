package jsonpointer

import (
	"encoding/json"
	"testing"
)

func TestEscapeRoundTrip(t *testing.T) {
	for _, tok := range []string{"", "a", "a/b", "m~n", "~1", "/~0/", "é"} {
		if got := Unescape(Escape(tok)); got != tok {
			t.Errorf("Unescape(Escape(%q)) = %q", tok, got)
		}
	}
	if got := FromTokens([]string{"a/b", "m~n", "0"}); got != "/a~1b/m~0n/0" {
		t.Errorf("FromTokens = %q", got)
	}
}

// TestLookupRFC6901Examples uses the examples of RFC 6901 §5.
func TestLookupRFC6901Examples(t *testing.T) {
	var doc any
	_ = json.Unmarshal([]byte(`{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}`), &doc)
	for ptr, want := range map[string]any{
		"/foo/0": "bar", "/": 0.0, "/a~1b": 1.0, "/c%d": 2.0, "/e^f": 3.0, "/g|h": 4.0, `/i\j`: 5.0, `/k"l`: 6.0, "/ ": 7.0, "/m~0n": 8.0,
	} {
		if got, ok := Lookup(doc, ptr); !ok || got != want {
			t.Errorf("Lookup(%q) = %v %v, want %v", ptr, got, ok, want)
		}
	}
	for _, ptr := range []string{"/foo/2", "/foo/-1", "/foo/x", "/nope", "foo", "/foo/0/x"} {
		if _, ok := Lookup(doc, ptr); ok {
			t.Errorf("Lookup(%q) found something", ptr)
		}
	}
}

func TestReadable(t *testing.T) {
	for ptr, want := range map[string]string{
		"": "", "/transaction/minimum": "transaction.minimum", "/identifiers/3": "identifiers[3]",
		"/icons/0/src": "icons[0].src", "/a~1b": "a/b", "/x\n": `x\n`,
	} {
		if got := Readable(ptr); got != want {
			t.Errorf("Readable(%q) = %q, want %q", ptr, got, want)
		}
	}
}
