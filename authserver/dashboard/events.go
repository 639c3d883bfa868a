package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
)

// Error codes of the events API.
const (
	codeInvalidFilter     = "invalid_filter"
	codeEventsUnavailable = "events_unavailable"
	codeTooManyFollowers  = "too_many_followers"
)

// streamWriteTimeout bounds one write to a follower: a follower that
// stops reading is cut off, never waited on for ever.
const streamWriteTimeout = 30 * time.Second

// eventsPage is GET /api/events' answer.
type eventsPage struct {
	Events    []audit.Event `json:"events"`
	NextAfter int64         `json:"next_after"`
}

// filterError turns audit's refusal of a filter into the dashboard's.
func filterError(err error) error {
	var fe *audit.FilterError
	if errors.As(err, &fe) {
		return &Error{Code: codeInvalidFilter, Field: fe.Field, Message: fe.Rule + "; " + fe.Fix}
	}
	return err
}

// eventsError is the error of an events API call that could not run.
func eventsError(err error) error {
	switch {
	case errors.Is(err, audit.ErrNoStore):
		return &Error{Code: codeEventsUnavailable, Message: "this server keeps no audit events"}
	case errors.Is(err, audit.ErrTooManyFollowers):
		return &Error{Code: codeTooManyFollowers, Message: "too many streams follow the events at once; close one, or list with GET /api/events?after=ID"}
	}
	return err
}

// handleEvents lists audit events (operator).
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Events == nil {
		s.writeError(w, r, eventsError(audit.ErrNoStore))
		return
	}
	q, err := audit.ParseQuery(r.URL.Query())
	if err != nil {
		s.writeError(w, r, filterError(err))
		return
	}
	evs, err := s.cfg.Events.List(r.Context(), q)
	if err != nil {
		s.writeError(w, r, eventsError(err))
		return
	}
	page := eventsPage{Events: evs, NextAfter: q.After}
	if page.Events == nil {
		page.Events = []audit.Event{}
	}
	if n := len(evs); n > 0 {
		page.NextAfter = evs[n-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}

// handleEventsStream follows audit events as server-sent events
// (operator): from after, or Last-Event-ID, or the events stored from now
// on.
func (s *Server) handleEventsStream(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Events == nil {
		s.writeError(w, r, eventsError(audit.ErrNoStore))
		return
	}
	q, err := audit.ParseQuery(r.URL.Query())
	if err != nil {
		s.writeError(w, r, filterError(err))
		return
	}
	if h := r.Header.Get("Last-Event-ID"); h != "" && !q.HasAfter() {
		id, err := audit.ParseLastEventID(h)
		if err != nil {
			s.writeError(w, r, filterError(err))
			return
		}
		q = q.WithAfter(id)
	}
	rc := http.NewResponseController(w)
	started := false
	var buf bytes.Buffer
	write := func(b []byte) error {
		rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	start := func() error {
		if started {
			return nil
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	err = s.cfg.Events.Follow(r.Context(), q, func(evs []audit.Event) error {
		if err := start(); err != nil {
			return err
		}
		buf.Reset()
		if len(evs) == 0 {
			buf.WriteString(": keepalive\n\n")
		}
		for _, e := range evs {
			b, _ := json.Marshal(e)
			buf.WriteString("id: " + strconv.FormatInt(e.ID, 10) + "\nevent: audit\ndata: ")
			buf.Write(b)
			buf.WriteString("\n\n")
		}
		return write(buf.Bytes())
	})
	if err != nil && !started {
		s.writeError(w, r, eventsError(err))
	}
}
