package authserver_test

import (
	"net/http"
	"sync"
	"testing"
)

// TestFixtureApplyConcurrent: QA suites run side by side apply and reset
// their fixtures at the same time (docs/dashboard.md, "Fixtures"); every
// apply and reset is answered 200, none 5xx, and a last apply leaves the
// fixture's grants as the file says.
func TestFixtureApplyConcurrent(t *testing.T) {
	e := start(t)
	const n = 8
	var wg sync.WaitGroup
	type answer struct {
		st int
		m  map[string]any
	}
	answers := make(chan answer, n*6)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				st, m := e.applyFixture(fixtureOf())
				answers <- answer{st, m}
				body := `{"subject": "` + subAna + `"}`
				if (i+j)%2 == 1 {
					body = `{"client_id": "` + publicID + `"}`
				}
				st, m = e.dashRaw("POST", "/api/dev/fixtures/reset", body)
				answers <- answer{st, m}
			}
		}()
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.st != http.StatusOK {
			t.Errorf("a concurrent apply: %d %v", a.st, a.m)
		}
	}
	toks := e.mustApply(fixtureOf())
	if st, m := e.grant(toks[fxGrantActive], confID, e.confSecret); st != http.StatusOK || m["subject"] != subAna {
		t.Fatalf("grant endpoint after the concurrent applies: %d %v", st, m)
	}
}
