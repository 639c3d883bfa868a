package oauth

import (
	"container/list"
	"time"
)

// expirySet holds entries by id until their deadline, each charged to
// quota keys (a client, a source address, a host). Entries sit in a list
// in the order they were added; every entry of one set has the same
// lifetime, so that order is deadline order and expiry only ever looks at
// the front: admission, lookup, removal and the expiry of each entry are
// O(1), never a scan. (An entry returned with put keeps its old deadline
// at the back; it may then leave a little after its deadline, when those
// before it do, and lookups still refuse it once expired.) Not safe for
// concurrent use: its owner holds a mutex.
type expirySet[V any] struct {
	byID  map[string]*list.Element
	order list.List      // of *expiryEntry[V], oldest first
	used  map[string]int // live entries per quota key
}

type expiryEntry[V any] struct {
	id      string
	keys    []string
	expires time.Time
	v       V
}

func newExpirySet[V any]() *expirySet[V] {
	return &expirySet[V]{byID: map[string]*list.Element{}, used: map[string]int{}}
}

// expire removes the entries whose deadline has passed, from the front.
func (s *expirySet[V]) expire(now time.Time) {
	for {
		f := s.order.Front()
		if f == nil || !now.After(f.Value.(*expiryEntry[V]).expires) {
			return
		}
		s.drop(f)
	}
}

// full returns the first key whose quota is used up, with its limit.
func (s *expirySet[V]) full(keys []string, limits []int) (string, int, bool) {
	for i, k := range keys {
		if s.used[k] >= limits[i] {
			return k, limits[i], true
		}
	}
	return "", 0, false
}

// add stores v under id until expires, charged to keys.
func (s *expirySet[V]) add(id string, keys []string, expires time.Time, v V) {
	if old := s.byID[id]; old != nil {
		s.drop(old)
	}
	s.byID[id] = s.order.PushBack(&expiryEntry[V]{id: id, keys: keys, expires: expires, v: v})
	for _, k := range keys {
		s.used[k]++
	}
}

// get returns the entry of id when it has not expired.
func (s *expirySet[V]) get(id string, now time.Time) (*expiryEntry[V], bool) {
	el := s.byID[id]
	if el == nil {
		return nil, false
	}
	e := el.Value.(*expiryEntry[V])
	if now.After(e.expires) {
		return nil, false
	}
	return e, true
}

// remove deletes id and returns its entry, expired or not.
func (s *expirySet[V]) remove(id string) (*expiryEntry[V], bool) {
	el := s.byID[id]
	if el == nil {
		return nil, false
	}
	e := el.Value.(*expiryEntry[V])
	s.drop(el)
	return e, true
}

func (s *expirySet[V]) drop(el *list.Element) {
	e := s.order.Remove(el).(*expiryEntry[V])
	delete(s.byID, e.id)
	for _, k := range e.keys {
		if s.used[k]--; s.used[k] <= 0 {
			delete(s.used, k)
		}
	}
}

// len is the number of entries held, expired ones not yet removed included.
func (s *expirySet[V]) len() int { return len(s.byID) }
