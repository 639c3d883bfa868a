package catalog

import (
	"sync"
	"sync/atomic"
)

// Bounds of the verdict memo: how many detail texts it keeps, how many
// bytes (texts and verdicts, estimated), and the longest text it keeps a
// verdict for.
const (
	maxVerdicts     = 4096
	maxVerdictBytes = 4 << 20
	maxVerdictKey   = 8 << 10
	// maxVerdictViolations: verdicts with more violations are not kept.
	maxVerdictViolations = 8
)

// verdicts memoises the violations of detail texts for one catalog. A
// catalog never changes, so a verdict never goes stale; when the memo is
// full it starts again empty, which bounds its memory without bookkeeping.
// It is safe for concurrent use and read-mostly, hence sync.Map.
type verdicts struct {
	m     atomic.Pointer[sync.Map]
	n     atomic.Int64 // entries
	bytes atomic.Int64 // estimated bytes of the entries
}

func newVerdicts() *verdicts {
	v := &verdicts{}
	v.m.Store(new(sync.Map))
	return v
}

func (v *verdicts) get(text []byte) ([]Violation, bool) {
	x, ok := v.m.Load().Load(string(text))
	if !ok {
		return nil, false
	}
	return x.([]Violation), true
}

func (v *verdicts) put(text []byte, vs []Violation) {
	// Valid details and near-misses repeat; a detail with many violations
	// is a mistake or an attack, and its verdict is not worth the memory.
	if len(text) > maxVerdictKey || len(vs) > maxVerdictViolations {
		return
	}
	size := int64(64 + 2*len(text))
	for _, x := range vs {
		size += 96 + int64(len(x.Pointer)+len(x.Code)+len(x.Message)+len(x.OAuthError))
	}
	if v.n.Add(1) > maxVerdicts || v.bytes.Add(size) > maxVerdictBytes {
		v.m.Store(new(sync.Map))
		v.n.Store(1)
		v.bytes.Store(size)
	}
	v.m.Load().Store(string(text), vs)
}
