package origin

import "testing"

// BenchmarkParseURL measures the parse of a typical start_url with an IDN
// host, a default port and dot segments.
func BenchmarkParseURL(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseURL("HTTPS://Bücher.example:443/app/./%2e%2e/start?x=1#top"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOfInList is the bridge's per-call gate: the origin of the
// current URL, then allowed_origins membership.
func BenchmarkOfInList(b *testing.B) {
	u, err := ParseURL("https://app.example/page")
	if err != nil {
		b.Fatal(err)
	}
	list := []string{"https://other.example", "https://app.example"}
	b.ReportAllocs()
	for b.Loop() {
		if !InList(Of(u), list) {
			b.Fatal("not in list")
		}
	}
}

// BenchmarkOfString is the bridge's origin of the URL the webview reports.
func BenchmarkOfString(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OfString("https://app.example/page?x=1#top"); err != nil {
			b.Fatal(err)
		}
	}
}
