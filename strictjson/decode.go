// Package strictjson decodes JSON from outside input more strictly than
// encoding/json: a member named twice in one object is an error (instead of
// the last one winning), numbers are kept exact as json.Number but bounded
// in length and exponent, nesting is bounded, and nothing but whitespace
// may follow the value. Values come out as encoding/json with UseNumber
// makes them (map[string]any, []any, string, json.Number, bool, nil), so
// they go straight to a JSON Schema validator.
//
// Strings without escapes and numbers share one copy of the whole text, so
// a decoded value keeps that copy alive as long as any of them lives; the
// inputs are bounded (a request is at most 1 MiB), and the copy saves an
// allocation per string.
//
// Duplicate names matter because two readers of one text must never see
// two different documents: RFC 8259 §4 leaves duplicates' meaning to the
// implementation, so a checker that takes the last value and a consumer
// that takes the first would disagree. Bounded numbers matter because a
// schema validator turns each into an exact rational: 1e1000000 costs
// seconds and megabytes.
//
// It is the project's one reader of JSON from outside: the catalog's
// requests and Resource Server schemas, the authorization server's JSON
// bodies, the resolver's manifests and client configurations, and the
// bridge's and automation channel's messages (Members) all go through it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
)

// Limits bound a document. Zero values mean the defaults below.
type Limits struct {
	// MaxDepth caps the nesting of arrays and objects (default 32).
	MaxDepth int
	// MaxNumberLen caps the length of a number literal (default 32).
	MaxNumberLen int
	// MaxExponentDigits caps the digits of a number's exponent (default 3,
	// so |exponent| < 1000).
	MaxExponentDigits int
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = 32
	}
	if l.MaxNumberLen <= 0 {
		l.MaxNumberLen = 32
	}
	if l.MaxExponentDigits <= 0 {
		l.MaxExponentDigits = 3
	}
	return l
}

// Kind names the rule a SyntaxError is about, so that a caller can say
// how to fix it without reading the message.
type Kind int

// The kinds of SyntaxError.
const (
	// KindSyntax: the text is not JSON as RFC 8259 writes it.
	KindSyntax Kind = iota
	// KindTruncated: the text ends inside the value (or is empty).
	KindTruncated
	// KindTrailing: something other than white space follows the value.
	KindTrailing
	// KindDuplicate: an object names a member twice (Member names it).
	KindDuplicate
	// KindNumber: a number is longer, or has a longer exponent, than the
	// Limits allow.
	KindNumber
	// KindDepth: arrays and objects nest deeper than the Limits allow.
	KindDepth
	// KindNotObject: Members was given a value other than an object.
	KindNotObject
)

// SyntaxError says where and why a document was refused.
type SyntaxError struct {
	Offset int // byte offset of the problem
	Msg    string
	Kind   Kind
	// Pointer (RFC 6901) is the value the problem is in: the member or
	// element being read when it was found, "" for the document itself.
	// For KindDuplicate it is the member named twice.
	Pointer string
	// Member is the name of the member of a KindDuplicate error.
	Member string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset) }

// Decode decodes exactly one JSON value.
func Decode(data []byte, lim Limits) (any, error) {
	v, _, err := decode(data, lim, false)
	return v, err
}

// DecodeArray decodes exactly one JSON value and, when it is an array, also
// returns the byte span [start, end) of each element's text.
func DecodeArray(data []byte, lim Limits) (any, [][2]int, error) {
	return decode(data, lim, true)
}

func decode(data []byte, lim Limits, wantSpans bool) (any, [][2]int, error) {
	// One copy of the whole text backs every string and number without
	// escapes (substrings share it): one allocation instead of one each.
	d := &decoder{data: data, text: string(data), lim: lim.withDefaults(), spans: wantSpans}
	d.skipSpace()
	v, err := d.value(0)
	if err != nil {
		return nil, nil, err
	}
	d.skipSpace()
	if d.i != len(d.data) {
		return nil, nil, d.fail(KindTrailing, "text after the JSON value")
	}
	return v, d.elems, nil
}

// Members decodes exactly one JSON object and returns its members, each
// value as the text it is written with (a sub-slice of data, not a copy):
// for messages whose members are read one at a time, each checked for its
// JSON type before it is converted. The object's member names are exact
// (no case folding) and a name given twice is refused (KindDuplicate); the
// values are checked for syntax and the Limits but not decoded, and their
// own objects are not looked at for duplicates: that happens when a value
// is read in turn (Members of it, or Decode). A value that is not an
// object is refused with KindNotObject.
func Members(data []byte, lim Limits) (map[string]json.RawMessage, error) {
	d := &decoder{data: data, text: string(data), lim: lim.withDefaults(), members: map[string]json.RawMessage{}}
	d.skipSpace()
	start := d.i
	if _, err := d.value(0); err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.i != len(d.data) {
		return nil, d.fail(KindTrailing, "text after the JSON value")
	}
	if data[start] != '{' {
		return nil, &SyntaxError{Offset: start, Kind: KindNotObject, Msg: fmt.Sprintf("the JSON value is %s, not an object", kindOf(data[start]))}
	}
	return d.members, nil
}

// kindOf names the JSON type of the value that starts with c.
func kindOf(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

type decoder struct {
	data []byte
	text string // data as a string
	i    int
	// stack holds the elements of the arrays being read, so that each array
	// is allocated once at its final size.
	stack []any
	lim   Limits
	spans bool     // record the top-level array's element spans
	elems [][2]int // the spans
	// members, for Members, receives the top-level object's members as
	// text; the objects inside them are then neither built nor checked
	// for duplicates.
	members map[string]json.RawMessage
}

// errorf reports a KindSyntax error at the current offset.
func (d *decoder) errorf(format string, a ...any) error {
	return d.fail(KindSyntax, format, a...)
}

// fail reports an error of kind k at the current offset; a syntax error
// at the end of the text is KindTruncated.
func (d *decoder) fail(k Kind, format string, a ...any) error {
	if k == KindSyntax && d.i >= len(d.data) {
		k = KindTruncated
	}
	return &SyntaxError{Offset: d.i, Kind: k, Msg: fmt.Sprintf(format, a...)}
}

// within prefixes the pointer of an error found inside the member or
// element tok with tok, as the error travels up to the document: an error
// costs its path, a document that decodes costs nothing.
func within(err error, tok string) error {
	if se, ok := err.(*SyntaxError); ok {
		se.Pointer = "/" + jsonpointer.Escape(tok) + se.Pointer
	}
	return err
}

func (d *decoder) skipSpace() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if d.i >= len(d.data) {
		return nil, d.errorf("unexpected end of JSON")
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	default:
		return nil, d.errorf("invalid character %q looking for a value", c)
	}
}

func (d *decoder) literal(word string) error {
	if len(d.data)-d.i < len(word) || string(d.data[d.i:d.i+len(word)]) != word {
		return d.errorf("invalid literal, expected %s", word)
	}
	d.i += len(word)
	return nil
}

func (d *decoder) object(depth int) (any, error) {
	if depth > d.lim.MaxDepth {
		return nil, d.fail(KindDepth, "nesting deeper than %d levels", d.lim.MaxDepth)
	}
	d.i++ // {
	// Members keeps the top-level object's members as text and builds
	// nothing inside them; otherwise the object is built.
	raw := d.members != nil && depth == 1
	var obj map[string]any
	if d.members == nil {
		obj = map[string]any{}
	}
	d.skipSpace()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return obj, nil
	}
	for {
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, d.errorf("expected a member name")
		}
		at := d.i
		name, err := d.string()
		if err != nil {
			return nil, err
		}
		_, dup := obj[name]
		if raw {
			_, dup = d.members[name]
		}
		if dup {
			return nil, &SyntaxError{Offset: at, Kind: KindDuplicate, Member: name, Pointer: "/" + jsonpointer.Escape(name),
				Msg: fmt.Sprintf("member %s appears twice in one object", quote(name))}
		}
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, d.errorf("expected ':' after a member name")
		}
		d.i++
		d.skipSpace()
		start := d.i
		v, err := d.value(depth)
		if err != nil {
			return nil, within(err, name)
		}
		switch {
		case raw:
			d.members[name] = json.RawMessage(d.data[start:d.i])
		case obj != nil:
			obj[name] = v
		}
		d.skipSpace()
		if d.i >= len(d.data) {
			return nil, d.errorf("unexpected end of JSON in an object")
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return obj, nil
		default:
			return nil, d.errorf("expected ',' or '}' in an object")
		}
	}
}

func (d *decoder) array(depth int) (any, error) {
	if depth > d.lim.MaxDepth {
		return nil, d.fail(KindDepth, "nesting deeper than %d levels", d.lim.MaxDepth)
	}
	top := d.spans && depth == 1
	d.i++ // [
	d.skipSpace()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return []any{}, nil
	}
	base := len(d.stack)
	for {
		d.skipSpace()
		start := d.i
		v, err := d.value(depth)
		if err != nil {
			return nil, within(err, strconv.Itoa(len(d.stack)-base))
		}
		if top {
			d.elems = append(d.elems, [2]int{start, d.i})
		}
		d.stack = append(d.stack, v)
		d.skipSpace()
		if d.i >= len(d.data) {
			return nil, d.errorf("unexpected end of JSON in an array")
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			arr := make([]any, len(d.stack)-base)
			copy(arr, d.stack[base:])
			clear(d.stack[base:])
			d.stack = d.stack[:base]
			return arr, nil
		default:
			return nil, d.errorf("expected ',' or ']' in an array")
		}
	}
}

// number reads a number as RFC 8259 §6 writes it.
func (d *decoder) number() (any, error) {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.data[d.i] == '-' {
		d.i++
	}
	if d.i < len(d.data) && d.data[d.i] == '0' {
		d.i++
	} else if digits() == 0 {
		return nil, d.errorf("invalid number")
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, d.errorf("invalid number: digits must follow the decimal point")
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		n := digits()
		if n == 0 {
			return nil, d.errorf("invalid number: digits must follow the exponent")
		}
		if n > d.lim.MaxExponentDigits {
			return nil, &SyntaxError{Offset: start, Kind: KindNumber, Msg: fmt.Sprintf("number with an exponent of more than %d digits", d.lim.MaxExponentDigits)}
		}
	}
	if d.i-start > d.lim.MaxNumberLen {
		return nil, &SyntaxError{Offset: start, Kind: KindNumber, Msg: fmt.Sprintf("number longer than %d characters", d.lim.MaxNumberLen)}
	}
	return json.Number(d.text[start:d.i]), nil
}

// string reads a string, replacing invalid UTF-8 and lone surrogates with
// U+FFFD as encoding/json does.
func (d *decoder) string() (string, error) {
	d.i++ // opening quote
	start := d.i
	// Fast path: no escapes and valid ASCII.
	for d.i < len(d.data) {
		c := d.data[d.i]
		if c == '"' {
			s := d.text[start:d.i]
			d.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		d.i++
	}
	buf := append([]byte(nil), d.data[start:d.i]...)
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			d.i++
			return string(buf), nil
		case c < 0x20:
			return "", d.errorf("control character in a string")
		case c == '\\':
			var err error
			if buf, err = d.escape(buf); err != nil {
				return "", err
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.i++
		default:
			r, size := utf8.DecodeRune(d.data[d.i:])
			d.i += size
			buf = utf8.AppendRune(buf, r) // RuneError for invalid bytes
		}
	}
	return "", d.errorf("unexpected end of JSON in a string")
}

// simpleEscapes maps the letter of each two-character escape of a JSON
// string (RFC 8259 section 7) to the byte it stands for (0: none).
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape reads the escape at d.i (a backslash) and appends what it
// stands for to buf.
func (d *decoder) escape(buf []byte) ([]byte, error) {
	if d.i+1 >= len(d.data) {
		return buf, d.errorf("unexpected end of JSON in a string")
	}
	e := d.data[d.i+1]
	d.i += 2
	if b := simpleEscapes[e]; b != 0 {
		return append(buf, b), nil
	}
	if e != 'u' {
		return buf, d.errorf("invalid escape \\%c in a string", e)
	}
	r, err := d.unicodeEscape()
	if err != nil {
		return buf, err
	}
	return utf8.AppendRune(buf, r), nil
}

// unicodeEscape reads the four hex digits of a \u escape (d.i after the
// "\u") and, for a surrogate, the \u escape that may follow: a pair
// decodes to one rune; anything else is U+FFFD, as encoding/json reads it.
func (d *decoder) unicodeEscape() (rune, error) {
	r, ok := d.hex4()
	if !ok {
		return 0, d.errorf("invalid \\u escape in a string")
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if d.i+1 >= len(d.data) || d.data[d.i] != '\\' || d.data[d.i+1] != 'u' {
		return utf8.RuneError, nil
	}
	save := d.i
	d.i += 2
	x, ok := d.hex4()
	if !ok {
		return 0, d.errorf("invalid \\u escape in a string")
	}
	if dec := utf16.DecodeRune(r, x); dec != utf8.RuneError {
		return dec, nil
	}
	d.i = save // not a pair: read the second escape on its own
	return utf8.RuneError, nil
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.i < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d.data[d.i:d.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	d.i += 4
	return rune(n), true
}

// quote renders a name from the input for a message, cut short.
func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

// Unmarshal decodes exactly one JSON value into v as encoding/json does,
// after checking it with Decode's rules (no duplicate member, bounded
// numbers and nesting, nothing after the value). Members of an object that
// v has no field for are refused, so that a misspelt field is an error
// rather than silently ignored.
func Unmarshal(data []byte, v any, lim Limits) error {
	if _, err := Decode(data, lim); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
