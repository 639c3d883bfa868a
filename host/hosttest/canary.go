package hosttest

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/miniapp-host/miniapp-host/redact"
)

// Leak says how doc holds secret, or "" when it does not: raw,
// percent-encoded, base64 (standard or URL alphabet, padded or not),
// JSON-escaped; and, for a secret the server did not issue (withheld:
// state, verifier, client secret, password), as its fingerprint, which a
// guess could be checked against (docs/host.md, "Network log").
func Leak(doc, secret string, withheld bool) string {
	js, _ := json.Marshal(secret)
	for name, enc := range map[string]string{
		"raw": secret, "percent-encoded": url.QueryEscape(secret), "path-escaped": url.PathEscape(secret),
		"base64": base64.StdEncoding.EncodeToString([]byte(secret)), "base64 unpadded": base64.RawStdEncoding.EncodeToString([]byte(secret)),
		"base64url": base64.URLEncoding.EncodeToString([]byte(secret)), "base64url unpadded": base64.RawURLEncoding.EncodeToString([]byte(secret)),
		"JSON-escaped": strings.Trim(string(js), `"`),
	} {
		if strings.Contains(doc, enc) {
			return name
		}
	}
	if withheld && strings.Contains(doc, redact.Fingerprint(secret)) {
		return "the fingerprint of a secret the server did not issue"
	}
	return ""
}
