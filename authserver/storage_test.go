package authserver_test

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// TestSecretsStoredHashed: after a flow, neither the database file nor its
// WAL holds a client secret, a code, an access token or a refresh token in
// clear.
func TestSecretsStoredHashed(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	q := e.confAuthParams(c)
	code := e.nativeCode(q, subAna, map[string]string{"action": "approve"}).Get("code")
	st, m := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {v}}, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, m)
	}
	secrets := map[string]string{"client secret": e.confSecret, "host secret": hostSecret, "code": code,
		"access token": m["access_token"].(string), "refresh token": m["refresh_token"].(string)}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(e.db + "*")
	if len(files) == 0 {
		t.Fatal("no database file")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range secrets {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("%s found in clear in %s", name, filepath.Base(f))
			}
		}
	}
}
