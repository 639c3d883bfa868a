package dashboard

import (
	"context"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Storage is what the dashboard keeps, as it needs it: Config.Store takes
// one value that has all of it, and package store's *Store is that value.
// The groups:
//
//   - Projects: the projects and their keys (a project's own credential).
//   - Credentials: the OAuth clients a project registers, changes and
//     removes; the client configuration API reads them.
//   - Reviews: what projects submit (scope policies, Resource Server
//     declarations, published Miniapps' manifests) and the operator's
//     decisions on it.
//   - Settings: the operator credential's hash (OperatorKeySetting).
//   - Exclusive: one review decision at a time across instances that
//     share a database.
//
// Records and errors are package store's (store.Client, store.ErrNotFound,
// store.ErrExists, store.ErrDecided). What an implementation must
// guarantee, on one process and across instances on one database alike:
// an id is created once (CreateProject, AddClient: a second one, even of a
// removed client, is store.ErrExists, so that a removed credential's id
// never comes back); a submission is decided once (DecideSubmission: the
// second decision is store.ErrDecided); removing a client revokes every
// grant issued to it in the same transaction; and every change of an
// existing client, and every review decision, reaches the caches of every
// instance that shares the database (docs/authserver.md, "Several
// instances on one database").
type Storage interface {
	Projects
	Credentials
	Reviews
	Settings
	Exclusive(ctx context.Context, fn func() error) error
}

// Projects are the dashboard's projects (docs/dashboard.md).
type Projects interface {
	// CreateProject stores a new project with the hash of its key; an
	// existing id is store.ErrExists.
	CreateProject(ctx context.Context, p store.Project, keyHash []byte) error
	// Project returns a project, or store.ErrNotFound.
	Project(ctx context.Context, id string) (store.Project, error)
	// ProjectKeyHash returns the hash of a project's key; nil for a seeded
	// project, which the operator manages.
	ProjectKeyHash(ctx context.Context, id string) ([]byte, error)
}

// Credentials are the OAuth clients of projects.
type Credentials interface {
	// Client returns a client that was not removed, or store.ErrNotFound.
	Client(ctx context.Context, id string) (*store.Client, error)
	// ProjectClients returns a project's clients in the order they were
	// added.
	ProjectClients(ctx context.Context, projectID string) ([]*store.Client, error)
	// AddClient stores a new client; an id used before is store.ErrExists.
	AddClient(ctx context.Context, c *store.Client) error
	// SetClientSecret replaces a confidential client's secret hash.
	SetClientSecret(ctx context.Context, id string, hash []byte) error
	// SetClientAddresses replaces a client's redirect URIs and allowed
	// origins.
	SetClientAddresses(ctx context.Context, id string, redirectURIs, allowedOrigins []string) error
	// RemoveClient removes a client and revokes every grant issued to it.
	RemoveClient(ctx context.Context, id string, now time.Time) error
	// SetResourceServer gives every confidential client of a project the
	// Resource Server role for resource.
	SetResourceServer(ctx context.Context, projectID, resource string) error
	// ClientSettings returns a client's security settings (docs/fapi.md);
	// the zero value when it has none.
	ClientSettings(ctx context.Context, clientID string) (store.ClientSettings, error)
	// PutClientSettings replaces a client's security settings.
	PutClientSettings(ctx context.Context, clientID string, cs store.ClientSettings) error
}

// Reviews are the submissions under the operator's review.
type Reviews interface {
	// AddSubmission stores a new pending submission.
	AddSubmission(ctx context.Context, sub *store.Submission) error
	// Submissions returns the submissions that match f, oldest first.
	Submissions(ctx context.Context, f store.SubmissionFilter) ([]*store.Submission, error)
	// Submission returns one submission, or store.ErrNotFound.
	Submission(ctx context.Context, id string) (*store.Submission, error)
	// DecideSubmission approves or rejects a pending submission, once.
	DecideSubmission(ctx context.Context, id, status, reason, assignedID string, now time.Time) error
	// ApprovedPolicy returns the union of a project's approved scope
	// policies.
	ApprovedPolicy(ctx context.Context, projectID string) (store.Policy, error)
}

// Settings are named values of the server.
type Settings interface {
	// Setting returns a setting, or store.ErrNotFound.
	Setting(ctx context.Context, name string) ([]byte, error)
}
