package catalog

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/assets"
)

func TestIsAmount(t *testing.T) {
	for s, want := range map[string]bool{
		"1": true, "100": true, strings.Repeat("9", 15): true,
		"": false, "0": false, "01": false, strings.Repeat("9", 16): false, "-1": false, "1.5": false, " 1": false, "1e3": false,
	} {
		if got := IsAmount(s); got != want {
			t.Errorf("IsAmount(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestSchemaAmountIsAmountPattern: the schemas and the Go checks use one rule.
func TestSchemaAmountIsAmountPattern(t *testing.T) {
	raw, err := fs.ReadFile(assets.FS, "schemas/catalog/common.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Definitions struct {
			Amount struct {
				Pattern string `json:"pattern"`
			} `json:"amount"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Definitions.Amount.Pattern != AmountPattern {
		t.Errorf("common.json amount pattern %q, AmountPattern %q", doc.Definitions.Amount.Pattern, AmountPattern)
	}
}
