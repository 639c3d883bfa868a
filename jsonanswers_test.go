package miniapphost_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// handRead is a hand-written read of an HTTP answer's body: package
// jsonhttp is the one that reads a JSON answer, within a cap, its status
// checked (docs/architecture.md, "Packages").
var handRead = regexp.MustCompile(`json\.NewDecoder\(resp\.Body|io\.LimitReader\(resp\.Body|ReadAll\(resp\.Body`)

// notJSON are the reads that stay by hand, each a file and the text of its
// line: answers that are not JSON, or are only drained or quoted.
var notJSON = map[string]string{
	"jsonhttp/jsonhttp.go":        "io.LimitReader(resp.Body, max+1)", // the helper itself
	"playground/icons.go":         "maxIcon+1",                        // an icon: an image, capped
	"resolver/fetch.go":           "io.Copy(io.Discard",               // drained for the connection's reuse
	"soak/scenario.go":            "64*1024",                          // only the status counts; the body is quoted
	"cmd/loadgen/drift.go":        "ReadAll(resp.Body)",               // the sign-in and consent pages: HTML
	"host/callback.go":            "io.Copy(io.Discard",               // the confidential callback's body, drained
	"bench/internal/flow/flow.go": "resp.Body",                        // the bench module: standard library only
}

// TestJSONAnswersThroughJSONHTTP fails on a hand-written read of an HTTP
// answer outside package jsonhttp (but the reads above).
func TestJSONAnswersThroughJSONHTTP(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		path = filepath.ToSlash(path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if allowed, ok := notJSON[path]; ok && strings.Contains(line, allowed) {
				continue
			}
			if handRead.MatchString(line) {
				t.Errorf("%s:%d reads an answer by hand (%s): use jsonhttp.Call, Do or Read", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
