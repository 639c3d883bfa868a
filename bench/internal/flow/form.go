package flow

import (
	"errors"
	"html"
	"regexp"
	"strings"
)

// Minimal HTML form parsing (standard library only): enough for the
// sign-in and consent pages of the servers benchmarked, which are plain
// forms.

type formInput struct {
	name, typ, value string
	checked          bool
}

type htmlForm struct {
	action, method string
	inputs         []formInput
}

var (
	reForm    = regexp.MustCompile(`(?is)<form\b([^>]*)>(.*?)</form\s*>`)
	reControl = regexp.MustCompile(`(?is)<(input|button|select|textarea)\b([^>]*)>`)
	reAttr    = regexp.MustCompile(`(?s)([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>` + "`" + `]+)))?`)
)

func attrs(s string) map[string]string {
	m := map[string]string{}
	for _, a := range reAttr.FindAllStringSubmatch(s, -1) {
		k := strings.ToLower(a[1])
		if _, dup := m[k]; dup {
			continue
		}
		m[k] = html.UnescapeString(a[2] + a[3] + a[4])
	}
	return m
}

// parseForm returns the first POST form (else the first form) with the
// values a browser submits. With pressButton, one submit button is
// pressed: the first whose value is in press, else the first submit
// button; a pressed button with a name contributes name=value, as in a
// browser. Without it, no button contributes anything.
func parseForm(body []byte, pressButton bool, press []string) (htmlForm, error) {
	forms := reForm.FindAllSubmatch(body, -1)
	if len(forms) == 0 {
		return htmlForm{}, errors.New("no form in page")
	}
	pick := forms[0]
	for _, f := range forms {
		if strings.EqualFold(attrs(string(f[1]))["method"], "post") {
			pick = f
			break
		}
	}
	fa := attrs(string(pick[1]))
	out := htmlForm{action: fa["action"], method: strings.ToLower(fa["method"])}
	if out.method == "" {
		out.method = "get"
	}
	var buttons []formInput
	for _, c := range reControl.FindAllSubmatch(pick[2], -1) {
		tag := strings.ToLower(string(c[1]))
		a := attrs(string(c[2]))
		typ := strings.ToLower(a["type"])
		if (tag == "button" && (typ == "" || typ == "submit")) || (tag == "input" && (typ == "submit" || typ == "image")) {
			buttons = append(buttons, formInput{name: a["name"], typ: "submit", value: a["value"]})
			continue
		}
		name := a["name"]
		if name == "" || tag == "button" {
			continue
		}
		if tag == "input" && (typ == "button" || typ == "reset" || typ == "file") {
			continue
		}
		_, checked := a["checked"]
		out.inputs = append(out.inputs, formInput{name: name, typ: typ, value: a["value"], checked: checked})
	}
	if pressButton && len(buttons) > 0 {
		chosen := buttons[0]
	find:
		for _, p := range press {
			for _, b := range buttons {
				if b.value == p {
					chosen = b
					break find
				}
			}
		}
		if chosen.name != "" {
			out.inputs = append(out.inputs, formInput{name: chosen.name, typ: "hidden", value: chosen.value})
		}
	}
	return out, nil
}
