package resolver

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the report as the JSON document `miniapp-host resolve
// --json` prints (docs/resolve.md): indented, with <, > and & as they are.
func (r *Report) WriteJSON(w io.Writer) error {
	return writeJSON(w, r)
}

// WriteJSON writes the batch as the JSON document `miniapp-host resolve
// --from|--manifests --json` prints: {"miniapps": [...]}, each item's
// report the document Report.WriteJSON writes.
func (b *Batch) WriteJSON(w io.Writer) error {
	return writeJSON(w, b)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
