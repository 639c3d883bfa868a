package devapp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"sync/atomic"

	"github.com/miniapp-host/miniapp-host/origin"
)

// contentTypes are the types a browser needs by name for a Miniapp's own
// files. Go's mime table depends on the machine's /etc/mime.types and
// lacks the manifest's; these are set on every machine alike.
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".htm":         "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json",
	".webmanifest": "application/manifest+json",
	".map":         "application/json",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".jpg":         "image/jpeg",
	".jpeg":        "image/jpeg",
	".gif":         "image/gif",
	".webp":        "image/webp",
	".ico":         "image/x-icon",
	".wasm":        "application/wasm",
	".txt":         "text/plain; charset=utf-8",
	".woff2":       "font/woff2",
}

// ConfigPath is the generated Miniapp's configuration (config.json, at the
// folder's top), whose "issuer" member `dev` serves as the issuer of the
// playground it runs (App.UseIssuer; docs/your-miniapp.md, "config.json
// under dev").
const ConfigPath = "/config.json"

// maxConfig bounds the config.json that is rewritten when served.
const maxConfig = 1 << 20

// Files serves the folder root as a static web server does, and no more
// (docs/your-miniapp.md, "What dev serves"; docs/security.md):
//
//   - only to a request from this machine whose Host is a loopback name
//     (the one loopback gate, origin.Gate): a page on a DNS name rebound
//     to 127.0.0.1 sends its own name, and gets 403;
//   - only regular files inside the folder, opened through an os.Root, so
//     that nothing resolves outside it, and never through a symbolic link
//     (in any segment of the path): a link to /etc/passwd, to a folder
//     outside, or to a dot file under another name is not followed;
//   - index.html for a folder, and never a listing of it;
//   - no dot file nor dot folder (.git, .env): a folder being developed
//     holds more than the Miniapp;
//   - read only: GET and HEAD.
//
// Every answer has Cache-Control: no-store, so that a reload and the
// resolver always read what is on disk now. `dev DIR` serves it on the
// Miniapp's origin.
func Files(root *os.Root) http.Handler { return &files{root: root} }

// files is the handler of Files.
type files struct {
	root   *os.Root
	issuer atomic.Pointer[string] // config.json's issuer as served; nil: the file's
}

func (f *files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if ref := (&origin.Gate{}).Check(r); ref != nil {
		http.Error(w, "403 forbidden: "+ref.Error()+"; this folder is served to this machine's own pages only", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed: this folder is served read-only", http.StatusMethodNotAllowed)
		return
	}
	name, fi, ok := f.find(w, r)
	if !ok {
		return
	}
	file, err := f.root.Open(name)
	if err != nil {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	defer file.Close()
	// What was opened is what was checked: a file replaced by a link in
	// between is refused.
	if ofi, err := file.Stat(); err != nil || !os.SameFile(fi, ofi) {
		http.Error(w, "404 page not found: the file changed while it was opened; reload", http.StatusNotFound)
		return
	}
	if ct, ok := contentTypes[strings.ToLower(path.Ext(name))]; ok {
		w.Header().Set("Content-Type", ct)
	}
	if "/"+name == ConfigPath {
		if iss := f.issuer.Load(); iss != nil {
			if body, ok := withIssuer(file, *iss); ok {
				w.Header().Set("Content-Type", "application/json")
				http.ServeContent(w, r, name, fi.ModTime(), strings.NewReader(string(body)))
				return
			}
			if _, err := file.Seek(0, io.SeekStart); err != nil {
				http.Error(w, "500 internal server error: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
	}
	http.ServeContent(w, r, name, fi.ModTime(), file)
}

// find returns the regular file a request names under the root (a
// folder's index.html), or answers: 404 for a dot file, a link, a folder
// without index.html or anything but a regular file, and a redirect to a
// folder's own URL, which ends in "/".
func (f *files) find(w http.ResponseWriter, r *http.Request) (string, fs.FileInfo, bool) {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	clean := path.Clean(p)
	for seg := range strings.SplitSeq(clean, "/") {
		if strings.HasPrefix(seg, ".") {
			http.Error(w, "404 page not found: dot files are not served", http.StatusNotFound)
			return "", nil, false
		}
	}
	name := strings.TrimPrefix(clean, "/")
	if name == "" {
		name = "."
	}
	fi, msg := f.lstat(name)
	if msg != "" {
		http.Error(w, "404 page not found: "+msg, http.StatusNotFound)
		return "", nil, false
	}
	if fi.IsDir() {
		if !strings.HasSuffix(p, "/") {
			// As a static server does: the folder's own URL ends in "/",
			// so that its page's relative links resolve inside it.
			target := path.Base(clean) + "/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return "", nil, false
		}
		name = path.Join(name, "index.html")
		if fi, msg = f.lstat(name); msg != "" {
			http.Error(w, "404 page not found: no index.html in this folder, and folders are not listed", http.StatusNotFound)
			return "", nil, false
		}
	}
	if !fi.Mode().IsRegular() {
		http.Error(w, "404 page not found: only regular files are served", http.StatusNotFound)
		return "", nil, false
	}
	return name, fi, true
}

// lstat checks every segment of name, relative to the root: each must
// exist and none may be a symbolic link. It returns the last one's
// information, or why it is not served.
func (f *files) lstat(name string) (fs.FileInfo, string) {
	if name == "." {
		fi, err := f.root.Stat(".")
		if err != nil {
			return nil, "the folder is gone"
		}
		return fi, ""
	}
	var fi fs.FileInfo
	segs := strings.Split(name, "/")
	for i := range segs {
		var err error
		if fi, err = f.root.Lstat(path.Join(segs[:i+1]...)); err != nil {
			return nil, "no such file"
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, "symbolic links are not followed: only the folder's own regular files are served"
		}
	}
	return fi, ""
}

// withIssuer is config.json with its "issuer" member replaced by issuer,
// when it is a JSON object that has one; false leaves the file as it is.
func withIssuer(file io.Reader, issuer string) ([]byte, bool) {
	b, err := io.ReadAll(io.LimitReader(file, maxConfig+1))
	if err != nil || len(b) > maxConfig {
		return nil, false
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil || doc == nil {
		return nil, false
	}
	if _, ok := doc["issuer"]; !ok {
		return nil, false
	}
	iss, err := json.Marshal(issuer)
	if err != nil {
		return nil, false
	}
	doc["issuer"] = iss
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, false
	}
	return append(out, '\n'), true
}

// ConfigIssuer reads the "issuer" member of the folder's config.json as
// the file holds it ("" when there is none), for `dev` to say what it
// serves in its place.
func (a *App) ConfigIssuer() (string, error) {
	if a.files == nil {
		return "", nil
	}
	b, err := a.files.root.ReadFile(strings.TrimPrefix(ConfigPath, "/"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("devapp: %w", err)
	}
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return "", nil
	}
	return doc.Issuer, nil
}

// UseIssuer makes the folder's config.json be served with its "issuer"
// member set to issuer (the file on disk is left as it is): `dev` runs the
// Miniapp against its own playground, on whatever port that listens
// (docs/your-miniapp.md, "config.json under dev"). A config.json that is
// not a JSON object with an "issuer" member is served as it is. Nothing
// for a development server's URL.
func (a *App) UseIssuer(issuer string) {
	if a.files != nil {
		a.files.issuer.Store(&issuer)
	}
}
