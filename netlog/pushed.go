package netlog

import (
	"encoding/json"
	"net/url"
	"slices"
)

// maxPushed bounds the pushed requests kept for a flow that has not begun
// (IntoPushed): a request_uri lives 60 s (docs/fapi.md), so a few suffice;
// the oldest goes first.
const maxPushed = 32

// pushedEntry is a recorded pushed authorization request waiting for the
// flow its request_uri starts.
type pushedEntry struct {
	requestURI string
	entry      Entry
}

// addPushed keeps the entry of a pushed authorization request under the
// request_uri its answer gave (RFC 9126 section 2.2); an answer without
// one (a refusal) started nothing and is not kept.
func (l *Log) addPushed(x Exchange) {
	var answer struct {
		RequestURI string `json:"request_uri"`
	}
	if x.Status != 201 || json.Unmarshal(x.ResponseBody, &answer) != nil || answer.RequestURI == "" {
		return
	}
	e := record(x)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pushed = append(l.pushed, pushedEntry{requestURI: answer.RequestURI, entry: e})
	if len(l.pushed) > maxPushed {
		l.pushed = slices.Delete(l.pushed, 0, len(l.pushed)-maxPushed)
	}
}

// takePushedLocked removes and returns the entry of the pushed request a
// caught request u names by its request_uri.
func (l *Log) takePushedLocked(u *url.URL) (Entry, bool) {
	uri := u.Query().Get("request_uri")
	if uri == "" {
		return Entry{}, false
	}
	i := slices.IndexFunc(l.pushed, func(p pushedEntry) bool { return p.requestURI == uri })
	if i < 0 {
		return Entry{}, false
	}
	e := l.pushed[i].entry
	l.pushed = slices.Delete(l.pushed, i, i+1)
	return e, true
}

// SetPushed records, on the flow's caught request, the pushed request the
// service took for its request_uri (RFC 9126 section 4): read is the
// native-consent API's request member, redacted as every body is.
func (f *Flow) SetPushed(read json.RawMessage) {
	if f == nil || len(read) == 0 {
		return
	}
	text, ok := redactJSON(read)
	if !ok || len(text) > 4*maxBody {
		return
	}
	f.editAuthorize(func(a *Authorize) { a.Pushed = json.RawMessage(text) })
}
