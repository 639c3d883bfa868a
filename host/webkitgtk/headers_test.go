package webkitgtk

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestParseHeaderLines: the headers of a request the view made reach the
// network log as the server sent them, whatever the line endings, and a
// line that is no header is left out rather than turned into one.
func TestParseHeaderLines(t *testing.T) {
	got := parseHeaderLines("Content-Type: text/html; charset=utf-8\r\nset-cookie: a=b; HttpOnly\nSet-Cookie:c=d\n" +
		"Location:  http://127.0.0.1:9/cb?code=x \nno colon\n: empty name\nBad Name: x\n\tX-Tab: y\n")
	want := http.Header{
		"Content-Type": {"text/html; charset=utf-8"},
		"Set-Cookie":   {"a=b; HttpOnly", "c=d"},
		"Location":     {"http://127.0.0.1:9/cb?code=x"},
		"X-Tab":        {"y"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("headers\n got %q\nwant %q", got, want)
	}
	if h := parseHeaderLines(""); len(h) != 0 {
		t.Fatalf("headers of no text: %q", h)
	}
}

// FuzzParseHeaderLines: whatever header text the C side hands over, the
// parse never panics and every header it yields has a name without
// white space, from a line of the text.
func FuzzParseHeaderLines(f *testing.F) {
	f.Add("Content-Type: text/html\nSet-Cookie: a=b; HttpOnly\n")
	f.Add(": x\nno colon\n\tX: y\r\nA:b:c")
	f.Fuzz(func(t *testing.T, text string) {
		for name, values := range parseHeaderLines(text) {
			if name == "" || strings.ContainsAny(name, " \t\n") {
				t.Errorf("header name %q", name)
			}
			for _, v := range values {
				if strings.Contains(v, "\n") {
					t.Errorf("value %q spans lines", v)
				}
			}
		}
	})
}
