package webdriverfront

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestOptionsCapability: miniapp-host:options becomes open's device flags,
// and each mistake is refused naming the member.
func TestOptionsCapability(t *testing.T) {
	decode := func(s string) map[string]any {
		d := json.NewDecoder(bytes.NewReader([]byte(s)))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	always := decode(`{"browserName": "x", "miniapp-host:options": {"device": "pixel-8", "landscape": true, "theme": "dark", "locale": "pt-BR", "zoom": 1, "start": "/?a=1"}}`)
	args, v, refusal := optionArgs(always)
	if refusal != "" {
		t.Fatal(refusal)
	}
	got := " " + strings.Join(args, " ") + " "
	for _, want := range []string{" --device pixel-8 ", " --landscape ", " --theme dark ", " --locale pt-BR ", " --zoom 1 ", " --start /?a=1 "} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	if v.Width != 915 || v.Height != 412 || v.Orientation != "landscape" {
		t.Errorf("viewport %+v", v)
	}
	if _, still := always[OptionsCapability]; still {
		t.Error("the capability is forwarded to the driver")
	}
	for opts, want := range map[string]string{
		`"pixel"`:                    "must be an object",
		`{"device": "nokia"}`:        `unknown device "nokia"`,
		`{"device": 7}`:              "options.device must be a string",
		`{"landscape": "yes"}`:       "landscape must be true or false",
		`{"zoom": 3}`:                "zoom 3: a number from 0.25 to 2",
		`{"locale": "en_GB"}`:        "write it as en-GB",
		`{"start": "https://evil/"}`: "write a path on the Miniapp's origin",
		`{"devise": "pixel-8"}`:      "devise is not an option",
	} {
		_, _, refusal := optionArgs(decode(`{"miniapp-host:options": ` + opts + `}`))
		if !strings.Contains(refusal, want) {
			t.Errorf("%s: %q, want %q", opts, refusal, want)
		}
	}
}
