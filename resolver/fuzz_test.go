package resolver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

// FuzzManifest feeds arbitrary manifests (and client configurations) to the
// offline check: it must never panic, must answer either a Miniapp or a
// Rejection with at least one reason, and an accepted Miniapp must load a
// URL on the manifest's origin that allowed_origins lists.
func FuzzManifest(f *testing.F) {
	for _, c := range loadCorpus(f) {
		if c.ManifestRaw != nil {
			f.Add([]byte(*c.ManifestRaw), []byte(c.Client))
		} else {
			f.Add([]byte(c.Manifest), []byte(c.Client))
		}
	}
	f.Add([]byte(testManifest), []byte(testConf))
	f.Add([]byte(`{"id":"com.example.notes","name":"n","start_url":"\\\\evil","oauth":{"client_id":"c"}}`), []byte(testPublic))
	r, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	const manifestURL = "http://127.0.0.1:8080/miniapp.webmanifest"
	f.Fuzz(func(t *testing.T, manifest, client []byte) {
		app, err := r.Check(context.Background(), "com.example.notes", manifestURL, manifest, client)
		if err != nil {
			var rej *Rejection
			if !errors.As(err, &rej) {
				t.Fatalf("error %T %v is not a Rejection", err, err)
			}
			if len(rej.Reasons) == 0 || rej.Report.Outcome != OutcomeRejected {
				t.Fatalf("rejection without reasons: %+v", rej)
			}
			if _, err := json.Marshal(rej.Report); err != nil {
				t.Fatalf("report does not marshal: %v", err)
			}
			return
		}
		mo := origin.MustParse("http://127.0.0.1:8080")
		if !origin.Of(app.LoadURL).Equal(mo) || !origin.InList(origin.Of(app.LoadURL), app.Client.AllowedOrigins) {
			t.Fatalf("accepted a Miniapp that loads %s (allowed %q)", app.LoadURL, app.Client.AllowedOrigins)
		}
		if app.Client.Confidential() && app.AuthURL == nil {
			t.Fatal("accepted a confidential client without auth_url")
		}
	})
}

// FuzzCheckManifest feeds arbitrary manifests to the manifest-only check
// (no client configuration), with and without a manifest URL: it must never
// panic, never accept (only pass or reject), reject only with reasons, and
// say why of every stage it skipped.
func FuzzCheckManifest(f *testing.F) {
	for _, c := range loadCorpus(f) {
		if c.ManifestRaw != nil {
			f.Add([]byte(*c.ManifestRaw), true)
		} else {
			f.Add([]byte(c.Manifest), false)
		}
	}
	f.Add([]byte(testManifest), true)
	r, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, manifest []byte, withURL bool) {
		manifestURL := ""
		if withURL {
			manifestURL = "https://app.example/miniapp.webmanifest"
		}
		rep, err := r.CheckManifest(context.Background(), "com.example.notes", manifestURL, manifest)
		var rej *Rejection
		switch {
		case err != nil && !errors.As(err, &rej):
			t.Fatalf("error %T %v is not a Rejection", err, err)
		case err != nil && (len(rej.Reasons) == 0 || rep.Outcome != OutcomeRejected):
			t.Fatalf("rejection without reasons: %+v", rej)
		case err == nil && rep.Outcome != OutcomePassed:
			t.Fatalf("outcome %s without a client configuration", rep.Outcome)
		}
		for _, s := range rep.Stages {
			if s.Outcome == OutcomeSkipped && len(s.Notes) == 0 {
				t.Fatalf("stage %s skipped without saying why", s.Stage)
			}
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("report does not marshal: %v", err)
		}
		// Only what the strict reader reads gets past the parse stage, and
		// a member named twice is reported where it is.
		_, strictErr := strictjson.Decode(bytes.TrimPrefix(manifest, utf8BOM), strictjson.Limits{})
		for _, s := range rep.Stages {
			if s.Stage == StageSchema && strictErr != nil && s.Outcome != OutcomeSkipped {
				t.Fatalf("the strict reader refuses the manifest (%v), yet the schema stage is %s", strictErr, s.Outcome)
			}
		}
		for _, r := range rep.Reasons {
			if r.Code == CodeJSONDuplicate {
				var se *strictjson.SyntaxError
				if !errors.As(strictErr, &se) || se.Kind != strictjson.KindDuplicate || r.Pointer != se.Pointer || r.Pointer == "" {
					t.Fatalf("duplicate member reason %+v for strict reader error %v", r, strictErr)
				}
			}
		}
		if err == nil && strictErr != nil {
			t.Fatalf("passed a manifest the strict reader refuses: %v", strictErr)
		}
	})
}
