package consent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChecksAreDocumented: every check name and failure code is in the
// "Checks" table of docs/native-consent.md, on the same row.
func TestChecksAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "native-consent.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ check, code string }{
		{CheckProjectApproval, CodeProjectNotApproved},
		{CheckConsent, "access_denied"},
		{CheckCompanyAccess, CodeCompanyAccessDenied},
		{CheckAccountOwner, CodeAccountNotOwned},
		{CheckBeneficiaries, CodeBeneficiaryNotAllowed},
		{CheckAccounts, CodeNoFittingAccount},
	} {
		t.Run(tc.check, func(t *testing.T) {
			for _, line := range strings.Split(string(doc), "\n") {
				if strings.HasPrefix(line, "| `"+tc.check+"` |") && strings.Contains(line, "`"+tc.code+"`") {
					return
				}
			}
			t.Fatalf("docs/native-consent.md has no row for check %s with code %s", tc.check, tc.code)
		})
	}
}
