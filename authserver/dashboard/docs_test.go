package dashboard

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCodesAreDocumented: every error code the dashboard answers with is
// in the error table of docs/dashboard.md, with the status statusOf gives.
func TestCodesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "dashboard.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // code -> its table row
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for _, c := range strings.Split(cells[1], ",") {
			rows[strings.Trim(strings.TrimSpace(c), "`")] = line
		}
	}
	for _, code := range []string{codeInvalidBody, codeMissingField, codeInvalidField, codeUnknownScope, codeUnknownType,
		codeInvalidDeclaration, codeManifestRejected, codeNotConfidential, codeMissingKey, codeInvalidKey, codeOperatorOnly,
		codeClientNotFound, codeCredentialNotFound, codeSubmissionNotFound, codeIssuerUnknown, codeAlreadyDecided,
		codeDeclarationClash, codeInternal, codeOriginNotAllowed, codeUnsupportedMediaType, codeHostNotAllowed,
		codeInvalidFilter, codeTooManyFollowers, codeEventsUnavailable} {
		t.Run(code, func(t *testing.T) {
			row, ok := rows[code]
			if !ok {
				t.Fatalf("%s is not in the error table of docs/dashboard.md", code)
			}
			if st := strings.TrimSpace(strings.Split(row, "|")[2]); st != strconv.Itoa(statusOf(code)) {
				t.Fatalf("%s: documented status %s, statusOf %d", code, st, statusOf(code))
			}
		})
	}
}
