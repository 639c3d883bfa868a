package bridge

import (
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/origin"
)

// syncView delivers on the caller's goroutine and hands the script to the
// benchmark, the shortest path a real host's Dispatch could take.
type syncView struct {
	doc Document
	out chan string
}

func (v *syncView) Deliver(deliver func(now Document) string) { v.out <- deliver(v.doc) }

// BenchmarkDispatchRoundTrip measures one getContext call from the page's
// JSON to the script that answers it: decode, gate (key, frame, origin at
// call time), the host call on its own goroutine, encode, gate at reply
// time.
func BenchmarkDispatchRoundTrip(b *testing.B) {
	doc := Document{URL: appURL, Seq: 1}
	view := &syncView{doc: doc, out: make(chan string, 1)}
	d, err := New(Config{Origin: origin.MustParse(appOrigin), Host: newMemHost(), View: view})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	msg := `{"v":1,"id":17,"key":"` + d.key + `","method":"getContext"}`
	frame := Frame{Document: doc, IsMainFrame: true}
	b.ReportAllocs()
	for b.Loop() {
		d.Receive(frame, msg)
		if s := <-view.out; !strings.Contains(s, `"ok":true`) {
			b.Fatalf("reply %s", s)
		}
	}
}

// BenchmarkDecode measures the strict decoder alone on an authorize
// request with authorization_details, the largest common message.
func BenchmarkDecode(b *testing.B) {
	msg := []byte(`{"v":1,"id":17,"key":"` + strings.Repeat("ab", 32) + `","method":"authorize","params":{"scope":"openid profile","org_id":"org-1","authorization_details":[{"type":"bank_account","actions":["read","read_movements"],"subject":{"type":"profile"},"selection":{"max":1}}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		r, e := decodeRequest(msg)
		if e != nil {
			b.Fatal(e)
		}
		if _, e := parseAuthorize(r.params); e != nil {
			b.Fatal(e)
		}
	}
}
