package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

func eventRec(i int) EventRecord {
	return EventRecord{At: int64(i), Instance: "i", Kind: "token.issued", ClientID: fmt.Sprintf("c%d", i%3), Subject: "s", Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}
}

// TestEventsBounded: past keep, the table holds the newest keep events
// (and at most keep/10 more between trims), ids keep increasing, and a
// listing returns the newest, oldest first.
func TestEventsBounded(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	const keep = 20
	var last int64
	for i := 1; i <= 75; i++ {
		evs := []EventRecord{eventRec(i)}
		if err := s.AppendEvents(ctx, evs, keep); err != nil {
			t.Fatal(err)
		}
		if evs[0].ID <= last {
			t.Fatalf("id %d after %d", evs[0].ID, last)
		}
		last = evs[0].ID
		if n, _ := s.CountEvents(ctx); n > keep+keep/10 {
			t.Fatalf("after %d appends: %d rows, want at most %d", i, n, keep+keep/10)
		}
	}
	// One more batch that is due a trim leaves exactly keep.
	batch := make([]EventRecord, keep/10)
	for i := range batch {
		batch[i] = eventRec(76 + i)
	}
	if err := s.AppendEvents(ctx, batch, keep); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.CountEvents(ctx); n != keep {
		t.Fatalf("after a due trim: %d rows, want %d", n, keep)
	}
	evs, err := s.ListEvents(ctx, EventQuery{Newest: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != keep || evs[0].ID != batch[len(batch)-1].ID-keep+1 || evs[keep-1].ID != batch[len(batch)-1].ID {
		t.Fatalf("kept ids %d..%d (%d), want the newest %d ending at %d", evs[0].ID, evs[len(evs)-1].ID, len(evs), keep, batch[len(batch)-1].ID)
	}
	// Filters and after.
	got, _ := s.ListEvents(ctx, EventQuery{ClientID: "c1", After: evs[0].ID, Limit: 1000})
	for _, e := range got {
		if e.ClientID != "c1" || e.ID <= evs[0].ID {
			t.Fatalf("filtered: %+v", e)
		}
	}
	if len(got) == 0 {
		t.Fatal("no event of c1")
	}
	if got, _ := s.ListEvents(ctx, EventQuery{Kinds: []string{"signin.started"}, Limit: 10}); len(got) != 0 {
		t.Fatalf("kind filter: %+v", got)
	}
}

// TestEventsConcurrentOrder: appends at once from many goroutines get
// distinct ids, and every id a reader has seen is followed only by
// greater ones (no event commits behind a reader's position).
func TestEventsConcurrentOrder(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				if err := s.AppendEvents(ctx, []EventRecord{eventRec(g*100 + i), eventRec(g*100 + i + 50)}, 10_000); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	evs, err := s.ListEvents(ctx, EventQuery{After: 0, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 160 {
		t.Fatalf("%d events, want 160", len(evs))
	}
	for i, e := range evs {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d has id %d: ids must be 1..160 without a gap or a repeat", i, e.ID)
		}
	}
}
