// Package contribution is the client-library convention of docs/service.md §2.8: a
// Resource Server publishes a definition (its id and resource address), and
// a client library builds the Resource Server's authorization contribution
// (scopes and authorization_details with type and actions) and merges the
// contributions of several Resource Servers into one authorization request.
//
// The shape is a convention of each Resource Server, not part of the
// service's interface (docs/service.md §2.8); this package keeps it in one place.
package contribution

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
)

// ResourceServer is a Resource Server definition built for client libraries.
type ResourceServer struct {
	// ID is the identifier the operator assigned at approval (docs/service.md §5.8 c).
	ID string `json:"id"`
	// Resource is the Resource Server's resource address.
	Resource string `json:"resource"`
}

// Detail is one requested authorization_details entry: its type and actions,
// plus any further members the type defines (locations, transaction, ...).
type Detail struct {
	Type    string         `json:"type"`
	Actions []string       `json:"actions"`
	Extra   map[string]any `json:"-"`
}

// MarshalJSON writes the detail as one flat object: type, actions and the
// Extra members.
func (d Detail) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(d.Extra)+2)
	for k, v := range d.Extra {
		m[k] = v
	}
	m["type"], m["actions"] = d.Type, d.Actions
	return json.Marshal(m)
}

// Contribution is a Resource Server's part of an authorization request.
type Contribution struct {
	ResourceServerID     string   `json:"resourceServerId"`
	Resource             string   `json:"resource"`
	Scopes               []string `json:"scopes"`
	AuthorizationDetails []Detail `json:"authorizationDetails"`
}

// Contribute builds the contribution of rs for the given scopes and details.
func (rs ResourceServer) Contribute(scopes []string, details ...Detail) Contribution {
	if scopes == nil {
		scopes = []string{}
	}
	if details == nil {
		details = []Detail{}
	}
	return Contribution{ResourceServerID: rs.ID, Resource: rs.Resource, Scopes: scopes, AuthorizationDetails: details}
}

// Request is the merged authorization request parameters.
type Request struct {
	Scope                string // space-delimited, each scope once, in order of appearance
	Resources            []string
	AuthorizationDetails json.RawMessage // nil when no contribution has details
	OrgID                string
}

// Merge merges contributions into one request (RFC 6749 §3.3 scope, RFC 8707
// resource, RFC 9396 authorization_details). A detail with no `locations`
// gets its contribution's resource, as docs/service.md §2.2 rule 2 requires for the
// types that carry it. orgID is the Company for Company-scoped details.
func Merge(orgID string, cs ...Contribution) (Request, error) {
	var req Request
	seenScope, seenRes := map[string]bool{}, map[string]bool{}
	var scopes []string
	var details []map[string]any
	for i, c := range cs {
		if c.Resource == "" {
			return Request{}, fmt.Errorf("contribution: contribution %d (%s) has no resource", i, c.ResourceServerID)
		}
		if len(c.Scopes) == 0 && len(c.AuthorizationDetails) == 0 {
			continue
		}
		if !seenRes[c.Resource] {
			seenRes[c.Resource] = true
			req.Resources = append(req.Resources, c.Resource)
		}
		for _, s := range c.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\n") {
				return Request{}, fmt.Errorf("contribution: scope %q of %s is not a scope token", s, c.ResourceServerID)
			}
			if !seenScope[s] {
				seenScope[s] = true
				scopes = append(scopes, s)
			}
		}
		for _, d := range c.AuthorizationDetails {
			if d.Type == "" || len(d.Actions) == 0 {
				return Request{}, fmt.Errorf("contribution: a detail of %s needs a type and at least one action", c.ResourceServerID)
			}
			js, err := json.Marshal(d)
			if err != nil {
				return Request{}, fmt.Errorf("contribution: %w", err)
			}
			var m map[string]any
			if err := json.Unmarshal(js, &m); err != nil {
				return Request{}, fmt.Errorf("contribution: %w", err)
			}
			if _, ok := m["locations"]; !ok && d.Type != "bank_account" {
				m["locations"] = []string{c.Resource}
			}
			details = append(details, m)
		}
	}
	if len(req.Resources) == 0 {
		return Request{}, errors.New("contribution: nothing to request")
	}
	req.Scope = strings.Join(scopes, " ")
	req.OrgID = orgID
	if len(details) > 0 {
		js, err := json.Marshal(details)
		if err != nil {
			return Request{}, fmt.Errorf("contribution: %w", err)
		}
		req.AuthorizationDetails = js
	}
	return req, nil
}

// Values returns the request as authorization request parameters.
func (r Request) Values() url.Values {
	v := url.Values{}
	if r.Scope != "" {
		v.Set("scope", r.Scope)
	}
	for _, res := range r.Resources {
		v.Add("resource", res)
	}
	if r.AuthorizationDetails != nil {
		v.Set("authorization_details", string(r.AuthorizationDetails))
	}
	if r.OrgID != "" {
		v.Set("org_id", r.OrgID)
	}
	return v
}

// AuthCodeOptions returns the parameters other than scope as options for
// golang.org/x/oauth2's AuthCodeURL; put Scope in oauth2.Config.Scopes
// (strings.Fields of it). oauth2 sets each parameter once, so several
// resources are joined into the first resource parameter's value only when
// there is one; with more, use Values.
func (r Request) AuthCodeOptions() ([]oauth2.AuthCodeOption, error) {
	if len(r.Resources) > 1 {
		return nil, errors.New("contribution: oauth2.SetAuthURLParam sets one resource; use Values for several")
	}
	var opts []oauth2.AuthCodeOption
	for k, vs := range r.Values() {
		if k == "scope" {
			continue
		}
		opts = append(opts, oauth2.SetAuthURLParam(k, vs[0]))
	}
	return opts, nil
}
