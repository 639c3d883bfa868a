package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
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
			msg := err.Error()
			if !strings.Contains(msg, "appears twice") && !strings.Contains(msg, "number") && !strings.Contains(msg, "nesting") {
				t.Fatalf("Decode refuses %q, which encoding/json accepts, for no rule of its own: %v", data, err)
			}
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
