package devapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/miniapp-host/miniapp-host/assets"
)

// DefaultIssuer is the issuer of the playground's embedded server on its
// default address: where `miniapp-host dev` runs it.
const DefaultIssuer = "http://127.0.0.1:8600"

// NewConfig is what `miniapp-host new` writes into a Miniapp.
type NewConfig struct {
	// ID is the manifest's id and the OAuth client id; "" derives it
	// from the folder's name.
	ID string
	// Name is the manifest's name; "" derives it from the id.
	Name string
	// Issuer is the authorization service a browser tab signs in at
	// (config.json); "" means DefaultIssuer.
	Issuer string
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// New writes a small, complete Miniapp into dir (created when missing, and
// refused when it holds anything): its manifest, page, script, style,
// config.json and a README. It returns the files written.
func New(dir string, cfg NewConfig) ([]string, error) {
	if cfg.ID == "" {
		cfg.ID = idFromName(filepath.Base(filepath.Clean(dir)))
	}
	if !idPattern.MatchString(cfg.ID) {
		return nil, fmt.Errorf("devapp: id %q: use 1 to 64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit (it is also the OAuth client id)", cfg.ID)
	}
	if cfg.Name == "" {
		cfg.Name = nameFromID(cfg.ID)
	}
	if cfg.Issuer == "" {
		cfg.Issuer = DefaultIssuer
	}
	if _, err := parseIssuer(cfg.Issuer); err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("devapp: %s is not empty: give `new` a new or empty folder, so that nothing of yours is overwritten", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("devapp: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("devapp: %w", err)
	}
	files, err := newFiles(cfg)
	if err != nil {
		return nil, err
	}
	var written []string
	for _, name := range []string{"miniapp.webmanifest", "index.html", "app.js", "style.css", "config.json", "README.md"} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return written, fmt.Errorf("devapp: %w", err)
		}
		_, werr := f.Write(files[name])
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return written, fmt.Errorf("devapp: %w", werr)
		}
		written = append(written, filepath.Join(dir, name))
	}
	return written, nil
}

// newFiles renders the embedded template (assets/newapp) for cfg.
func newFiles(cfg NewConfig) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		b, err := fs.ReadFile(assets.FS, "newapp/"+name)
		if err != nil {
			return nil, fmt.Errorf("devapp: %w", err)
		}
		out[name] = b
	}
	manifest := map[string]any{
		"id": cfg.ID, "name": cfg.Name, "short_name": shortName(cfg.Name),
		"description": "Signs in with OpenID Connect and shows the bank account you choose to share.",
		"start_url":   "./", "scope": "./", "display": "standalone",
		"theme_color": "#1b5e20", "background_color": "#ffffff",
		"oauth": map[string]string{"client_id": cfg.ID},
	}
	var err error
	if out["miniapp.webmanifest"], err = indentJSON(manifest); err != nil {
		return nil, err
	}
	if out["config.json"], err = indentJSON(map[string]string{"issuer": cfg.Issuer}); err != nil {
		return nil, err
	}
	t, err := template.ParseFS(assets.FS, "newapp/README.md")
	if err != nil {
		return nil, fmt.Errorf("devapp: %w", err)
	}
	var readme bytes.Buffer
	if err := t.Execute(&readme, map[string]string{"Name": cfg.Name, "ClientID": cfg.ID, "Issuer": cfg.Issuer}); err != nil {
		return nil, fmt.Errorf("devapp: %w", err)
	}
	out["README.md"] = readme.Bytes()
	return out, nil
}

func indentJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("devapp: %w", err)
	}
	return append(b, '\n'), nil
}

// idFromName makes a folder's name into an id: lower case, runs of other
// characters as one '-'.
func idFromName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.TrimSuffix(b.String(), "-")
	if len(id) > 64 {
		id = strings.TrimSuffix(id[:64], "-")
	}
	if id == "" {
		id = "my-miniapp"
	}
	return id
}

// nameFromID makes "my-bank-app" into "My bank app".
func nameFromID(id string) string {
	s := strings.NewReplacer("-", " ", "_", " ", ".", " ").Replace(id)
	return strings.ToUpper(s[:1]) + s[1:]
}

func shortName(name string) string {
	if r := []rune(name); len(r) > 12 {
		return strings.TrimSpace(string(r[:12]))
	}
	return name
}
