package webkitgtk

import (
	"net/http"
	"strings"
)

// parseHeaderLines reads headers written as "Name: value" lines, as the C
// side (webkit.c) reports those of a request the view made and of its
// response. A line without a colon, or with an empty name or one with
// white space in it, is skipped. Plain Go, without a build constraint, so
// that its tests run without cgo too.
func parseHeaderLines(text string) http.Header {
	h := http.Header{}
	for line := range strings.SplitSeq(text, "\n") {
		name, value, ok := strings.Cut(strings.TrimSuffix(line, "\r"), ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			continue
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h
}
