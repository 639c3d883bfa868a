package devctl

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/providers"
)

// Faults are the faults injected at the development server's endpoints
// (docs/dashboard.md, "Development controls", Faults). They are held in
// this process's memory only: a restart has none, and instances sharing a
// database each have their own. Each endpoint asks for its fault right
// after it has identified the request's client (oauth.FaultHook) and
// answers it through its own error writer.
type Faults struct {
	mu   sync.Mutex
	list []*fault // oldest first: the first that matches a request is applied
}

// NewFaults returns an empty set of faults.
func NewFaults() *Faults { return &Faults{} }

// The endpoints of the example Resource Servers (package providers).
const (
	FaultSigning   = "signing"
	FaultInvoicing = "invoicing"
)

// FaultEndpoints are the endpoints a fault may be injected at, in the
// order docs/dashboard.md lists them.
var FaultEndpoints = []string{oauth.FaultAuthorization, oauth.FaultPAR, oauth.FaultToken, oauth.FaultUserinfo,
	oauth.FaultRevocation, oauth.FaultIntrospection, oauth.FaultGrant, FaultSigning, FaultInvoicing}

// FaultKinds returns the error codes a fault may inject at endpoint.
func FaultKinds(endpoint string) []string {
	if endpoint == FaultSigning || endpoint == FaultInvoicing {
		return providers.FaultKinds()
	}
	return oauth.FaultKinds(endpoint)
}

// Limits of a fault.
const (
	maxFaults     = 1000
	maxTimes      = 1_000_000
	maxDelay      = 10 * time.Minute
	maxRetryAfter = 86400
	maxDescLen    = 500
)

// FaultView is a fault as the API shows it.
type FaultView struct {
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	ClientID string `json:"client_id"`
	Subject  string `json:"subject,omitempty"`
	// Times is how many matching requests it was added for, absent for
	// until cleared; Remaining how many are left, null for until cleared.
	Times     int  `json:"times,omitempty"`
	Remaining *int `json:"remaining"`
	// The effect: exactly one of Error, Status, Delay and Drop.
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
	Status           int    `json:"status,omitempty"`
	RetryAfter       int    `json:"retry_after,omitempty"`
	Delay            string `json:"delay,omitempty"`
	Drop             bool   `json:"drop,omitempty"`
}

type fault struct {
	view      FaultView
	effect    oauth.Fault
	remaining int // -1: until cleared
}

func (f *fault) show() FaultView {
	v := f.view
	if f.remaining >= 0 {
		n := f.remaining
		v.Remaining = &n
	}
	return v
}

// Fault is the oauth.FaultHook: the oldest fault at endpoint for clientID
// (and for the request's subject, when the fault names one) is counted
// and returned.
func (fs *Faults) Fault(endpoint, clientID string, subject func() string) *oauth.Fault {
	fs.mu.Lock()
	scoped := false
	for _, f := range fs.list {
		if f.view.Endpoint == endpoint && f.view.ClientID == clientID {
			scoped = scoped || f.view.Subject != ""
			if f.view.Subject == "" {
				break // the first match needs no subject
			}
		}
	}
	fs.mu.Unlock()
	subj := ""
	if scoped {
		subj = subject() // may be a lookup: outside the lock
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.list {
		if f.view.Endpoint != endpoint || f.view.ClientID != clientID || (f.view.Subject != "" && f.view.Subject != subj) {
			continue
		}
		if f.remaining > 0 {
			f.remaining--
			if f.remaining == 0 {
				fs.list = slices.Delete(fs.list, i, i+1)
			}
		}
		e := f.effect
		return &e
	}
	return nil
}

// Provider is the providers.FaultHook of the example Resource Server at
// endpoint (FaultSigning or FaultInvoicing); nonce mints the DPoP-Nonce of
// a use_dpop_nonce fault (oauth.Server.DPoPNonce).
func (fs *Faults) Provider(endpoint string, nonce func() string) providers.FaultHook {
	return func(w http.ResponseWriter, r *http.Request, clientID, subject string) (*providers.Injected, bool) {
		f := fs.Fault(endpoint, clientID, func() string { return subject })
		if f == nil {
			return nil, false
		}
		if oauth.ApplyFault(w, r, f, endpoint) {
			return nil, true
		}
		if f.Error == "" && f.Status == 0 {
			return nil, false // a delay
		}
		in := &providers.Injected{Code: f.Error, Description: f.Description, Status: f.Status}
		if in.Description == "" {
			in.Description = "injected by the development fault " + f.ID + " (docs/dashboard.md, Faults)"
		}
		if in.Code == "use_dpop_nonce" && nonce != nil {
			in.Nonce = nonce()
		}
		return in, false
	}
}

func (c *Controls) faultRoutes() {
	// POST /api/dev/faults adds a fault; GET lists them; DELETE clears
	// them (?client_id= those of one client); DELETE /{id} removes one.
	c.mux.HandleFunc("POST /api/dev/faults", c.handleFaultAdd)
	c.mux.HandleFunc("GET /api/dev/faults", c.handleFaultList)
	c.mux.HandleFunc("DELETE /api/dev/faults", c.handleFaultClear)
	c.mux.HandleFunc("DELETE /api/dev/faults/{id}", c.handleFaultRemove)
}

// faultSpec is the body of POST /api/dev/faults.
type faultSpec struct {
	Endpoint         *string `json:"endpoint"`
	ClientID         *string `json:"client_id"`
	Subject          *string `json:"subject"`
	Times            *int    `json:"times"`
	Error            *string `json:"error"`
	ErrorDescription *string `json:"error_description"`
	Status           *int    `json:"status"`
	RetryAfter       *int    `json:"retry_after"`
	Delay            *string `json:"delay"`
	Drop             *bool   `json:"drop"`
}

// endpointName is how a refusal names an endpoint.
func endpointName(e string) string {
	switch e {
	case FaultSigning, FaultInvoicing:
		return "the " + e + " Resource Server"
	case oauth.FaultGrant:
		return "the grant endpoint"
	}
	return "the " + e + " endpoint"
}

// badField is a refusal of one member of a fault's specification.
func badField(field, format string, a ...any) error {
	return &Error{Code: CodeInvalidField, Field: field, Message: fmt.Sprintf(format, a...)}
}

// parse checks a fault's specification, naming the member and the
// rule of each refusal.
func (s *faultSpec) parse() (*fault, error) {
	f, err := s.target()
	if err != nil {
		return nil, err
	}
	if err := s.oneEffect(); err != nil {
		return nil, err
	}
	switch {
	case s.Error != nil:
		err = s.errorEffect(f)
	case s.Status != nil:
		err = s.statusEffect(f)
	case s.Delay != nil:
		err = s.delayEffect(f)
	default:
		err = s.dropEffect(f)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// target reads which requests get the fault: the endpoint, the client,
// the subject and how many times.
func (s *faultSpec) target() (*fault, error) {
	if s.Endpoint == nil || *s.Endpoint == "" {
		return nil, &Error{Code: CodeMissingField, Field: "/endpoint", Message: "name the endpoint: one of " + strings.Join(FaultEndpoints, ", ")}
	}
	ep := *s.Endpoint
	if !slices.Contains(FaultEndpoints, ep) {
		return nil, badField("/endpoint", "%q is no endpoint a fault can be injected at: use one of %s", ep, strings.Join(FaultEndpoints, ", "))
	}
	if s.ClientID == nil || *s.ClientID == "" {
		return nil, &Error{Code: CodeMissingField, Field: "/client_id", Message: "name the client_id whose requests get the fault"}
	}
	f := &fault{view: FaultView{Endpoint: ep, ClientID: *s.ClientID}, remaining: -1}
	if s.Subject != nil {
		if *s.Subject == "" {
			return nil, badField("/subject", "subject is empty: name a subject id such as sub_ana, or leave the member out for every subject")
		}
		f.view.Subject = *s.Subject
	}
	if s.Times != nil {
		if *s.Times < 1 || *s.Times > maxTimes {
			return nil, badField("/times", "times must be 1 to %d (the next N matching requests); leave it out for until cleared", maxTimes)
		}
		f.view.Times, f.remaining = *s.Times, *s.Times
	}
	return f, nil
}

// oneEffect checks that exactly one effect is given, and the members
// that qualify an effect only beside it.
func (s *faultSpec) oneEffect() error {
	n := 0
	for _, set := range []bool{s.Error != nil, s.Status != nil, s.Delay != nil, s.Drop != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return &Error{Code: CodeInvalidBody, Message: `give exactly one effect: "error" (an OAuth error code), "status" (400-599), "delay" (a Go duration) or "drop": true`}
	}
	if s.ErrorDescription != nil && s.Error == nil {
		return badField("/error_description", "error_description goes with error only")
	}
	if s.RetryAfter != nil && s.Status == nil {
		return badField("/retry_after", "retry_after goes with status only")
	}
	return nil
}

// errorEffect reads an OAuth error the endpoint gives, with its
// optional error_description (RFC 6749 section 5.2).
func (s *faultSpec) errorEffect(f *fault) error {
	ep := f.view.Endpoint
	kinds := FaultKinds(ep)
	if !slices.Contains(kinds, *s.Error) {
		return badField("/error", "%q is not an error %s gives: use one of %s", *s.Error, endpointName(ep), strings.Join(kinds, ", "))
	}
	f.view.Error, f.effect.Error = *s.Error, *s.Error
	if s.ErrorDescription == nil {
		return nil
	}
	d := *s.ErrorDescription
	if len(d) > maxDescLen {
		return badField("/error_description", "error_description is %d bytes; at most %d", len(d), maxDescLen)
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return badField("/error_description", "error_description may hold printable ASCII only, without %s and %s (RFC 6749 section 5.2): found %q at byte %d", `"`, `\`, c, i)
		}
	}
	f.view.ErrorDescription, f.effect.Description = d, d
	return nil
}

// statusEffect reads an HTTP error status with its optional Retry-After.
func (s *faultSpec) statusEffect(f *fault) error {
	if *s.Status < 400 || *s.Status > 599 {
		return badField("/status", "status %d is not an error status: use 400 to 599", *s.Status)
	}
	f.view.Status, f.effect.Status = *s.Status, *s.Status
	if s.RetryAfter == nil {
		return nil
	}
	if *s.RetryAfter < 1 || *s.RetryAfter > maxRetryAfter {
		return badField("/retry_after", "retry_after is seconds, 1 to %d", maxRetryAfter)
	}
	f.view.RetryAfter, f.effect.RetryAfter = *s.RetryAfter, *s.RetryAfter
	return nil
}

// delayEffect reads a delay before the answer.
func (s *faultSpec) delayEffect(f *fault) error {
	d, err := time.ParseDuration(*s.Delay)
	if err != nil {
		return badField("/delay", "%q is not a duration: write a Go duration such as 500ms, 3s or 1m", *s.Delay)
	}
	if d <= 0 || d > maxDelay {
		return badField("/delay", "delay must be more than 0 and at most %s, not %s", maxDelay, d)
	}
	f.view.Delay, f.effect.Delay = d.String(), d
	return nil
}

// dropEffect reads "drop": true, closing the connection unanswered.
func (s *faultSpec) dropEffect(f *fault) error {
	if !*s.Drop {
		return badField("/drop", `send "drop": true to close the connection without an answer`)
	}
	f.view.Drop, f.effect.Drop = true, true
	return nil
}

func newFaultID() (string, error) {
	b := make([]byte, 9)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "flt_" + base64.RawURLEncoding.EncodeToString(b), nil
}

func (c *Controls) handleFaultAdd(w http.ResponseWriter, r *http.Request) {
	var b faultSpec
	if err := decode(w, r, &b); err != nil {
		c.writeError(w, r, err)
		return
	}
	f, err := b.parse()
	if err == nil {
		f.view.ID, err = newFaultID()
		f.effect.ID = f.view.ID
	}
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	fs := c.cfg.Faults
	fs.mu.Lock()
	full := len(fs.list) >= maxFaults
	if !full {
		fs.list = append(fs.list, f)
	}
	v := f.show()
	fs.mu.Unlock()
	if full {
		c.writeError(w, r, &Error{Code: CodeInvalidBody, Message: fmt.Sprintf("%d faults are set, the most there may be: clear some first", maxFaults)})
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

// faultList is the answer of GET /api/dev/faults.
type faultList struct {
	Faults []FaultView `json:"faults"`
}

func (c *Controls) handleFaultList(w http.ResponseWriter, r *http.Request) {
	fs := c.cfg.Faults
	fs.mu.Lock()
	out := faultList{Faults: []FaultView{}}
	for _, f := range fs.list {
		out.Faults = append(out.Faults, f.show())
	}
	fs.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (c *Controls) handleFaultClear(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if k != "client_id" {
			c.writeError(w, r, &Error{Code: CodeInvalidField, Field: k, Message: "the only parameter is client_id (clear the faults of one client)"})
			return
		}
	}
	client, scoped := q["client_id"]
	if scoped && (len(client) != 1 || client[0] == "") {
		c.writeError(w, r, &Error{Code: CodeInvalidField, Field: "client_id", Message: "send client_id once, not empty"})
		return
	}
	fs := c.cfg.Faults
	fs.mu.Lock()
	n := len(fs.list)
	if scoped {
		fs.list = slices.DeleteFunc(fs.list, func(f *fault) bool { return f.view.ClientID == client[0] })
	} else {
		fs.list = nil
	}
	n -= len(fs.list)
	fs.mu.Unlock()
	writeJSON(w, http.StatusOK, struct {
		Removed int `json:"removed"`
	}{n})
}

func (c *Controls) handleFaultRemove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	fs := c.cfg.Faults
	fs.mu.Lock()
	var gone *FaultView
	fs.list = slices.DeleteFunc(fs.list, func(f *fault) bool {
		if f.view.ID == id {
			v := f.show()
			gone = &v
			return true
		}
		return false
	})
	fs.mu.Unlock()
	if gone == nil {
		c.writeError(w, r, &Error{Code: CodeNotFound, Field: "id", Message: fmt.Sprintf("no fault %q: it was cleared, used up its times, or the server restarted (GET /api/dev/faults lists them)", id)})
		return
	}
	writeJSON(w, http.StatusOK, gone)
}
