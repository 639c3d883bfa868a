package resolver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/miniapp-host/miniapp-host/jsonpointer"

	"github.com/miniapp-host/miniapp-host/assets"
)

// Schema files in assets.FS and their $id.
const (
	manifestSchemaPath = "schemas/resolver/manifest.json"
	clientSchemaPath   = "schemas/resolver/client.json"
	manifestSchemaID   = "https://schemas.miniapp-host.invalid/resolver/manifest.json"
	clientSchemaID     = "https://schemas.miniapp-host.invalid/resolver/client.json"
)

// schemas are the two draft-07 schemas, compiled once per process from the
// embedded files.
type schemas struct {
	manifest, client *jsonschema.Schema
}

var compiledSchemas = sync.OnceValues(func() (*schemas, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	// No loader: the schemas are embedded and may not reach anything else.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	out := &schemas{}
	for _, s := range []struct{ path, id string }{{manifestSchemaPath, manifestSchemaID}, {clientSchemaPath, clientSchemaID}} {
		b, err := assets.FS.ReadFile(s.path)
		if err != nil {
			return nil, fmt.Errorf("resolver: reading schema: %w", err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err == nil {
			err = c.AddResource(s.id, doc)
		}
		if err != nil {
			return nil, fmt.Errorf("resolver: schema %s: %w", s.path, err)
		}
	}
	m, err := c.Compile(manifestSchemaID)
	if err != nil {
		return nil, fmt.Errorf("resolver: compiling %s: %w", manifestSchemaPath, err)
	}
	cl, err := c.Compile(clientSchemaID)
	if err != nil {
		return nil, fmt.Errorf("resolver: compiling %s: %w", clientSchemaPath, err)
	}
	out.manifest, out.client = m, cl
	return out, nil
})

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte("\xef\xbb\xbf")

// decodeJSON parses exactly one JSON value, with numbers kept as
// json.Number for the schema validator. A UTF-8 byte order mark is skipped,
// as browsers do for manifests.
func decodeJSON(stage Stage, what string, data []byte) (any, *Reason) {
	data = bytes.TrimPrefix(data, utf8BOM)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			off := dec.InputOffset()
			line, col := lineCol(data, off)
			return nil, &Reason{Stage: stage, Code: CodeJSONSyntax,
				Message: fmt.Sprintf("the %s has data after its JSON value, at line %d, column %d", what, line, col),
				Hint:    fmt.Sprintf("serve one JSON object as the %s, and nothing after it", what)}
		}
		return v, nil
	}
	msg := fmt.Sprintf("the %s is not JSON: %v", what, err)
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		msg = fmt.Sprintf("the %s is empty", what)
	case errors.As(err, &se):
		line, col := lineCol(data, se.Offset)
		msg = fmt.Sprintf("the %s is not JSON: %v at line %d, column %d", what, se, line, col)
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = fmt.Sprintf("the %s is cut short: unexpected end of JSON", what)
	}
	return nil, &Reason{Stage: stage, Code: CodeJSONSyntax, Message: msg,
		Hint: fmt.Sprintf("check the %s with a JSON validator; comments and trailing commas are not JSON", what)}
}

func lineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// schemaReasons validates v and lists every violation, sorted by pointer and
// code so that reports are stable.
func schemaReasons(s *jsonschema.Schema, stage Stage, doc string, v any) []Reason {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Reason{{Stage: stage, Code: "schema", Message: err.Error()}}
	}
	var out []Reason
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, leafReasons(e, stage, doc)...)
	}
	walk(ve)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pointer != out[j].Pointer {
			return out[i].Pointer < out[j].Pointer
		}
		if out[i].Code != out[j].Code {
			return out[i].Code < out[j].Code
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// leafReasons turns one violation into reasons. A required or
// additionalProperties violation becomes one reason per member, pointing at
// the member; the names come from the validator's typed error kinds, never
// from message text.
func leafReasons(e *jsonschema.ValidationError, stage Stage, doc string) []Reason {
	kp := e.ErrorKind.KeywordPath()
	kw := ""
	if len(kp) > 0 {
		kw = kp[len(kp)-1]
	}
	if _, ok := e.ErrorKind.(*kind.Not); ok {
		kw = "not" // the library gives "not" no keyword path
	}
	code := "schema-" + kebab(kw)
	at := jsonpointer.FromTokens(e.InstanceLocation)
	var names []string
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		names = append(names, k.Missing...)
	case *kind.AdditionalProperties:
		names = append(names, k.Properties...)
		sort.Strings(names)
	}
	if len(names) > 0 {
		out := make([]Reason, 0, len(names))
		for _, name := range names {
			r := Reason{Stage: stage, Code: code, Pointer: at + "/" + jsonpointer.Escape(name)}
			if kw == "required" {
				r.Message = fmt.Sprintf("the %s lacks the required member %s", doc, memberName(r.Pointer))
				r.Hint = requiredHint(doc)
			} else {
				r.Message = fmt.Sprintf("the %s has the unknown member %s", doc, memberName(r.Pointer))
				r.Hint = "remove it, or fix its spelling: only the members of spec " + specSection(doc) + " are allowed, in snake_case (start_url, short_name, client_id)"
			}
			out = append(out, r)
		}
		return out
	}
	return []Reason{{Stage: stage, Code: code, Pointer: at,
		Message: fmt.Sprintf("%s: %s", memberName(at), e.ErrorKind.LocalizedString(english)),
		Hint:    keywordHint(kw, at)}}
}

// english prints the validator's messages.
var english = message.NewPrinter(language.English)

func specSection(doc string) string {
	if doc == "manifest" {
		return "2.9"
	}
	return "2.10"
}

func requiredHint(doc string) string {
	if doc == "manifest" {
		return "add it: a manifest needs id, name, start_url and oauth.client_id (spec 2.9)"
	}
	return "the dashboard must answer redirect_uris, allowed_origins and client_type (spec 2.10)"
}

func keywordHint(kw, at string) string {
	switch {
	case kw == "type":
		return "give the member the JSON type the schema asks for (strings for URLs and names, an array for icons)"
	case kw == "enum" && strings.HasSuffix(at, "/display"):
		return `use one of "fullscreen", "standalone", "minimal-ui", "browser"`
	case kw == "enum" && strings.HasSuffix(at, "/client_type"):
		return `the dashboard must answer "confidential" or "public"`
	case kw == "enum":
		return "use one of the values the schema allows"
	case kw == "minLength":
		return "give the member a non-empty value"
	case kw == "maxLength" || kw == "maxItems":
		return "shorten it; the host refuses larger values"
	case kw == "pattern" && strings.HasSuffix(at, "/sizes"):
		return `write sizes as space-separated WIDTHxHEIGHT tokens or "any", e.g. "192x192 512x512"`
	case kw == "pattern" && strings.HasSuffix(at, "/purpose"):
		return `use space-separated purposes from "any", "maskable", "monochrome"`
	case kw == "pattern" && strings.HasSuffix(at, "/type"):
		return `use a MIME type such as "image/png"`
	case kw == "not" && strings.HasSuffix(at, "/client_id"):
		return `"." and ".." cannot be client ids: they would change the dashboard URL's path`
	}
	return "see assets/schemas/resolver for what the schema allows"
}

// memberName turns a JSON pointer into a readable member path: /oauth/client_id -> oauth.client_id.
func memberName(ptr string) string {
	if ptr == "" {
		return "the document"
	}
	return jsonpointer.Readable(ptr)
}

// kebab turns a JSON Schema keyword into the tail of a code: minLength -> min-length.
func kebab(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
