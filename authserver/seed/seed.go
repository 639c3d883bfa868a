// Package seed loads the reference server's seed world (assets/authserver/
// seed.json) into a fresh database: projects, the demo clients, the host's
// own credential, the Resource Server clients of the example providers,
// subjects with profiles, companies with legal identifier, country and
// addresses, memberships and bank accounts.
package seed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/miniapp-host/miniapp-host/assets"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// World is the decoded seed file.
type World struct {
	Projects []store.Project `json:"projects"`
	// Policies are the approved scope policies of seeded projects, so that
	// the demo Miniapps pass the project-approval check (docs/service.md §1). Type
	// names keep the endpoint placeholders ({base_url}...), filled when
	// the server compares.
	Policies []struct {
		ProjectID string `json:"project_id"`
		store.Policy
	} `json:"policies"`
	Clients []struct {
		ID             string   `json:"id"`
		ProjectID      string   `json:"project_id"`
		Name           string   `json:"name"`
		Type           string   `json:"type"`
		RedirectURIs   []string `json:"redirect_uris"`
		AllowedOrigins []string `json:"allowed_origins"`
		Roles          []string `json:"roles"`
		Resource       string   `json:"resource"`
		// IDTokenAlg is id_token_signed_response_alg; "" is RS256.
		IDTokenAlg string `json:"id_token_signed_response_alg"`
	} `json:"clients"`
	Subjects []struct {
		ID      string        `json:"id"`
		Profile store.Profile `json:"profile"`
	} `json:"subjects"`
	Companies []struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		LegalID   string          `json:"legal_id"`
		Country   string          `json:"country"`
		Addresses []store.Address `json:"addresses"`
	} `json:"companies"`
	Memberships []struct {
		SubjectID string `json:"subject_id"`
		CompanyID string `json:"company_id"`
		Role      string `json:"role"`
	} `json:"memberships"`
	Accounts []struct {
		ID        string `json:"id"`
		SubjectID string `json:"subject_id"`
		CompanyID string `json:"company_id"`
		Name      string `json:"name"`
		Number    string `json:"number"`
		Currency  string `json:"currency"`
	} `json:"accounts"`
}

// Read decodes the embedded seed world.
func Read() (*World, error) {
	raw, err := fs.ReadFile(assets.FS, "authserver/seed.json")
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	var w World
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("seed: seed.json: %w", err)
	}
	return &w, nil
}

// ConfidentialClients returns the ids of the seeded confidential clients,
// whose secrets the server sets at every start.
func (w *World) ConfidentialClients() []string {
	var ids []string
	for _, c := range w.Clients {
		if c.Type == string(store.Confidential) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// LoadPolicies records the seeded policies as approved submissions, for
// each seeded project that has no policy submission yet: on a new database,
// and on one created before projects had policies. A seeded project that a
// database made by an older seed lacks (the development project of
// `miniapp-host dev`) is added first; one that exists is left as it is.
func (w *World) LoadPolicies(ctx context.Context, st *store.Store, now time.Time) error {
	for _, p := range w.Policies {
		if err := w.addMissingProject(ctx, st, p.ProjectID); err != nil {
			return err
		}
		subs, err := st.Submissions(ctx, store.SubmissionFilter{ProjectID: p.ProjectID, Kind: store.KindPolicy})
		if err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		if len(subs) > 0 {
			continue
		}
		body, _ := json.Marshal(p.Policy)
		id := "sub_seed_policy_" + p.ProjectID
		if err := st.AddSubmission(ctx, &store.Submission{ID: id, ProjectID: p.ProjectID, Kind: store.KindPolicy, Body: body, CreatedAt: now}); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		if err := st.DecideSubmission(ctx, id, store.StatusApproved, "seeded demo project", "", now); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	return nil
}

func (w *World) addMissingProject(ctx context.Context, st *store.Store, id string) error {
	_, err := st.Project(ctx, id)
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	for _, p := range w.Projects {
		if p.ID == id {
			if err := st.PutProject(ctx, p); err != nil {
				return fmt.Errorf("seed: %w", err)
			}
		}
	}
	return nil
}

// Load writes the world into the store. Confidential clients get no secret
// here: the server sets one at every start (see authserver.Config). A
// Resource Server client's resource stays a placeholder such as
// "{signing_base_url}", because the providers' loopback ports may change
// from one start to the next; the server fills it in when it compares.
func (w *World) Load(ctx context.Context, st *store.Store) error {
	for _, p := range w.Projects {
		if err := st.PutProject(ctx, p); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	for _, c := range w.Clients {
		if err := st.PutClient(ctx, &store.Client{ID: c.ID, ProjectID: c.ProjectID, Name: c.Name, Type: store.ClientType(c.Type),
			RedirectURIs: c.RedirectURIs, AllowedOrigins: c.AllowedOrigins, Roles: c.Roles, Resource: c.Resource,
			IDTokenAlg: c.IDTokenAlg}); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	for _, s := range w.Subjects {
		if err := st.PutSubject(ctx, store.Subject{ID: s.ID, Profile: s.Profile}); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	for _, c := range w.Companies {
		if err := st.PutCompany(ctx, store.Company{ID: c.ID, Name: c.Name, LegalID: c.LegalID, Country: c.Country, Addresses: c.Addresses}); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	for _, m := range w.Memberships {
		if err := st.PutMembership(ctx, m.SubjectID, m.CompanyID, m.Role); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	for _, a := range w.Accounts {
		if err := st.PutAccount(ctx, store.Account{ID: a.ID, SubjectID: a.SubjectID, CompanyID: a.CompanyID,
			Name: a.Name, Number: a.Number, Currency: a.Currency}); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	return nil
}
