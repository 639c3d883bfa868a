package resolver

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
	"github.com/miniapp-host/miniapp-host/strictjson"

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

// decodeJSON parses exactly one JSON value with the project's strict reader
// (package strictjson), numbers kept as json.Number for the schema
// validator: a member named twice is refused (two readers of the manifest
// could otherwise see two different documents, RFC 8259 §4), and numbers
// and nesting are bounded as for every JSON from outside. A UTF-8 byte
// order mark is skipped, as browsers do for manifests.
func decodeJSON(stage Stage, what string, data []byte) (any, *Reason) {
	data = bytes.TrimPrefix(data, utf8BOM)
	v, err := strictjson.Decode(data, strictjson.Limits{})
	if err == nil {
		return v, nil
	}
	r := &Reason{Stage: stage, Code: CodeJSONSyntax,
		Hint: fmt.Sprintf("check the %s with a JSON validator; comments and trailing commas are not JSON", what)}
	var se *strictjson.SyntaxError
	if !errors.As(err, &se) {
		r.Message = fmt.Sprintf("the %s is not JSON: %v", what, err)
		return nil, r
	}
	line, col := lineCol(data, int64(se.Offset))
	switch se.Kind {
	case strictjson.KindDuplicate:
		parent := se.Pointer[:strings.LastIndexByte(se.Pointer, '/')]
		r.Code, r.Pointer = CodeJSONDuplicate, se.Pointer
		r.Message = fmt.Sprintf("the %s names the member %s twice (the second at line %d, column %d)", what, memberName(se.Pointer), line, col)
		r.Hint = fmt.Sprintf("keep one %s in %s and remove the other: readers of JSON disagree on which of two members of one name counts, so the host reads neither",
			strconv.Quote(se.Member), containerName(what, parent))
	case strictjson.KindTrailing:
		r.Message = fmt.Sprintf("the %s has data after its JSON value, at line %d, column %d", what, line, col)
		r.Hint = fmt.Sprintf("serve one JSON object as the %s, and nothing after it", what)
	case strictjson.KindTruncated:
		r.Message = fmt.Sprintf("the %s is cut short: %s, at line %d, column %d", what, se.Msg, line, col)
		if len(bytes.TrimSpace(data)) == 0 {
			r.Message = fmt.Sprintf("the %s is empty", what)
		}
	case strictjson.KindNumber:
		r.Pointer = se.Pointer
		r.Message = fmt.Sprintf("the %s has a number the host does not read at %s: %s, at line %d, column %d", what, memberName(se.Pointer), se.Msg, line, col)
		r.Hint = fmt.Sprintf("write %s with at most 32 characters and an exponent of at most 3 digits", memberName(se.Pointer))
	case strictjson.KindDepth:
		r.Pointer = se.Pointer
		r.Message = fmt.Sprintf("the %s nests arrays and objects deeper than the host reads at %s: %s", what, memberName(se.Pointer), se.Msg)
		r.Hint = fmt.Sprintf("flatten %s: the host reads at most 32 levels of arrays and objects", memberName(se.Pointer))
	default:
		r.Message = fmt.Sprintf("the %s is not JSON: %s at line %d, column %d", what, se.Msg, line, col)
	}
	return nil, r
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
			member := memberName(r.Pointer)
			if kw == "required" {
				r.Message = fmt.Sprintf("the %s lacks the required member %s", doc, member)
				r.Hint = requiredHint(doc, r.Pointer)
			} else {
				r.Message = fmt.Sprintf("the %s has the unknown member %s", doc, member)
				r.Hint = fmt.Sprintf("remove %s, or fix its spelling: %s has only the members %s (snake_case)",
					member, containerName(doc, at), strings.Join(membersAt(doc, at), ", "))
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

// membersAt lists the members the schemas allow in the object at ptr of a
// manifest or client configuration (assets/schemas/resolver; a test keeps
// the two in step), for hints that name what may be written.
func membersAt(doc, ptr string) []string {
	switch {
	case doc != "manifest":
		return []string{"redirect_uris", "allowed_origins", "client_type"}
	case ptr == "/oauth":
		return []string{"client_id", "auth_url"}
	case strings.HasPrefix(ptr, "/icons/"):
		return []string{"src", "sizes", "type", "purpose"}
	}
	return []string{"id", "name", "short_name", "description", "icons", "start_url", "scope", "display", "theme_color", "background_color", "oauth"}
}

// containerName names the object at ptr for a hint: "the manifest",
// "oauth", "icons[0]".
func containerName(doc, ptr string) string {
	if ptr == "" {
		return "the " + doc
	}
	return memberName(ptr)
}

// requiredHint says how to supply the missing member at ptr.
func requiredHint(doc, ptr string) string {
	member := memberName(ptr)
	if doc != "manifest" {
		return fmt.Sprintf("the dashboard's answer lacks %s; a client configuration has redirect_uris, allowed_origins and client_type: check --dashboard and the client's registration", member)
	}
	switch ptr {
	case "/id":
		return `add "id": the Miniapp's stable id, such as "com.example.notes"; hosts open it by this id`
	case "/name":
		return `add "name": the Miniapp's name, shown in the host's window and on the consent screen`
	case "/start_url":
		return `add "start_url": the page the host opens, on the manifest's origin, such as "/"`
	case "/oauth":
		return `add "oauth": {"client_id": "..."} with the client id the dashboard gave the Miniapp's OAuth credential`
	case "/oauth/client_id":
		return `add oauth.client_id: the client id the dashboard gave the Miniapp's OAuth credential`
	}
	if strings.HasPrefix(ptr, "/icons/") {
		return fmt.Sprintf("add %s: an icon needs src, the URL of its image", member)
	}
	return "add " + member
}

func keywordHint(kw, at string) string {
	m := memberName(at)
	switch {
	case kw == "type":
		return fmt.Sprintf("give %s the JSON type the message names (strings for ids, names and URLs, an array for icons, an object for oauth)", m)
	case kw == "enum" && strings.HasSuffix(at, "/display"):
		return fmt.Sprintf(`set %s to one of "fullscreen", "standalone", "minimal-ui", "browser"`, m)
	case kw == "enum" && strings.HasSuffix(at, "/client_type"):
		return `the dashboard must answer client_type "confidential" or "public": check the client's registration`
	case kw == "enum":
		return fmt.Sprintf("set %s to one of the values the message lists", m)
	case kw == "minLength":
		return fmt.Sprintf("give %s a non-empty value, or remove it if it is optional", m)
	case kw == "maxLength" || kw == "maxItems":
		return fmt.Sprintf("shorten %s to the limit the message names; the host refuses larger values", m)
	case kw == "pattern" && strings.HasSuffix(at, "/sizes"):
		return fmt.Sprintf(`write %s as space-separated WIDTHxHEIGHT tokens or "any", e.g. "192x192 512x512"`, m)
	case kw == "pattern" && strings.HasSuffix(at, "/purpose"):
		return fmt.Sprintf(`write %s as space-separated purposes from "any", "maskable", "monochrome"`, m)
	case kw == "pattern" && strings.HasSuffix(at, "/type"):
		return fmt.Sprintf(`write %s as a MIME type such as "image/png"`, m)
	case kw == "not" && strings.HasSuffix(at, "/client_id"):
		return fmt.Sprintf(`use the client id the dashboard gave the credential in %s; "." and ".." cannot be client ids, they would change the dashboard URL's path`, m)
	}
	return fmt.Sprintf("change %s to meet the rule the message names", m)
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
