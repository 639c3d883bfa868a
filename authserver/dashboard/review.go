package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/resolver"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

// Review (docs/service.md §5.8): a project submits a scope policy, a Resource Server
// declaration or a published Miniapp's manifest; each is checked when
// submitted, so that the operator reviews only well-formed submissions, and
// takes effect only when the operator approves it.

// handleRequestPolicy submits a scope policy: the catalog scopes and types
// the project asks to request.
func (s *Server) handleRequestPolicy(w http.ResponseWriter, r *http.Request, p store.Project) {
	var pol store.Policy
	if err := decode(w, r, &pol); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(pol.Scopes) == 0 && len(pol.Types) == 0 {
		s.writeError(w, r, missing("/scopes", "a policy names at least one scope or authorization_details type"))
		return
	}
	cat := s.cfg.Catalog()
	for i, sc := range pol.Scopes {
		if _, ok := cat.Scope(sc); !ok {
			s.writeError(w, r, &Error{Code: codeUnknownScope, Field: fmt.Sprintf("/scopes/%d", i),
				Message: fmt.Sprintf("scope %q is not in the catalog (see scopes_supported in discovery)", sc)})
			return
		}
	}
	for i, t := range pol.Types {
		if _, ok := cat.Type(t); !ok {
			s.writeError(w, r, &Error{Code: codeUnknownType, Field: fmt.Sprintf("/types/%d", i),
				Message: fmt.Sprintf("type %q is not in the catalog (see authorization_details_types_supported in discovery)", t)})
			return
		}
	}
	s.submit(w, r, p, store.KindPolicy, pol)
}

// pendingID stands in for the id the operator assigns on approval while a
// declaration is checked before review.
const pendingID = "pending-review"

// handleDeclareRS submits a Resource Server declaration, checked with the
// catalog before review (catalog.CheckDeclaration).
func (s *Server) handleDeclareRS(w http.ResponseWriter, r *http.Request, p store.Project) {
	var d catalog.Declaration
	if err := decode(w, r, &d); err != nil {
		s.writeError(w, r, err)
		return
	}
	if d.ID != "" {
		s.writeError(w, r, invalid("/id", "remove id from the declaration: the operator assigns the Resource Server's id (rs_...) on approval"))
		return
	}
	d.ID = pendingID
	if vs := s.cfg.Catalog().CheckDeclaration(d); len(vs) > 0 {
		s.writeError(w, r, &Error{Code: codeInvalidDeclaration, Field: vs[0].Pointer, Message: vs[0].Message, Violations: vs})
		return
	}
	if err := s.resourceFree(r.Context(), d.Resource); err != nil {
		s.writeError(w, r, err)
		return
	}
	d.ID = ""
	s.submit(w, r, p, store.KindResourceServer, d)
}

// miniappSubmission is the body of POST .../miniapps: the manifest of a
// published Miniapp and the origin that serves it.
type miniappSubmission struct {
	Origin   string          `json:"origin"`
	Manifest json.RawMessage `json:"manifest"`
}

// handleSubmitMiniapp submits a published Miniapp's manifest. It is checked
// offline exactly as a host resolves it (package resolver: schema, origins,
// the client's allowed_origins), against the project's own credential.
func (s *Server) handleSubmitMiniapp(w http.ResponseWriter, r *http.Request, p store.Project) {
	var body miniappSubmission
	if err := decode(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case body.Origin == "":
		s.writeError(w, r, missing("/origin", "the origin that serves the Miniapp's manifest is required"))
		return
	case len(body.Manifest) == 0:
		s.writeError(w, r, missing("/manifest", "the manifest document is required"))
		return
	}
	o, err := origin.Parse(body.Origin)
	if err != nil {
		s.writeError(w, r, invalid("/origin", fmt.Sprintf("origin %q: %v", body.Origin, err)))
		return
	}
	body.Origin = o.String()
	var probe struct {
		ID    string `json:"id"`
		OAuth struct {
			ClientID string `json:"client_id"`
		} `json:"oauth"`
	}
	if err := json.Unmarshal(body.Manifest, &probe); err != nil || probe.OAuth.ClientID == "" {
		s.writeError(w, r, missing("/manifest/oauth/client_id", "the manifest names the project's OAuth client in oauth.client_id"))
		return
	}
	c, err := s.st.Client(r.Context(), probe.OAuth.ClientID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && c.ProjectID != p.ID) {
		s.writeError(w, r, &Error{Code: codeCredentialNotFound, Field: "/manifest/oauth/client_id",
			Message: fmt.Sprintf("project %s has no credential %q", p.ID, probe.OAuth.ClientID)})
		return
	} else if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := resolver.New(resolver.Config{})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cc, _ := json.Marshal(clientConfigOf(c))
	manifestURL := body.Origin + resolver.ManifestPath
	if _, err := res.Check(r.Context(), probe.ID, manifestURL, body.Manifest, cc); err != nil {
		var rej *resolver.Rejection
		if !errors.As(err, &rej) {
			s.writeError(w, r, err)
			return
		}
		s.writeError(w, r, &Error{Code: codeManifestRejected, Field: rej.Pointer, Message: rej.Reason.String(), Violations: rej.Reasons})
		return
	}
	s.submit(w, r, p, store.KindMiniapp, body)
}

// submit stores a pending submission and answers 201 with it.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, p store.Project, kind string, body any) {
	js, err := json.Marshal(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := s.newID("sub_", 9)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Whole seconds, as the store keeps them: the answer and later reads
	// show the same created_at (RFC 3339, UTC, seconds).
	sub := &store.Submission{ID: id, ProjectID: p.ID, Kind: kind, Body: js, Status: store.StatusPending, CreatedAt: s.cfg.Now().UTC().Truncate(time.Second)}
	if err := s.st.AddSubmission(r.Context(), sub); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sub)
}

// handleReviewList lists submissions for the operator.
func (s *Server) handleReviewList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.SubmissionFilter{Status: q.Get("status"), Kind: q.Get("kind"), ProjectID: q.Get("project")}
	if f.Status != "" && !slices.Contains([]string{store.StatusPending, store.StatusApproved, store.StatusRejected}, f.Status) {
		s.writeError(w, r, invalid("status", "status is pending, approved or rejected"))
		return
	}
	if f.Kind != "" && !slices.Contains([]string{store.KindPolicy, store.KindResourceServer, store.KindMiniapp}, f.Kind) {
		s.writeError(w, r, invalid("kind", "kind is policy, resource_server or miniapp"))
		return
	}
	subs, err := s.st.Submissions(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Submissions []*store.Submission `json:"submissions"`
	}{subs})
}

// decision is the body of approve and reject.
type decision struct {
	Reason string `json:"reason"`
}

// readDecision reads a decision; an empty body is a decision without a
// reason.
func (s *Server) readDecision(w http.ResponseWriter, r *http.Request) (decision, error) {
	var d decision
	raw, err := httplimit.ReadBody(w, r, maxBody)
	if httplimit.TooLarge(err) {
		return d, tooLarge()
	} else if err != nil {
		return d, &Error{Code: codeInvalidBody, Message: "unreadable body: " + err.Error()}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return d, nil
	}
	if err := strictjson.Unmarshal(raw, &d, strictjson.Limits{}); err != nil {
		return d, &Error{Code: codeInvalidBody, Message: `the body is {"reason": "..."}: ` + err.Error()}
	}
	return d, nil
}

// handleReject rejects a pending submission; the reason is required, so
// that the project knows what to change.
func (s *Server) handleReject(w http.ResponseWriter, r *http.Request) {
	d, err := s.readDecision(w, r)
	if err == nil && strings.TrimSpace(d.Reason) == "" {
		err = missing("/reason", "a rejection says why, so that the project knows what to change")
	}
	if err == nil {
		err = s.decide(r, store.StatusRejected, d.Reason, "")
	}
	s.answerDecision(w, r, err)
}

// handleApprove approves a pending submission. Approving a Resource Server
// assigns its id, lets the project's confidential credentials read grants
// for its resource, and puts the extended catalog in force.
func (s *Server) handleApprove(w http.ResponseWriter, r *http.Request) {
	d, err := s.readDecision(w, r)
	if err != nil {
		s.answerDecision(w, r, err)
		return
	}
	s.reviewMu.Lock()
	defer s.reviewMu.Unlock()
	s.answerDecision(w, r, s.st.Exclusive(r.Context(), func() error { return s.approve(r, d) }))
}

// approve decides an approval, one at a time (handleApprove).
func (s *Server) approve(r *http.Request, d decision) error {
	sub, err := s.pendingSubmission(r)
	if err != nil {
		return err
	}
	if sub.Kind != store.KindResourceServer {
		return s.decide(r, store.StatusApproved, d.Reason, "")
	}
	var decl catalog.Declaration
	if err := json.Unmarshal(sub.Body, &decl); err != nil {
		return fmt.Errorf("dashboard: submission %s: %w", sub.ID, err)
	}
	if decl.ID, err = s.newID("rs_", 9); err != nil {
		return err
	}
	if s.cfg.RefreshCatalog != nil {
		// Another instance may have approved one since this one heard.
		if err := s.cfg.RefreshCatalog(r.Context()); err != nil {
			return err
		}
	}
	// Checked again: a name or the resource may have been taken since it
	// was submitted.
	ext, err := s.cfg.Catalog().Extend(decl)
	if err == nil {
		err = s.resourceFree(r.Context(), decl.Resource)
	}
	if err != nil {
		return &Error{Code: codeDeclarationClash, Field: "submission_id", Message: err.Error()}
	}
	if err := s.decide(r, store.StatusApproved, d.Reason, decl.ID); err != nil {
		return err
	}
	if err := s.grantResourceRole(r.Context(), sub.ProjectID, decl.Resource); err != nil {
		return err
	}
	if s.cfg.RefreshCatalog != nil {
		return s.cfg.RefreshCatalog(r.Context())
	}
	return s.cfg.SetCatalog(ext)
}

// resourceFree refuses a resource address that an approved Resource
// Server already has: its credentials read the grants of tokens for that
// address, so two projects sharing one would read each other's grants.
func (s *Server) resourceFree(ctx context.Context, resource string) error {
	decls, err := ApprovedDeclarations(ctx, s.st, "")
	if err != nil {
		return err
	}
	for _, d := range decls {
		if d.Resource == resource {
			v := catalog.Violation{Pointer: "/resource", Code: "resource_taken",
				Message: fmt.Sprintf("%s is the resource address of the approved Resource Server %s", resource, d.ID)}
			return &Error{Code: codeInvalidDeclaration, Field: v.Pointer, Message: v.Message, Violations: []catalog.Violation{v}}
		}
	}
	return nil
}

// grantResourceRole lets the project's confidential credentials read the
// grants of tokens for its resource.
func (s *Server) grantResourceRole(ctx context.Context, projectID, resource string) error {
	if err := s.st.SetResourceServer(ctx, projectID, resource); err != nil {
		return err
	}
	cs, err := s.st.ProjectClients(ctx, projectID)
	if err != nil {
		return err
	}
	for _, c := range cs {
		s.cfg.InvalidateClient(c.ID)
	}
	return nil
}

func (s *Server) pendingSubmission(r *http.Request) (*store.Submission, error) {
	sub, err := s.st.Submission(r.Context(), r.PathValue("submission_id"))
	if errors.Is(err, store.ErrNotFound) {
		return nil, &Error{Code: codeSubmissionNotFound, Field: "submission_id", Message: "no submission " + r.PathValue("submission_id")}
	} else if err != nil {
		return nil, err
	}
	if sub.Status != store.StatusPending {
		return nil, &Error{Code: codeAlreadyDecided, Field: "submission_id", Message: "the submission was already " + sub.Status}
	}
	return sub, nil
}

// decide records a decision once.
func (s *Server) decide(r *http.Request, status, reason, assigned string) error {
	err := s.st.DecideSubmission(r.Context(), r.PathValue("submission_id"), status, reason, assigned, s.cfg.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &Error{Code: codeSubmissionNotFound, Field: "submission_id", Message: "no submission " + r.PathValue("submission_id")}
	case errors.Is(err, store.ErrDecided):
		return &Error{Code: codeAlreadyDecided, Field: "submission_id", Message: "the submission was already decided"}
	}
	return err
}

// answerDecision answers with the decided submission, or the error.
func (s *Server) answerDecision(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, err := s.st.Submission(r.Context(), r.PathValue("submission_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sub)
}

// approvedResource is the resource of the project's most recently approved
// Resource Server, or "".
func (s *Server) approvedResource(r *http.Request, projectID string) (string, error) {
	decls, err := ApprovedDeclarations(r.Context(), s.st, projectID)
	if err != nil || len(decls) == 0 {
		return "", err
	}
	return decls[len(decls)-1].Resource, nil
}

// ApprovedDeclarations returns the approved Resource Server declarations
// with their assigned ids, oldest first: those of one project, or of every
// project when projectID is empty. The server extends its catalog with
// them at start.
func ApprovedDeclarations(ctx context.Context, st Reviews, projectID string) ([]catalog.Declaration, error) {
	subs, err := st.Submissions(ctx, store.SubmissionFilter{ProjectID: projectID, Kind: store.KindResourceServer, Status: store.StatusApproved})
	if err != nil {
		return nil, err
	}
	out := make([]catalog.Declaration, 0, len(subs))
	for _, sub := range subs {
		var d catalog.Declaration
		if err := json.Unmarshal(sub.Body, &d); err != nil {
			return nil, fmt.Errorf("dashboard: submission %s: %w", sub.ID, err)
		}
		d.ID = sub.AssignedID
		out = append(out, d)
	}
	return out, nil
}

// approvedMiniapp is one entry of GET /api/miniapps.
type approvedMiniapp struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Origin     string          `json:"origin"`
	ClientID   string          `json:"client_id"`
	ProjectID  string          `json:"project_id"`
	ApprovedAt string          `json:"approved_at"`
	Manifest   json.RawMessage `json:"manifest"`
}

// handleMiniapps lists the approved Miniapps: public, the launcher of the
// playground reads it.
func (s *Server) handleMiniapps(w http.ResponseWriter, r *http.Request) {
	subs, err := s.st.Submissions(r.Context(), store.SubmissionFilter{Kind: store.KindMiniapp, Status: store.StatusApproved})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := []approvedMiniapp{}
	for _, sub := range subs {
		var body miniappSubmission
		var m struct {
			ID    string `json:"id"`
			Name  string `json:"name"`
			OAuth struct {
				ClientID string `json:"client_id"`
			} `json:"oauth"`
		}
		if json.Unmarshal(sub.Body, &body) != nil || json.Unmarshal(body.Manifest, &m) != nil {
			s.log.ErrorContext(r.Context(), "dashboard: unreadable approved manifest", "submission", sub.ID)
			continue
		}
		out = append(out, approvedMiniapp{ID: m.ID, Name: m.Name, Origin: strings.TrimSuffix(body.Origin, "/"), ClientID: m.OAuth.ClientID,
			ProjectID: sub.ProjectID, ApprovedAt: sub.DecidedAt.Format("2006-01-02T15:04:05Z"), Manifest: body.Manifest})
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, struct {
		Miniapps []approvedMiniapp `json:"miniapps"`
	}{out})
}

// handleResourceServers lists the approved Resource Servers with their ids
// (docs/service.md §2.8: a client library's Resource Server definition has id and
// resource).
func (s *Server) handleResourceServers(w http.ResponseWriter, r *http.Request) {
	decls, err := ApprovedDeclarations(r.Context(), s.st, "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, struct {
		ResourceServers []catalog.Declaration `json:"resource_servers"`
	}{decls})
}
