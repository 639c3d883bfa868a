package oauth

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/assets"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/consent"
)

// The browser flow: for a Miniapp in a plain browser tab, the authorization
// endpoint sends the user agent to a sign-in page (pick a seeded subject)
// and a consent page. Both are server-rendered with html/template, which
// escapes everything that came from the request (RAR consent screens have
// rendered attacker-chosen text before), and both post forms protected by a
// per-session CSRF token.

// browserHandler answers a Miniapp in a plain browser tab: the
// authorization endpoint (handleAuthorize), the sign-in page and the
// consent page with their forms, and the pages' stylesheet. The request is
// checked by authzRequests and decided through consentFlow.
type browserHandler struct {
	*base
	st       subjects
	sess     *browserSessions
	requests *authzRequests
	flow     *consentFlow
	pending  pendingStore
}

// subjects are the seed world's subjects, whom the sign-in page offers.
type subjects interface {
	Subject(ctx context.Context, id string) (store.Subject, error)
	Subjects(ctx context.Context) ([]store.Subject, error)
}

// pages are the parsed templates, parsed once.
type pages struct {
	login, consent, errorPage *template.Template
	connected                 *template.Template // connected.go
	css                       []byte
}

func loadPages() (*pages, error) {
	sub, err := fs.Sub(assets.FS, "authserver")
	if err != nil {
		return nil, fmt.Errorf("oauth: pages: %w", err)
	}
	parse := func(name string) (*template.Template, error) {
		t, err := template.ParseFS(sub, "layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("oauth: template %s: %w", name, err)
		}
		return t.Lookup(name), nil
	}
	p := &pages{}
	if p.login, err = parse("login.html"); err != nil {
		return nil, err
	}
	if p.consent, err = parse("consent.html"); err != nil {
		return nil, err
	}
	if p.connected, err = parse("connected.html"); err != nil {
		return nil, err
	}
	if p.errorPage, err = parse("error.html"); err != nil {
		return nil, err
	}
	if p.css, err = fs.ReadFile(sub, "style.css"); err != nil {
		return nil, fmt.Errorf("oauth: pages: %w", err)
	}
	return p, nil
}

// render executes a template into a buffer first, so that a template error
// never leaves half a page.
func (s *base) render(w http.ResponseWriter, r *http.Request, status int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		s.log.ErrorContext(r.Context(), "oauth: render", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// No script at all; forms post to this origin only; never framed
	// (clickjacking a consent button).
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// errorPage answers an authorization request whose redirect_uri could not be
// verified (RFC 6749 §4.1.2.1): the error is shown, never redirected.
func (s *base) errorPage(w http.ResponseWriter, r *http.Request, oe *Error) {
	s.refused(r, oe)
	// A page is not an authentication challenge: an unknown client is a bad
	// request here, whatever the code's status at the token endpoint.
	status := statusOf(oe.Code)
	if status < 500 && status != http.StatusRequestEntityTooLarge {
		status = http.StatusBadRequest
	}
	if oe.status != 0 {
		status = oe.status // an injected fault's (faults.go)
	}
	s.render(w, r, status, s.pages.errorPage, oe)
}

// handleStatic serves the pages' stylesheet.
func (s *browserHandler) handleStatic(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("file") != "style.css" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(s.pages.css)
}

// browserPending finds the pending request of a page, which must belong to
// the browser's session: a request id alone lets no one else act on it.
func (s *browserHandler) browserPending(r *http.Request, id string) (*session, *pending, *Error) {
	se, err := s.sess.sessionFrom(r)
	var p *pending
	if err == nil && se != nil {
		p, err = s.pending.get(r.Context(), id, s.cfg.Now())
	}
	if err != nil {
		return nil, nil, s.asError(r, err)
	}
	if se == nil || p == nil || p.sessionID() != se.bind {
		return nil, nil, oauthErr(codeInvalidRequest, "this sign-in has expired or belongs to another browser; start again from the application")
	}
	return se, p, nil
}

// checkCSRF compares the form's token with the session's in constant time.
func checkCSRF(se *session, r *http.Request) *Error {
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(se.csrf)) != 1 {
		return oauthErr(codeInvalidRequest, "the form is stale or was not sent by this page; start again")
	}
	return nil
}

type loginData struct {
	RequestID, CSRF, ClientName string
	Subjects                    []store.Subject
}

// handleLoginPage shows the seeded subjects.
func (s *browserHandler) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	se, p, oe := s.browserPending(r, r.URL.Query().Get("request"))
	if oe != nil {
		s.errorPage(w, r, oe)
		return
	}
	subs, err := s.st.Subjects(r.Context())
	if err != nil {
		s.errorPage(w, r, s.asError(r, err))
		return
	}
	s.render(w, r, http.StatusOK, s.pages.login, loginData{RequestID: p.id, CSRF: se.csrf, ClientName: p.v.client.Name, Subjects: subs})
}

// postedPending reads a form post of the sign-in or consent page: the form
// itself, the browser session with its pending request, and the CSRF token
// that must match the session's (one check for every post). On failure it
// has written the error page and reports false.
func (s *browserHandler) postedPending(w http.ResponseWriter, r *http.Request) (*session, *pending, bool) {
	if err := parsePostForm(w, r); err != nil {
		s.errorPage(w, r, s.asError(r, err))
		return nil, nil, false
	}
	se, p, oe := s.browserPending(r, r.PostForm.Get("request"))
	if oe == nil {
		oe = checkCSRF(se, r)
	}
	if oe != nil {
		s.errorPage(w, r, oe)
		return nil, nil, false
	}
	return se, p, true
}

// handleLoginSubmit signs the browser in as the chosen subject.
func (s *browserHandler) handleLoginSubmit(w http.ResponseWriter, r *http.Request) {
	se, p, ok := s.postedPending(w, r)
	if !ok {
		return
	}
	sub, err := s.st.Subject(r.Context(), r.PostForm.Get("subject"))
	if err != nil {
		s.errorPage(w, r, oauthErr(codeInvalidRequest, "pick one of the listed subjects"))
		return
	}
	// A new session id at sign-in, so that a session id known before it
	// (session fixation) is worth nothing after it.
	if _, err := s.sess.signIn(w, r, se, sub.ID); err != nil {
		s.errorPage(w, r, s.asError(r, err))
		return
	}
	s.signedIn(r.Context(), p, sub.ID)
	http.Redirect(w, r, s.path(pathConsent)+"?request="+url.QueryEscape(p.id), http.StatusSeeOther)
}

type consentData struct {
	RequestID, CSRF, Error string
	Model                  *consent.Model
	// Unchecked are the entries (consent.Permission.Entry) shown
	// unchecked: those a refused decision declined.
	Unchecked map[string]bool
	// Maximums are the lowered maximums a refused decision asked for, by
	// entry, shown again in their fields.
	Maximums map[string]string
}

// maximumField is the consent page's field in which the subject may lower
// the transaction.maximum of the detail at index (docs/service.md §2.4).
func maximumField(index int) string { return fmt.Sprintf("maximum_%d", index) }

// loweredMaximums reads the consent page's maximum fields: a granted
// detail whose field holds an amount other than the requested maximum
// is lowered to it (consent.Model.Validate checks the amount). typed are
// the fields' values by entry, to show again when the decision is refused.
func loweredMaximums(m *consent.Model, form url.Values, declined []int) (lowered []consent.LoweredMaximum, typed map[string]string) {
	typed = map[string]string{}
	for _, p := range m.Permissions {
		if p.Kind != consent.KindDetail || p.Index == nil || p.Limits == nil || p.Limits.Maximum == "" {
			continue
		}
		v := strings.TrimSpace(form.Get(maximumField(*p.Index)))
		if v == "" || v == p.Limits.Maximum || slices.Contains(declined, *p.Index) {
			continue
		}
		typed[p.Entry()] = v
		lowered = append(lowered, consent.LoweredMaximum{Index: *p.Index, Maximum: v})
	}
	return lowered, typed
}

// handleConsentPage shows the consent model of a pending request.
func (s *browserHandler) handleConsentPage(w http.ResponseWriter, r *http.Request) {
	se, p, oe := s.browserPending(r, r.URL.Query().Get("request"))
	if oe != nil {
		s.errorPage(w, r, oe)
		return
	}
	subj := se.subject()
	if subj == "" {
		http.Redirect(w, r, s.path(pathLogin)+"?request="+url.QueryEscape(p.id), http.StatusSeeOther)
		return
	}
	m, prior, err := s.flow.buildModel(r.Context(), p, subj)
	if err != nil {
		s.errorPage(w, r, s.asError(r, err))
		return
	}
	// Nothing new is requested and every check passes: the subject is not
	// asked again (docs/service.md §1, the subject's consent).
	d := consent.Decision{Action: consent.Approve, AccountID: m.RememberedAccount}
	if m.Remembered && m.Validate(d) == nil {
		to, err := s.flow.decide(r.Context(), p, subj, d, prior)
		if errors.Is(err, errDecided) {
			err = oauthErr(codeInvalidRequest, "this request was already decided")
		}
		if err != nil {
			s.errorPage(w, r, s.asError(r, err))
			return
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	s.consentShown(r.Context(), p, subj)
	s.render(w, r, http.StatusOK, s.pages.consent, consentData{RequestID: p.id, CSRF: se.csrf, Model: m})
}

// handleConsentSubmit applies the decision and redirects to the client.
func (s *browserHandler) handleConsentSubmit(w http.ResponseWriter, r *http.Request) {
	se, p, ok := s.postedPending(w, r)
	if !ok {
		return
	}
	subj := se.subject()
	if rs, _ := p.state(); subj == "" || rs != subj {
		// The page was not shown to this session's subject: show it.
		http.Redirect(w, r, s.path(pathConsent)+"?request="+url.QueryEscape(p.id), http.StatusSeeOther)
		return
	}
	_, m, prior, err := s.flow.recordedModel(r.Context(), p)
	if err != nil {
		s.errorPage(w, r, s.asError(r, err))
		return
	}
	d := consent.Decision{Action: r.PostForm.Get("action"), AccountID: r.PostForm.Get("account_id"),
		CompanyAccountID: r.PostForm.Get("company_account_id")}
	if r.PostForm.Has("per_entry") {
		// The page's checkboxes: an unchecked entry is declined. A form
		// without them (per_entry absent) approves everything.
		d.DeclinedScopes, d.DeclinedDetails = m.Declined(r.PostForm["grant"])
	}
	var typed map[string]string
	if d.Action == consent.Approve {
		d.LoweredMaximums, typed = loweredMaximums(m, r.PostForm, d.DeclinedDetails)
	}
	if err := m.Validate(d); err != nil {
		un := map[string]bool{}
		for _, p := range m.Permissions {
			if p.Kind == consent.KindScope && slices.Contains(d.DeclinedScopes, p.Name) ||
				p.Kind == consent.KindDetail && p.Index != nil && slices.Contains(d.DeclinedDetails, *p.Index) {
				un[p.Entry()] = true
			}
		}
		s.render(w, r, http.StatusBadRequest, s.pages.consent, consentData{RequestID: p.id, CSRF: se.csrf, Model: m, Error: err.Error(), Unchecked: un, Maximums: typed})
		return
	}
	to, err := s.flow.decide(r.Context(), p, subj, d, prior)
	if errors.Is(err, errDecided) {
		err = oauthErr(codeInvalidRequest, "this request was already decided")
	}
	if err != nil {
		s.errorPage(w, r, s.asError(r, err))
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
