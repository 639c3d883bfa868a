package strictjson

import (
	"errors"
	"testing"
)

// TestStringEscapes: every escape of RFC 8259 section 7 decodes as
// encoding/json decodes it (a lone or mismatched surrogate is U+FFFD),
// and each malformed string is refused at the offset of its fault.
func TestStringEscapes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`"a\"b\\c\/d"`, `a"b\c/d`},
		{`"\b\f\n\r\t"`, "\b\f\n\r\t"},
		{`"\u00e9\u20AC"`, "é€"},
		{`"\ud83d\ude00"`, "😀"},
		{`"\ud83d"`, "\uFFFD"},
		{`"\ud83dx"`, "\uFFFDx"},
		{`"\ud83d\u0041"`, "\uFFFDA"},
		{`"\ude00\ud83d\ude00"`, "\uFFFD😀"},
		{"\"caf\xc3\xa9 \xff\"", "café \uFFFD"},
	} {
		v, err := Decode([]byte(tc.in), Limits{})
		if err != nil || v != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.in, v, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in     string
		offset int
		kind   Kind
		msg    string
	}{
		{`"a\`, 2, KindSyntax, "unexpected end of JSON in a string"},
		{`"a\x"`, 4, KindSyntax, `invalid escape \x in a string`},
		{`"\u12"`, 3, KindSyntax, `invalid \u escape in a string`},
		{`"\ud83d\u12"`, 9, KindSyntax, `invalid \u escape in a string`},
		{"\"a\x01\"", 2, KindSyntax, "control character in a string"},
		{`"\n`, 3, KindTruncated, "unexpected end of JSON in a string"},
		{`"abc`, 4, KindTruncated, "unexpected end of JSON in a string"},
	} {
		_, err := Decode([]byte(tc.in), Limits{})
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset != tc.offset || se.Kind != tc.kind || se.Msg != tc.msg {
			t.Errorf("%s: got %#v, want offset %d kind %v %q", tc.in, err, tc.offset, tc.kind, tc.msg)
		}
	}
}
