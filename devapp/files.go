package devapp

import (
	"net/http"
	"path"
	"strings"
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

// Files serves the folder dir as a static web server does: index.html for
// a folder, the content type by extension (sniffed for others), and
// Cache-Control: no-store, so that a reload and the resolver always read
// what is on disk now. Dot files and dot folders (.git, .env) are not
// served: a folder being developed holds more than the Miniapp.
func Files(dir string) http.Handler {
	fs := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "405 method not allowed: this folder is served read-only", http.StatusMethodNotAllowed)
			return
		}
		for seg := range strings.SplitSeq(r.URL.Path, "/") {
			if strings.HasPrefix(seg, ".") {
				http.Error(w, "404 page not found: dot files are not served", http.StatusNotFound)
				return
			}
		}
		if ct, ok := contentTypes[strings.ToLower(path.Ext(r.URL.Path))]; ok {
			w.Header().Set("Content-Type", ct)
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		fs.ServeHTTP(w, r)
	})
}
