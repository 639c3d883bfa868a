// Package providers holds the example Resource Servers of the reference
// service: the signing provider and the invoicing provider (docs/service.md §1, §5.7).
// Each serves one endpoint per catalog type and action it owns, reads the
// grant behind the caller's access token with GET {base_url}/authorization
// and its own client credential (docs/service.md §4.1, §5.6), and answers as docs/service.md §5.7
// describes: 401 missing_token without a bearer token, 403
// insufficient_authorization when the grant lacks the endpoint's type and
// action, 200 with a result otherwise. A token the service refuses to show
// the grant of (unknown, expired, revoked, or issued for another resource)
// is 401 invalid_token with an RFC 6750 §3.1 challenge; 502
// grant_unavailable is kept for the provider's own failure to read grants
// (its credential refused, the service failing or unreachable).
package providers
