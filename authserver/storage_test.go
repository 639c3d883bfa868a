package authserver_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to read a PostgreSQL database's rows

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// TestSecretsStoredHashed: after a flow, neither the database file nor its
// WAL holds a client secret, a code, an access token or a refresh token in
// clear; nor, on PostgreSQL, where browser sessions and pending requests
// are kept in the database, a session cookie, a CSRF token or a pending
// request's id.
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
	// A browser signs in and leaves a request waiting at the consent page.
	b := newBrowser(t, e.u.Issuer)
	_, c2 := pkce(t)
	p := b.get(e.u.Authorization + "?" + e.authParams(c2).Encode())
	f := parseForm(t, p)
	secrets["session cookie before sign-in"] = sessionCookie(t, b, e.u.Issuer)
	secrets["CSRF token before sign-in"] = f.values.Get("csrf")
	f.values.Set("subject", subAna)
	p = b.post(f.action, f.values)
	f = parseForm(t, p)
	secrets["session cookie"] = sessionCookie(t, b, e.u.Issuer)
	secrets["CSRF token"] = f.values.Get("csrf")
	secrets["pending request id"] = f.values.Get("request")
	for name, s := range secrets {
		if s == "" {
			t.Fatalf("no %s", name)
		}
	}
	if storetest.UsesPostgres() {
		noSecretsInRows(t, e.db, secrets)
		return
	}
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

// sessionCookie is the value of the browser's session cookie.
func sessionCookie(t *testing.T, b *browser, issuer string) string {
	t.Helper()
	u, _ := url.Parse(issuer)
	for _, ck := range b.hc.Jar.Cookies(u) {
		if ck.Name == "mh_session" {
			return ck.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// noSecretsInRows reads every row of every table of a PostgreSQL database
// as text, in which bytea columns are hex, and looks for each secret and
// its hex form.
func noSecretsInRows(t *testing.T, dsn string, secrets map[string]string) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Err(); err != nil || len(tables) == 0 {
		t.Fatalf("tables: %v %v", tables, err)
	}
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT t::text FROM "`+table+`" t`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var row string
			if err := rows.Scan(&row); err != nil {
				t.Fatal(err)
			}
			for name, s := range secrets {
				if bytes.Contains([]byte(row), []byte(s)) || bytes.Contains([]byte(row), []byte(hex.EncodeToString([]byte(s)))) {
					t.Errorf("%s found in clear in table %s", name, table)
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
}
