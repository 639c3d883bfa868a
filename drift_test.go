package miniapphost_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// TestPermissionCount: every "N permissions" that README.md and the docs
// state of the catalog is the number the catalog has (scopes and
// authorization_details types).
func TestPermissionCount(t *testing.T) {
	cat, err := catalog.New(catalog.Endpoints{BaseURL: "http://127.0.0.1:8600", SigningBaseURL: "http://127.0.0.1:8602",
		InvoicingBaseURL: "http://127.0.0.1:8603"})
	if err != nil {
		t.Fatal(err)
	}
	want := len(cat.Scopes()) + len(cat.Types())
	count := regexp.MustCompile(`\b(\d+) permissions\b`)
	found := 0
	for _, f := range []string{"README.md", "docs/architecture.md", "docs/catalog.md", "docs/service.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range count.FindAllSubmatch(b, -1) {
			found++
			if n, _ := strconv.Atoi(string(m[1])); n != want {
				t.Errorf("%s says %q; the catalog has %d permissions (%d scopes, %d authorization_details types)",
					f, m[0], want, len(cat.Scopes()), len(cat.Types()))
			}
		}
	}
	if found == 0 {
		t.Error("no document states the number of permissions")
	}
}
