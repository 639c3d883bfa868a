// Package dashboard is the reference server's dashboard origin
// ({dashboard_url}): the public OAuth client configuration that hosts read
// when they resolve a Miniapp manifest (spec 4.2 and 2.10).
package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Server serves the dashboard API.
type Server struct {
	st *store.Store
}

// New returns a dashboard server reading clients from st.
func New(st *store.Store) *Server { return &Server{st: st} }

// Handler returns the dashboard's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	return mux
}

func (s *Server) routes(mux *http.ServeMux) {
	// GET /api/oauth/clients/{client_id}: public client configuration (spec 4.2).
	mux.HandleFunc("GET /api/oauth/clients/{client_id}", s.handleClient)
}

// clientConfig is the public configuration of a client (spec 2.10). It has
// exactly these members; a secret, even its hash, never leaves the store.
type clientConfig struct {
	RedirectURIs   []string `json:"redirect_uris"`
	AllowedOrigins []string `json:"allowed_origins"`
	ClientType     string   `json:"client_type"`
}

// handleClient returns a client's public configuration, or 404.
func (s *Server) handleClient(w http.ResponseWriter, r *http.Request) {
	c, err := s.st.Client(r.Context(), r.PathValue("client_id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]any{"code": "client_not_found", "status": http.StatusNotFound})
		return
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, map[string]any{"code": "internal_error", "status": http.StatusInternalServerError})
		return
	}
	cfg := clientConfig{RedirectURIs: c.RedirectURIs, AllowedOrigins: c.AllowedOrigins, ClientType: string(c.Type)}
	if cfg.RedirectURIs == nil {
		cfg.RedirectURIs = []string{}
	}
	if cfg.AllowedOrigins == nil {
		cfg.AllowedOrigins = []string{}
	}
	// Public data, read by browser-based hosts too.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, cfg)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}
