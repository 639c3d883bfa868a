package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
)

// The audit events (docs/deploy.md, "Audit events"): one row per event,
// its id increasing in the order the events were stored, in the one
// database that every instance shares. Each event's JSON is kept whole
// (Body); the columns beside it are what a listing filters on.
//
// The table is bounded: AppendEvents deletes all but the newest keep rows
// whenever keep/10 rows (at least one) were added since it last did, so
// that a trim is one DELETE per many inserts, never one per insert.
const eventsMigration = `
CREATE TABLE audit_events (
	id        INTEGER PRIMARY KEY,  -- assigned by AppendEvents: max + 1, under the events lock
	at        INTEGER NOT NULL,     -- Unix microseconds
	instance  TEXT NOT NULL,
	kind      TEXT NOT NULL,
	client_id TEXT NOT NULL,
	subject   TEXT NOT NULL,
	body      TEXT NOT NULL         -- the event's JSON (package audit)
) WITHOUT ROWID;
`

// The table has no index but its primary key: it holds a few thousand
// rows, which a filtered listing reads newest first along the key in
// milliseconds, while every index would cost each insert a B-tree write.

// eventsLockKey is the transaction advisory lock of AppendEvents on
// PostgreSQL: the appends of every instance take it, so that ids are
// assigned and committed in the same order, and a reader that has seen id
// N never misses a later-committed event with a smaller id.
const eventsLockKey = 0x6d6865766e7473

// ChangedEvents is the Kind of a Change that says events were appended by
// another instance; Key is the id of the last one.
const ChangedEvents = "events"

// EventRecord is an audit event as stored.
type EventRecord struct {
	ID       int64 // assigned by AppendEvents
	At       int64 // Unix microseconds
	Instance string
	Kind     string
	ClientID string
	Subject  string
	Body     []byte // the event's JSON, without its id
}

// EventQuery selects events for ListEvents. Empty fields select all.
type EventQuery struct {
	ClientID string
	Subject  string
	Kinds    []string
	// After selects the events with a greater id, oldest first; zero (and
	// Newest) selects the newest Limit, returned oldest first.
	After int64
	// Newest, with After zero, asks for the newest Limit events.
	Newest bool
	Limit  int
}

// eventState is what the Store keeps for AppendEvents.
type eventState struct {
	mu        sync.Mutex
	sinceTrim int  // rows appended since the last trim
	trimmed   bool // a trim ran since Open
	inst      string
	instOnce  sync.Once
}

// Instance is this process's id among the instances of a shared
// database (the id its notifications carry), or a random id of this
// Store on SQLite.
func (s *Store) Instance() string {
	if s.coh.instance != "" {
		return s.coh.instance
	}
	s.events.instOnce.Do(func() {
		var id [8]byte
		rand.Read(id[:])
		s.events.inst = hex.EncodeToString(id[:])
	})
	return s.events.inst
}

// AppendEvents stores events in one transaction, gives each its id (in
// evs[i].ID), trims the table to the newest keep when due, and announces
// the last id to the other instances. On SQLite it shares the writer's
// group commit, whose failure isolation keeps a failed append from taking
// another write with it; on PostgreSQL it commits without waiting for the
// WAL flush, like flow state (a crash of the database may lose the last
// events, never a grant).
func (s *Store) AppendEvents(ctx context.Context, evs []EventRecord, keep int) error {
	if len(evs) == 0 {
		return nil
	}
	if keep < 1 {
		keep = 1
	}
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	slack := max(1, keep/10)
	trim := !s.events.trimmed || s.events.sinceTrim+len(evs) >= slack
	fn := func(tx *sql.Tx) error {
		if s.pg != nil {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(eventsLockKey)); err != nil {
				return wrap("append events", err)
			}
		}
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM audit_events`).Scan(&last); err != nil {
			return wrap("append events", err)
		}
		var q strings.Builder
		q.WriteString(`INSERT INTO audit_events (id, at, instance, kind, client_id, subject, body) VALUES `)
		args := make([]any, 0, 7*len(evs))
		for i := range evs {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			evs[i].ID = last + int64(i) + 1
			e := &evs[i]
			args = append(args, e.ID, e.At, e.Instance, e.Kind, e.ClientID, e.Subject, string(e.Body))
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return wrap("append events", err)
		}
		if trim {
			if _, err := tx.ExecContext(ctx, `DELETE FROM audit_events WHERE id <= ?`, last+int64(len(evs))-int64(keep)); err != nil {
				return wrap("trim events", err)
			}
		}
		return s.announce(tx, Change{Kind: ChangedEvents, Key: strconv.FormatInt(last+int64(len(evs)), 10)})
	}
	var err error
	if s.pg != nil {
		err = s.writePG(ctx, false, fn)
	} else {
		err = s.writeSQLite(ctx, fn)
	}
	if err != nil {
		return err
	}
	if trim {
		s.events.sinceTrim, s.events.trimmed = 0, true
	} else {
		s.events.sinceTrim += len(evs)
	}
	return nil
}

// maxEventLimit bounds what one ListEvents returns.
const maxEventLimit = 1000

// ListEvents returns the events q selects, oldest first.
func (s *Store) ListEvents(ctx context.Context, q EventQuery) ([]EventRecord, error) {
	limit := q.Limit
	if limit <= 0 || limit > maxEventLimit {
		limit = maxEventLimit
	}
	var where []string
	var args []any
	if q.ClientID != "" {
		where, args = append(where, "client_id = ?"), append(args, q.ClientID)
	}
	if q.Subject != "" {
		where, args = append(where, "subject = ?"), append(args, q.Subject)
	}
	if len(q.Kinds) > 0 {
		where = append(where, "kind IN (?"+strings.Repeat(", ?", len(q.Kinds)-1)+")")
		for _, k := range q.Kinds {
			args = append(args, k)
		}
	}
	newest := q.Newest && q.After == 0
	if !newest {
		where, args = append(where, "id > ?"), append(args, q.After)
	}
	query := `SELECT id, at, instance, kind, client_id, subject, body FROM audit_events`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if newest {
		query += " ORDER BY id DESC"
	} else {
		query += " ORDER BY id"
	}
	query += " LIMIT " + strconv.Itoa(limit)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap("list events", err)
	}
	defer rows.Close()
	var out []EventRecord
	for rows.Next() {
		var e EventRecord
		var body string
		if err := rows.Scan(&e.ID, &e.At, &e.Instance, &e.Kind, &e.ClientID, &e.Subject, &body); err != nil {
			return nil, wrap("list events", err)
		}
		e.Body = []byte(body)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list events", err)
	}
	if newest {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

// CountEvents is the number of events stored.
func (s *Store) CountEvents(ctx context.Context) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM audit_events`).Scan(&n)
	return n, wrap("count events", err)
}
