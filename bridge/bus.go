package bridge

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// Bus fans host events out to the automation clients, in order, without
// ever making the host wait: each subscriber has a bounded buffer, and a
// subscriber whose buffer is full is dropped rather than waited for.
// A nil *Bus discards events, so the host can publish unconditionally
// when automation is off.
type Bus struct {
	now func() time.Time

	mu   sync.Mutex // guards below
	seq  uint64
	subs map[*Subscription]struct{}
}

// NewBus returns a Bus; now stamps events (nil means time.Now).
func NewBus(now func() time.Time) *Bus {
	if now == nil {
		now = time.Now
	}
	return &Bus{now: now, subs: map[*Subscription]struct{}{}}
}

// Subscription is one subscriber's stream of encoded event envelopes.
type Subscription struct {
	bus *Bus
	ch  chan []byte
	// dropped is set, under bus.mu, when the bus dropped the subscriber
	// for falling behind; C is then closed.
	dropped bool
}

// C yields the envelopes in publication order; it is closed when the
// subscription ends (Close, or dropped for falling behind).
func (s *Subscription) C() <-chan []byte { return s.ch }

// Dropped reports whether the bus ended the subscription because its
// buffer was full.
func (s *Subscription) Dropped() bool {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.dropped
}

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	if _, ok := s.bus.subs[s]; ok {
		delete(s.bus.subs, s)
		close(s.ch)
	}
}

// Subscribe starts a subscription with room for buffer envelopes (at
// least 1).
func (b *Bus) Subscribe(buffer int) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	s := &Subscription{bus: b, ch: make(chan []byte, buffer)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Subscribers is the number of live subscriptions.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Replayed encodes e as an envelope for one subscriber, marked
// "replayed": an event of the host's state published before the
// subscriber came. It carries the last sequence number published, so it
// sorts before every event the subscriber receives after it.
func (b *Bus) Replayed(e Event) []byte {
	data, err := json.Marshal(e)
	if err != nil {
		data = []byte("null")
	}
	b.mu.Lock()
	seq := b.seq
	b.mu.Unlock()
	env := make([]byte, 0, len(data)+112)
	env = append(env, `{"type":"event","seq":`...)
	env = strconv.AppendUint(env, seq, 10)
	env = append(env, `,"replayed":true,"time":`...)
	env = strconv.AppendQuote(env, b.now().UTC().Format(time.RFC3339Nano))
	env = append(env, `,"kind":`...)
	env = strconv.AppendQuote(env, e.Kind())
	env = append(env, `,"data":`...)
	env = append(env, data...)
	env = append(env, '}')
	return env
}

// Publish sends e to every subscriber. It never blocks: a subscriber with
// a full buffer is dropped. Events get increasing sequence numbers, and
// numbering and sending happen under one lock, so every subscriber sees
// them in the same order.
func (b *Bus) Publish(e Event) {
	if b == nil {
		return
	}
	data, err := json.Marshal(e)
	if err != nil {
		// Event types are plain structs of this package; this is
		// unreachable unless one gains a field that cannot be encoded.
		data = []byte("null")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	env := make([]byte, 0, len(data)+96)
	env = append(env, `{"type":"event","seq":`...)
	env = strconv.AppendUint(env, b.seq, 10)
	env = append(env, `,"time":`...)
	env = strconv.AppendQuote(env, b.now().UTC().Format(time.RFC3339Nano))
	env = append(env, `,"kind":`...)
	env = strconv.AppendQuote(env, e.Kind())
	env = append(env, `,"data":`...)
	env = append(env, data...)
	env = append(env, '}')
	for s := range b.subs {
		select {
		case s.ch <- env:
		default:
			s.dropped = true
			delete(b.subs, s)
			close(s.ch)
		}
	}
}
