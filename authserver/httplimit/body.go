package httplimit

import (
	"errors"
	"io"
	"net/http"

	"github.com/miniapp-host/miniapp-host/strictjson"
)

// ReadBody reads a request body of at most max bytes. A longer body is an
// error for which TooLarge reports true; the caller answers 413.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
}

// ReadJSON reads a body of at most max bytes holding exactly one JSON value
// into v, with strictjson's rules: no member named twice, nothing but
// whitespace after the value, no member v has no field for.
func ReadJSON(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	raw, err := ReadBody(w, r, max)
	if err != nil {
		return err
	}
	return strictjson.Unmarshal(raw, v, strictjson.Limits{})
}

// TooLarge reports whether err is a body over its limit (ReadBody,
// ReadJSON, or r.ParseForm over an http.MaxBytesReader).
func TooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
