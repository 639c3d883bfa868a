package telemetry

import (
	"fmt"
	"net/url"
	"strings"
)

// TraceIDPlaceholder is what a trace UI template holds where a trace id
// goes.
const TraceIDPlaceholder = "{trace_id}"

// CheckTraceUI checks a trace UI template, such as Jaeger's
// http://localhost:16686/trace/{trace_id}: an http or https URL with a
// host that holds TraceIDPlaceholder.
func CheckTraceUI(tmpl string) error {
	if !strings.Contains(tmpl, TraceIDPlaceholder) {
		return fmt.Errorf("%q: no %s placeholder; give a URL such as http://localhost:16686/trace/%s (Jaeger)", tmpl, TraceIDPlaceholder, TraceIDPlaceholder)
	}
	u, err := url.Parse(strings.ReplaceAll(tmpl, TraceIDPlaceholder, "0"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%q: not an http or https URL with a host; give one such as http://localhost:16686/trace/%s (Jaeger)", tmpl, TraceIDPlaceholder)
	}
	return nil
}

// TraceURL is tmpl (CheckTraceUI accepted it) with traceID in place of
// the placeholder; "" when either is empty.
func TraceURL(tmpl, traceID string) string {
	if tmpl == "" || traceID == "" {
		return ""
	}
	return strings.ReplaceAll(tmpl, TraceIDPlaceholder, url.PathEscape(traceID))
}
