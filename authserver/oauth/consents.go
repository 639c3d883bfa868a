package oauth

import (
	"errors"
	"net/http"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Remembered consent (docs/service.md §1, the subject's consent) is listed and revoked
// by the host that speaks for the subject, with the same credential as the
// native-consent API: GET /native/consents?subject=S and
// DELETE /native/consents/{client_id}?subject=S.

// handleConsents lists a subject's remembered consents.
func (s *nativeHandler) handleConsents(w http.ResponseWriter, r *http.Request) {
	if _, err := s.auth.authenticateHost(r); err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	sub := r.URL.Query().Get("subject")
	if sub == "" {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, "subject: the query parameter is missing"))
		return
	}
	cs, err := s.st.Consents(r.Context(), sub)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Consents []*store.Consent `json:"consents"`
	}{cs})
}

// handleRevokeConsent forgets a subject's consent for a client and revokes
// the grants made on it; the next request asks again.
func (s *nativeHandler) handleRevokeConsent(w http.ResponseWriter, r *http.Request) {
	host, err := s.auth.authenticateHost(r)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	sub := r.URL.Query().Get("subject")
	if sub == "" {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, "subject: the query parameter is missing"))
		return
	}
	err = s.st.RevokeConsent(r.Context(), sub, r.PathValue("client_id"), s.cfg.Now())
	if err == nil {
		s.grantRevoked(r.Context(), r.PathValue("client_id"), sub, "", audit.Host(host.ID), "consent_revoked")
	}
	if errors.Is(err, store.ErrNotFound) {
		s.writeJSONError(w, r, oauthErr(codeUnknownConsent, "the subject has no remembered consent for this client"))
		return
	} else if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
