package resolver

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestTextShowsControlsAsEscapes: a manifest's values reach the text
// report (as `miniapp-host resolve` prints it) with their control
// characters escaped: an OSC 52 sequence in the name (which writes the
// clipboard in many terminals), a line break that would forge a line of
// the report, a bidirectional override. Nothing the manifest wrote reaches
// the terminal as a control.
func TestTextShowsControlsAsEscapes(t *testing.T) {
	r := newResolver(t, Config{})
	hostile := "Notes\x1b]52;c;ZXZpbA==\x07\naccepted: forged\u202e"
	manifest := strings.Replace(testManifest, `"name":"Notes"`, `"name":"Notes\u001b]52;c;ZXZpbA==\u0007\naccepted: forged\u202e"`, 1)
	app, err := r.Check(context.Background(), "com.example.notes", "https://app.example/miniapp.webmanifest", []byte(manifest), []byte(testPublic))
	if err != nil {
		t.Fatal(err)
	}
	if got := app.Report.Miniapp.Name; got != hostile {
		t.Fatalf("the name read is %q, want the manifest's %q", got, hostile)
	}
	var b strings.Builder
	app.Report.WriteText(&b)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u202e") || strings.Contains(out, "\naccepted: forged") {
		t.Fatalf("the report carries the manifest's controls:\n%q", out)
	}
	if !strings.Contains(out, `accepted: Notes\x1b]52;c;ZXZpbA==\a\naccepted: forged\u202e (com.example.notes)`) {
		t.Errorf("the report does not show the name with its controls escaped:\n%s", out)
	}

	// A rejection whose message quotes the manifest: the reason's lines too.
	bad := strings.Replace(testManifest, `"start_url":"/app/"`, `"start_url":"/app/","display":"x\u001b[2J"`, 1)
	_, err = r.Check(context.Background(), "com.example.notes", "https://app.example/miniapp.webmanifest", []byte(bad), []byte(testPublic))
	var rej *Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("a display of another value: %v, want a rejection", err)
	}
	b.Reset()
	rej.Report.WriteText(&b)
	if strings.Contains(b.String(), "\x1b") || strings.Contains(rej.Reason.String(), "\x1b") {
		t.Fatalf("the rejection's text carries an ESC:\n%q", b.String())
	}
}
