package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const (
	testManifest = `{"id":"com.example.notes","name":"Notes","start_url":"/app/","oauth":{"client_id":"notes","auth_url":"/auth/start"}}`
	testPublic   = `{"redirect_uris":["https://app.example/cb"],"allowed_origins":["https://app.example"],"client_type":"public"}`
	testConf     = `{"redirect_uris":["https://app.example/cb"],"allowed_origins":["https://app.example"],"client_type":"confidential"}`
)

func newResolver(t *testing.T, cfg Config) *Resolver {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCheckOffline covers the offline mode: files instead of servers, the
// same stages otherwise.
func TestCheckOffline(t *testing.T) {
	tests := []struct {
		name        string
		id          string
		manifestURL string
		manifest    string
		client      string
		insecure    bool
		wantStage   Stage // "" when accepted
		wantCode    string
		wantLoad    string
	}{
		{"public accepted", "com.example.notes", "https://app.example/miniapp.webmanifest", testManifest, testPublic, false, "", "", "https://app.example/app/"},
		{"confidential loads auth_url", "com.example.notes", "https://app.example/miniapp.webmanifest", testManifest, testConf, false, "", "", "https://app.example/auth/start"},
		{"manifest URL in a folder", "com.example.notes", "https://APP.example:443/v2/miniapp.webmanifest", strings.Replace(testManifest, `"/app/"`, `"app/"`, 1), testPublic, false, "", "", "https://app.example/v2/app/"},
		{"relative manifest URL", "com.example.notes", "/miniapp.webmanifest", testManifest, testPublic, false, StageOrigin, CodeOriginInvalid, ""},
		{"data manifest URL", "com.example.notes", "data:application/json,{}", testManifest, testPublic, false, StageOrigin, CodeOriginInvalid, ""},
		{"http manifest URL", "com.example.notes", "http://app.example/miniapp.webmanifest", testManifest, testPublic, false, StageOrigin, CodeOriginInsecure, ""},
		{"http manifest URL, insecure", "com.example.notes", "http://app.example/miniapp.webmanifest", testManifest, strings.ReplaceAll(testPublic, "https://app.example", "http://app.example"), true, "", "", "http://app.example/app/"},
		{"manifest not JSON", "com.example.notes", "https://app.example/m", "{", testPublic, false, StageParse, CodeJSONSyntax, ""},
		{"client not JSON", "com.example.notes", "https://app.example/m", testManifest, "", false, StageClient, CodeJSONSyntax, ""},
		{"id mismatch", "other", "https://app.example/m", testManifest, testPublic, false, StageIdentity, CodeIDMismatch, ""},
		{"manifest on another origin than allowed", "com.example.notes", "https://cdn.example/m", testManifest, testPublic, false, StageOrigins, CodeStartURLNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newResolver(t, Config{Insecure: tt.insecure})
			app, err := r.Check(context.Background(), tt.id, tt.manifestURL, []byte(tt.manifest), []byte(tt.client))
			if tt.wantStage == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if app.LoadURL.String() != tt.wantLoad {
					t.Errorf("load URL %s, want %s", app.LoadURL, tt.wantLoad)
				}
				rep := app.Report
				if !rep.Offline || rep.Outcome != OutcomeAccepted || rep.stage(StageDownload).Outcome != OutcomeSkipped {
					t.Errorf("report: offline %v, outcome %s, download %s", rep.Offline, rep.Outcome, rep.stage(StageDownload).Outcome)
				}
				return
			}
			var rej *Rejection
			if !errors.As(err, &rej) {
				t.Fatalf("err = %v, want a rejection", err)
			}
			if rej.Stage != tt.wantStage || rej.Code != tt.wantCode {
				t.Errorf("got %s/%s, want %s/%s (%v)", rej.Stage, rej.Code, tt.wantStage, tt.wantCode, err)
			}
		})
	}
}

func TestNewConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"zero", Config{}, ""},
		{"loopback http dashboard", Config{Dashboard: "http://127.0.0.1:8601"}, ""},
		{"https dashboard with path", Config{Dashboard: "https://dash.example/base/"}, ""},
		{"http dashboard elsewhere", Config{Dashboard: "http://dash.example"}, "plain http"},
		{"http dashboard elsewhere, insecure", Config{Dashboard: "http://dash.example", Insecure: true}, ""},
		{"dashboard with query", Config{Dashboard: "https://dash.example/?x"}, "query"},
		{"dashboard not a URL", Config{Dashboard: "dash.example"}, "not an absolute URL"},
		{"ftp dashboard", Config{Dashboard: "ftp://dash.example"}, "not http or https"},
		{"negative timeout", Config{Timeout: -1}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New err = %v, want one containing %q", err, tt.wantErr)
			case err != nil && !strings.HasPrefix(err.Error(), "resolver: "):
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		r := newResolver(t, Config{})
		if r.cfg.Timeout != DefaultTimeout || r.cfg.MaxBytes != DefaultMaxBytes || r.cfg.MaxRedirects != DefaultMaxRedirects || r.cfg.Now == nil {
			t.Errorf("defaults not applied: %+v", r.cfg)
		}
	})
	t.Run("resolve without dashboard", func(t *testing.T) {
		_, err := newResolver(t, Config{}).Resolve(context.Background(), "x", "https://app.example")
		if err == nil || !strings.Contains(err.Error(), "no dashboard") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestClientURL(t *testing.T) {
	tests := []struct {
		dashboard, clientID, want string
	}{
		{"https://dash.example", "notes", "https://dash.example/api/oauth/clients/notes"},
		{"https://dash.example/", "notes", "https://dash.example/api/oauth/clients/notes"},
		{"https://dash.example/base/", "a/b?c#d", "https://dash.example/base/api/oauth/clients/a%2Fb%3Fc%23d"},
		{"https://dash.example", "%2e%2e", "https://dash.example/api/oauth/clients/%252e%252e"},
		{"https://dash.example", `..\x`, "https://dash.example/api/oauth/clients/..%5Cx"},
	}
	for _, tt := range tests {
		t.Run(tt.clientID, func(t *testing.T) {
			u, err := newResolver(t, Config{Dashboard: tt.dashboard}).clientURL(tt.clientID)
			if err != nil {
				t.Fatal(err)
			}
			if u.String() != tt.want {
				t.Errorf("client URL %s, want %s", u, tt.want)
			}
		})
	}
}

// TestRequestHeaders checks what the resolver asks the servers for.
func TestRequestHeaders(t *testing.T) {
	app := newTestServer(t, ManifestPath, serverSpec{}, []byte(`{"id":"x","name":"n","start_url":"/","oauth":{"client_id":"c"}}`), 0)
	dash := newTestServer(t, "/api/oauth/clients/", serverSpec{}, []byte(`{"redirect_uris":[],"allowed_origins":["`+app.URL+`"],"client_type":"public"}`), 0)
	if _, err := newResolver(t, Config{Dashboard: dash.URL}).Resolve(context.Background(), "x", app.URL); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testServer{app, dash} {
		req := <-s.requests
		if req.Method != http.MethodGet || !strings.Contains(req.Header.Get("Accept"), "application/manifest+json") {
			t.Errorf("%s: %s with Accept %q", s.URL, req.Method, req.Header.Get("Accept"))
		}
	}
}

func TestMemberName(t *testing.T) {
	tests := map[string]string{
		"":                 "the document",
		"/oauth/client_id": "oauth.client_id",
		"/icons/0/sizes":   "icons[0].sizes",
		"/a~1b":            "a/b",
		"/weird\nname":     `weird\nname`,
	}
	for in, want := range tests {
		if got := memberName(in); got != want {
			t.Errorf("memberName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestResolveCanceledAndConcurrent: a canceled context is undecided, never a
// rejection; and one Resolver serves many goroutines at once.
func TestResolveCanceledAndConcurrent(t *testing.T) {
	app := newTestServer(t, ManifestPath, serverSpec{}, []byte(`{"id":"x","name":"n","start_url":"/","oauth":{"client_id":"c"}}`), 0)
	dash := newTestServer(t, "/api/oauth/clients/", serverSpec{}, nil, 0)
	dash.body = []byte(`{"redirect_uris":[],"allowed_origins":["` + app.URL + `"],"client_type":"public"}`)
	r := newResolver(t, Config{Dashboard: dash.URL})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Resolve(ctx, "x", app.URL)
	var und *Undecided
	if !errors.As(err, &und) || und.Code != CodeCanceled || und.Stage != StageDownload {
		t.Fatalf("canceled resolve: %v", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("an Undecided wraps its cause: %v", err)
	}

	errs := make(chan error, 16)
	for range 16 {
		go func() {
			_, err := r.Resolve(context.Background(), "x", app.URL)
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestErrorStrings(t *testing.T) {
	rej := &Rejection{Reason: Reason{Stage: StageSchema, Code: "schema-required", Pointer: "/id", Message: "m"}}
	rej.Reasons = []Reason{rej.Reason, rej.Reason}
	if got, want := rej.Error(), "resolver: rejected: schema/schema-required at /id: m (and 1 more)"; got != want {
		t.Errorf("Rejection.Error() = %q, want %q", got, want)
	}
	und := &Undecided{Stage: StageClient, Code: CodeTimeout, Message: "slow"}
	if got, want := und.Error(), "resolver: could not decide (client/timeout): slow"; got != want {
		t.Errorf("Undecided.Error() = %q, want %q", got, want)
	}
}

// TestCheckManifest covers the offline check without a client
// configuration: what runs, what is skipped, and that the skipped checks are
// named.
func TestCheckManifest(t *testing.T) {
	tests := []struct {
		name, id, manifestURL, manifest string
		wantOutcome                     string
		wantCodes                       []string
		wantSkipped                     []Stage
	}{
		// origins ran its same-origin rules only: it stays skipped, and says so.
		{"passes", "com.example.notes", "https://app.example/miniapp.webmanifest", testManifest, OutcomePassed, nil,
			[]Stage{StageDownload, StageClient, StageOrigins}},
		{"passes without a manifest URL", "com.example.notes", "", testManifest, OutcomePassed, nil,
			[]Stage{StageOrigin, StageDownload, StageClient, StageOrigins}},
		{"schema and identity and origins together", "other", "https://app.example/m",
			`{"id":"com.example.notes","name":"","start_url":"https://evil.example/","oauth":{"client_id":"notes"}}`,
			OutcomeRejected, []string{codeSchemaMinLength, CodeIDMismatch, CodeStartURLCrossOrigin}, []Stage{StageDownload, StageClient}},
		{"not JSON", "com.example.notes", "", "{", OutcomeRejected, []string{CodeJSONSyntax},
			[]Stage{StageOrigin, StageDownload, StageSchema, StageIdentity, StageClient, StageOrigins}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := newResolver(t, Config{}).CheckManifest(context.Background(), tt.id, tt.manifestURL, []byte(tt.manifest))
			if rep.Outcome != tt.wantOutcome {
				t.Fatalf("outcome %s (%v), want %s", rep.Outcome, err, tt.wantOutcome)
			}
			var rej *Rejection
			if (tt.wantOutcome == OutcomeRejected) != errors.As(err, &rej) {
				t.Fatalf("err = %v", err)
			}
			var codes []string
			for _, r := range rep.Reasons {
				codes = append(codes, r.Code)
			}
			if strings.Join(codes, " ") != strings.Join(tt.wantCodes, " ") {
				t.Errorf("codes %q, want %q", codes, tt.wantCodes)
			}
			var skipped []Stage
			for _, s := range rep.Stages {
				if s.Outcome == OutcomeSkipped {
					skipped = append(skipped, s.Stage)
					if len(s.Notes) == 0 {
						t.Errorf("stage %s skipped without saying why", s.Stage)
					}
				}
			}
			if fmt.Sprint(skipped) != fmt.Sprint(tt.wantSkipped) {
				t.Errorf("skipped %v, want %v", skipped, tt.wantSkipped)
			}
			if rep.Miniapp != nil {
				t.Errorf("a manifest-only check summarises a Miniapp: %+v", rep.Miniapp)
			}
		})
	}
}

// codeSchemaMinLength is the code of a minLength violation.
const codeSchemaMinLength = "schema-min-length"

// TestMembersAtMatchSchemas keeps the member lists of the hints in step
// with the schemas under assets/schemas/resolver.
func TestMembersAtMatchSchemas(t *testing.T) {
	read := func(name string) map[string]any {
		b, err := os.ReadFile(filepath.Join("..", "assets", "schemas", "resolver", name))
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	names := func(schema any) []string {
		var out []string
		for k := range schema.(map[string]any)["properties"].(map[string]any) {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	sorted := func(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }
	m, c := read("manifest.json"), read("client.json")
	props := m["properties"].(map[string]any)
	for _, tc := range []struct {
		doc, ptr string
		schema   any
	}{
		{"manifest", "", m},
		{"manifest", "/oauth", props["oauth"]},
		{"manifest", "/icons/0", props["icons"].(map[string]any)["items"]},
		{"client configuration", "", c},
	} {
		if got, want := sorted(membersAt(tc.doc, tc.ptr)), names(tc.schema); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("membersAt(%s, %q) = %v, the schema has %v", tc.doc, tc.ptr, got, want)
		}
	}
}

// TestJSONReasonsSayWhereAndHow: a manifest the strict reader refuses gets
// a reason that names the member (pointer and readable name), the rule and
// where in the text, and a hint that says how to fix it; the stages it
// stops say why they did not run.
func TestJSONReasonsSayWhereAndHow(t *testing.T) {
	tests := []struct {
		name, manifest               string
		code, pointer, message, hint string
		note                         string
	}{
		{"member twice", "{\"id\": \"com.example.notes\", \"name\": \"Notes\",\n \"oauth\": {\"client_id\": \"a\",\n   \"client_id\": \"b\"}, \"start_url\": \"/\"}",
			CodeJSONDuplicate, "/oauth/client_id",
			"the manifest names the member oauth.client_id twice (the second at line 3, column 4)",
			`keep one "client_id" in oauth and remove the other: readers of JSON disagree on which of two members of one name counts, so the host reads neither`,
			"the manifest names a member twice"},
		{"top-level member twice", `{"id": "com.example.notes", "id": "com.example.other"}`,
			CodeJSONDuplicate, "/id",
			"the manifest names the member id twice (the second at line 1, column 29)",
			`keep one "id" in the manifest and remove the other: readers of JSON disagree on which of two members of one name counts, so the host reads neither`,
			"the manifest names a member twice"},
		{"long number", `{"icons": [{"src": "/a.png", "sizes": 1e1000}]}`,
			CodeJSONSyntax, "/icons/0/sizes",
			"the manifest has a number the host does not read at icons[0].sizes: number with an exponent of more than 3 digits, at line 1, column 39",
			"write icons[0].sizes with at most 32 characters and an exponent of at most 3 digits",
			"the manifest is not JSON"},
		{"deep", `{"name": ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
			CodeJSONSyntax, "/name" + strings.Repeat("/0", 31),
			"the manifest nests arrays and objects deeper than the host reads at name" + strings.Repeat("[0]", 31) + ": nesting deeper than 32 levels",
			"flatten name" + strings.Repeat("[0]", 31) + ": the host reads at most 32 levels of arrays and objects",
			"the manifest is not JSON"},
		{"syntax", "{\"id\": \"x\",\n \"name\" \"Notes\"}",
			CodeJSONSyntax, "",
			"the manifest is not JSON: expected ':' after a member name at line 2, column 9",
			"check the manifest with a JSON validator; comments and trailing commas are not JSON",
			"the manifest is not JSON"},
		{"cut short", `{"id": "x", "icons": [`,
			CodeJSONSyntax, "",
			"the manifest is cut short: unexpected end of JSON, at line 1, column 23",
			"check the manifest with a JSON validator; comments and trailing commas are not JSON",
			"the manifest is not JSON"},
		{"empty", " \n",
			CodeJSONSyntax, "", "the manifest is empty",
			"check the manifest with a JSON validator; comments and trailing commas are not JSON",
			"the manifest is not JSON"},
		{"trailing", `{"id": "x"} {}`,
			CodeJSONSyntax, "", "the manifest has data after its JSON value, at line 1, column 13",
			"serve one JSON object as the manifest, and nothing after it",
			"the manifest is not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := newResolver(t, Config{}).CheckManifest(context.Background(), "com.example.notes", "https://app.example/miniapp.webmanifest", []byte(tt.manifest))
			var rej *Rejection
			if !errors.As(err, &rej) || len(rep.Reasons) != 1 {
				t.Fatalf("err %v, reasons %+v; want one reason", err, rep.Reasons)
			}
			r := rep.Reasons[0]
			want := Reason{Stage: StageParse, Code: tt.code, Pointer: tt.pointer, Message: tt.message, Hint: tt.hint}
			if r != want {
				t.Fatalf("reason\n got %+v\nwant %+v", r, want)
			}
			for _, s := range rep.Stages {
				if s.Stage == StageSchema && (s.Outcome != OutcomeSkipped || len(s.Notes) == 0 || !strings.Contains(s.Notes[0], tt.note)) {
					t.Errorf("schema stage %+v, want skipped because %q", s, tt.note)
				}
			}
		})
	}
}
