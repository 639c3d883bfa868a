package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
)

// stdDecode is the reference: encoding/json's verdict on the whole text
// (json.Valid) and its value with exact numbers.
func stdDecode(data []byte) (any, error) {
	if !json.Valid(data) {
		return nil, errors.New("encoding/json: not one valid JSON value")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `null`, `true`, ` false `, `0`, `-0`, `1.5e-3`, `12E+2`, `"a\"b\\c\/d\b\f\n\r\t"`,
		`"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`, "\"\xff\xfe\"", "\"é\"",
		`{"a":[1,{"b":null}],"c":"d"}`, ` [ 1 , 2 ] `, `{"":1}`,
	} {
		t.Run(in, func(t *testing.T) {
			want, err := stdDecode([]byte(in))
			if err != nil {
				t.Fatalf("encoding/json refuses %q: %v", in, err)
			}
			got, err := Decode([]byte(in), Limits{})
			if err != nil {
				t.Fatalf("Decode(%q): %v", in, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Decode(%q) = %#v, encoding/json says %#v", in, got, want)
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	deep := strings.Repeat("[", 33) + strings.Repeat("]", 33)
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"a":2}`, `member "a" appears twice`},
		{`[{"type":"x","actions":[],"type":"y"}]`, `member "type" appears twice`},
		{`{"a":{"b":1,"b":1}}`, `member "b" appears twice`},
		{`[1]]`, "text after the JSON value"},
		{`{} x`, "text after the JSON value"},
		{`[1] [2]`, "text after the JSON value"},
		{`1e1000000`, "exponent of more than 3 digits"},
		{`1e1000`, "exponent of more than 3 digits"},
		{`123456789012345678901234567890123`, "longer than 32 characters"},
		{deep, "nesting deeper than 32"},
		{`01`, "text after the JSON value"},
		{`1.`, "digits must follow the decimal point"},
		{`.5`, "invalid character"},
		{`+1`, "invalid character"},
		{`1e`, "digits must follow the exponent"},
		{`"\x"`, `invalid escape \x`},
		{`"\u12"`, `invalid \u escape`},
		{"\"a\nb\"", "control character"},
		{`"abc`, "unexpected end"},
		{`[1,]`, "invalid character"},
		{`{"a" 1}`, "expected ':'"},
		{`{1:2}`, "expected a member name"},
		{`tru`, "expected true"},
		{``, "unexpected end"},
		{`NaN`, "invalid character"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Decode([]byte(tc.in), Limits{})
			var se *SyntaxError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode(%q) = %v, want a SyntaxError with %q", tc.in, err, tc.want)
			}
		})
	}
	if _, err := Decode([]byte(strings.Repeat("[", 32)+strings.Repeat("]", 32)), Limits{}); err != nil {
		t.Errorf("32 levels refused: %v", err)
	}
}

func TestDecodeArraySpans(t *testing.T) {
	in := " [ {\"a\": [1, 2]} ,\n\t\"s,]\" , 7, [] ] "
	v, spans, err := DecodeArray([]byte(in), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a": [1, 2]}`, `"s,]"`, `7`, `[]`}
	if len(spans) != len(want) || len(v.([]any)) != len(want) {
		t.Fatalf("spans %v for %d elements", spans, len(v.([]any)))
	}
	for i, s := range spans {
		if got := in[s[0]:s[1]]; got != want[i] {
			t.Errorf("element %d text %q, want %q", i, got, want[i])
		}
	}
	if _, spans, _ := DecodeArray([]byte(`{"a":[1,2]}`), Limits{}); spans != nil {
		t.Errorf("spans %v for an object", spans)
	}
}

// FuzzDecode is a differential test against encoding/json: whatever Decode
// accepts, encoding/json accepts with the same value; whatever it refuses
// that encoding/json accepts is refused for one of its own rules (a
// duplicate member, a long number, deep nesting). It never panics.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":null}],"c":"d"}`, `"\ud800\udc00"`, `[1e5,-0.5]`, `{"a":1,"a":2}`, "\"\xff\"", `[[[[]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, spans, err := DecodeArray(data, Limits{})
		want, stdErr := stdDecode(data)
		switch {
		case err == nil && stdErr != nil:
			t.Fatalf("Decode accepts %q, encoding/json refuses it: %v", data, stdErr)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("Decode(%q) = %#v, encoding/json says %#v", data, got, want)
		case err != nil && stdErr == nil:
			var se *SyntaxError
			if !errors.As(err, &se) || se.Kind != KindDuplicate && se.Kind != KindNumber && se.Kind != KindDepth {
				t.Fatalf("Decode refuses %q, which encoding/json accepts, for no rule of its own: %v", data, err)
			}
			checkPointer(t, data, se)
		}
		if arr, ok := got.([]any); ok && err == nil {
			for i, s := range spans {
				el, err := stdDecode(data[s[0]:s[1]])
				if err != nil || !reflect.DeepEqual(el, arr[i]) {
					t.Fatalf("span %d %q does not hold element %#v", i, data[s[0]:s[1]], arr[i])
				}
			}
		}
	})
}

// TestUnmarshal: Unmarshal applies Decode's rules, then refuses unknown
// members, and fills v as encoding/json does.
func TestUnmarshal(t *testing.T) {
	type T struct {
		A string `json:"a"`
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"a":"x"}`, true},
		{` {"a":"x"} ` + "\n", true},
		{`{"a":"x"}{"a":"y"}`, false},
		{`{"a":"x"} x`, false},
		{`{"a":"x","a":"y"}`, false},
		{`{"a":"x","b":1}`, false},
		{`{"a":1}`, false},
	} {
		var v T
		err := Unmarshal([]byte(tc.in), &v, Limits{})
		if (err == nil) != tc.ok || tc.ok && v.A != "x" {
			t.Errorf("Unmarshal(%s) = %v, %+v; want ok=%v", tc.in, err, v, tc.ok)
		}
	}
}

// checkPointer: the pointer of an error names the place it is about. For
// a duplicate that encoding/json accepts (it keeps the last value), the
// object the pointer's parent names holds the member.
func checkPointer(t *testing.T, data []byte, se *SyntaxError) {
	t.Helper()
	if se.Pointer != "" && se.Pointer[0] != '/' {
		t.Fatalf("%q: pointer %q is not a JSON pointer", data, se.Pointer)
	}
	if se.Kind != KindDuplicate {
		return
	}
	parent, last := path.Split(se.Pointer)
	if last != jsonpointer.Escape(se.Member) {
		t.Fatalf("%q: duplicate %q at pointer %q", data, se.Member, se.Pointer)
	}
	doc, err := stdDecode(data)
	if err != nil {
		return
	}
	obj, ok := jsonpointer.Lookup(doc, strings.TrimSuffix(parent, "/"))
	if m, isObj := obj.(map[string]any); !ok || !isObj {
		t.Fatalf("%q: duplicate %q at %q, whose parent is no object", data, se.Member, se.Pointer)
	} else if _, has := m[se.Member]; !has {
		t.Fatalf("%q: duplicate %q at %q, not a member of its parent", data, se.Member, se.Pointer)
	}
}

// TestErrorKindAndPointer: an error says which rule it is about and where
// in the document, so that a reader of a manifest can be told which member
// to fix.
func TestErrorKindAndPointer(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`
	for _, tc := range []struct {
		in      string
		kind    Kind
		pointer string
		member  string
	}{
		{`{"a":1,"a":2}`, KindDuplicate, "/a", "a"},
		{`{"oauth":{"client_id":"x","client_id":"y"}}`, KindDuplicate, "/oauth/client_id", "client_id"},
		{`{"icons":[{"src":"a"},{"src":"b","src":"c"}]}`, KindDuplicate, "/icons/1/src", "src"},
		{`{"a/b":{"~":1,"~":2}}`, KindDuplicate, "/a~1b/~0", "~"},
		{`{"":0,"":1}`, KindDuplicate, "/", ""},
		{`{"n":[1,2,1e1000]}`, KindNumber, "/n/2", ""},
		{`{"n":123456789012345678901234567890123}`, KindNumber, "/n", ""},
		{deep, KindDepth, "/a" + strings.Repeat("/0", 31), ""},
		{`{"a":[1,2`, KindTruncated, "/a", ""},
		{``, KindTruncated, "", ""},
		{`{"a":1} x`, KindTrailing, "", ""},
		{`{"a":[1,x]}`, KindSyntax, "/a/1", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Decode([]byte(tc.in), Limits{})
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Decode(%q) = %v, want a SyntaxError", tc.in, err)
			}
			if se.Kind != tc.kind || se.Pointer != tc.pointer || se.Member != tc.member {
				t.Fatalf("Decode(%q): kind %d, pointer %q, member %q; want %d, %q, %q (%v)",
					tc.in, se.Kind, se.Pointer, se.Member, tc.kind, tc.pointer, tc.member, err)
			}
		})
	}
}

// TestMembers: an object's members come out as the text they are written
// with; the object's own names are exact and unique; a member's value is
// checked for syntax and the limits, its own duplicates are left to the
// reader of that value; anything but one object is refused, saying what it
// is.
func TestMembers(t *testing.T) {
	in := ` {"id": 7, "Id":"x", "params" : {"a":[1, {"b":"c"}], "a":2}, "s":"q\"\u00e9"} `
	m, err := Members([]byte(in), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"id": "7", "Id": `"x"`, "params": `{"a":[1, {"b":"c"}], "a":2}`, "s": `"q\"\u00e9"`}
	if len(m) != len(want) {
		t.Fatalf("members %q, want %q", m, want)
	}
	for k, v := range want {
		if string(m[k]) != v {
			t.Errorf("member %q = %s, want %s", k, m[k], v)
		}
	}
	if _, err := Decode(m["params"], Limits{}); err == nil {
		t.Error("the params' own duplicate is not found when they are decoded")
	}
	if e, err := Members([]byte(`{}`), Limits{}); err != nil || e == nil || len(e) != 0 {
		t.Errorf("Members({}) = %v, %v; want an empty map", e, err)
	}
	for _, tc := range []struct {
		in   string
		kind Kind
		msg  string
	}{
		{`{"id":1,"id":2}`, KindDuplicate, `member "id" appears twice`},
		{`[1,2]`, KindNotObject, "is an array, not an object"},
		{`"ready"`, KindNotObject, "is a string, not an object"},
		{`null`, KindNotObject, "is null, not an object"},
		{`12`, KindNotObject, "is a number, not an object"},
		{`{"a":1} {}`, KindTrailing, "text after the JSON value"},
		{`hello`, KindSyntax, "invalid character 'h' looking for a value"},
		{`{"a":1e5000}`, KindNumber, "exponent of more than 3 digits"},
		{`{"a":[`, KindTruncated, "unexpected end"},
		{``, KindTruncated, "unexpected end"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Members([]byte(tc.in), Limits{})
			var se *SyntaxError
			if !errors.As(err, &se) || se.Kind != tc.kind || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Members(%q) = %v, want kind %d with %q", tc.in, err, tc.kind, tc.msg)
			}
		})
	}
}

// FuzzMembers: Members accepts exactly the objects encoding/json accepts
// whose own names are unique and that keep the limits, and each member's
// text is that member's value.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"v":1,"id":2,"method":"ready","params":{"a":[1,{"b":null}]}}`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[1]`, `{"a":"\ud800"}`, `{} 1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Members(data, Limits{})
		want, stdErr := stdDecode(data)
		obj, isObj := want.(map[string]any)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Members(%q): %T %v is not a SyntaxError", data, err, err)
			}
			checkPointer(t, data, se)
			if se.Kind == KindDuplicate && strings.Count(se.Pointer, "/") != 1 {
				t.Fatalf("Members(%q) looked for duplicates inside a member: %v at %q", data, err, se.Pointer)
			}
			if stdErr == nil && (se.Kind == KindSyntax || se.Kind == KindTruncated || se.Kind == KindTrailing) {
				t.Fatalf("Members(%q): %v, but encoding/json reads it", data, err)
			}
			if stdErr == nil && !isObj && se.Kind != KindNotObject && se.Kind != KindNumber && se.Kind != KindDepth && se.Kind != KindDuplicate {
				t.Fatalf("Members(%q) of a non-object: %v", data, err)
			}
			return
		}
		if stdErr != nil || !isObj {
			t.Fatalf("Members accepts %q, which encoding/json does not read as an object (%v)", data, stdErr)
		}
		if len(got) != len(obj) {
			t.Fatalf("Members(%q) has %d members, encoding/json %d", data, len(got), len(obj))
		}
		for k, raw := range got {
			v, err := stdDecode(raw)
			if err != nil || !reflect.DeepEqual(v, obj[k]) {
				t.Fatalf("member %q text %q is not its value %#v (%v)", k, raw, obj[k], err)
			}
		}
	})
}
