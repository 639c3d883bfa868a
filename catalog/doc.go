// Package catalog owns the service's catalog of 22 requestable permissions
// (docs/service.md §2): 14 scopes (the 12 of §2.1 and the two of FAPI Grant
// Management) and 8 authorization_details types (RFC 9396),
// each type a draft-07 JSON Schema embedded in assets, plus the cross-field
// rules that a schema does not express well. It checks a whole authorization
// request and reports every violation with a JSON pointer into the request,
// a stable code and the OAuth error it maps to, and it gives the human
// meaning of every scope, type and action for the consent screen.
//
// The addresses in type names and in `locations` come from an Endpoints
// value, never from a constant, so the same catalog serves the embedded
// reference server and a real deployment.
package catalog
