package audit

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Query selects events: by client, subject and kinds, those after an id,
// at most Limit (docs/dashboard.md, "Events").
type Query struct {
	ClientID string
	Subject  string
	Kinds    []string
	// After selects the events with a greater id, oldest first; zero
	// selects the newest Limit (List), or those stored from now on
	// (Follow).
	After int64
	// Limit bounds the events listed; zero means DefaultLimit.
	Limit int

	newest   bool
	afterSet bool
}

// Limits of a listing.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

func (q Query) storeQuery() store.EventQuery {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	return store.EventQuery{ClientID: q.ClientID, Subject: q.Subject, Kinds: q.Kinds, After: q.After,
		Newest: q.newest || q.After == 0 && !q.afterSet, Limit: limit}
}

// WithAfter is q selecting the events after id (a stream's Last-Event-ID).
func (q Query) WithAfter(id int64) Query {
	q.After, q.afterSet = id, true
	return q
}

// HasAfter reports whether q names an After (even 0): Follow then starts
// there, else at the events stored from now on.
func (q Query) HasAfter() bool { return q.afterSet || q.After != 0 }

// FilterError is ParseQuery's refusal: the field, the rule it breaks and
// how to fix it.
type FilterError struct {
	Field string
	Rule  string
	Fix   string
}

func (e *FilterError) Error() string { return e.Field + ": " + e.Rule + "; " + e.Fix }

// Parameters of a query.
var params = []string{"client", "subject", "kind", "after", "limit"}

// maxFilter bounds a client or subject filter, in bytes.
const maxFilter = 256

// ParseQuery reads a listing's or a stream's query parameters: client,
// subject, kind (one or more kinds, comma-separated), after (an event id)
// and limit (1 to MaxLimit). An unknown parameter, one given twice, an
// unknown kind, an after that is not a non-negative integer and a limit out
// of range are refused with a FilterError. An empty value filters
// nothing.
func ParseQuery(v url.Values) (Query, error) {
	var q Query
	for name, vs := range v {
		if !slices.Contains(params, name) {
			field := truncate(name)
			if field == "" {
				field = "(a parameter without a name)"
			}
			return q, &FilterError{Field: field, Rule: "not a parameter of the events API",
				Fix: "use client, subject, kind, after or limit (docs/dashboard.md, \"Events\")"}
		}
		if len(vs) > 1 {
			return q, &FilterError{Field: name, Rule: "given more than once",
				Fix: "give it once; several kinds go in one kind=, comma-separated"}
		}
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"client", &q.ClientID}, {"subject", &q.Subject}} {
		s := v.Get(f.name)
		if len(s) > maxFilter {
			return q, &FilterError{Field: f.name, Rule: fmt.Sprintf("longer than %d bytes", maxFilter), Fix: "give the exact " + f.name + " id"}
		}
		*f.to = s
	}
	if ks := v.Get("kind"); ks != "" {
		for _, k := range strings.Split(ks, ",") {
			k = strings.TrimSpace(k)
			if !slices.Contains(Kinds, k) {
				return q, &FilterError{Field: "kind", Rule: "unknown kind " + strconv.Quote(truncate(k)),
					Fix: "use one or more of " + strings.Join(Kinds, ", ") + ", comma-separated"}
			}
			if !slices.Contains(q.Kinds, k) {
				q.Kinds = append(q.Kinds, k)
			}
		}
	}
	if a := v.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			return q, &FilterError{Field: "after", Rule: "not a non-negative integer: " + strconv.Quote(truncate(a)),
				Fix: "give the id of the last event seen (next_after of the previous page), or leave it out for the newest"}
		}
		q.After, q.afterSet = n, true
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxLimit {
			return q, &FilterError{Field: "limit", Rule: fmt.Sprintf("not an integer from 1 to %d: %s", MaxLimit, strconv.Quote(truncate(l))),
				Fix: fmt.Sprintf("give 1 to %d, or leave it out for %d", MaxLimit, DefaultLimit)}
		}
		q.Limit = n
	}
	return q, nil
}

// ParseLastEventID reads a stream's Last-Event-ID header (the HTML
// standard's server-sent events): an event id, as after.
func ParseLastEventID(h string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(h), 10, 64)
	if err != nil || n < 0 {
		return 0, &FilterError{Field: "Last-Event-ID", Rule: "not a non-negative integer: " + strconv.Quote(truncate(h)),
			Fix: "send the id of the last event received, as the stream wrote it"}
	}
	return n, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return value(s[:40]) + "…"
	}
	return value(s)
}
