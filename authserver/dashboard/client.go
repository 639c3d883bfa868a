package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// Client calls the dashboard API, as the miniapp-host CLI does: one method
// for every route, because each route is one JSON request and one JSON
// answer (docs/dashboard.md).
type Client struct {
	// BaseURL is {dashboard_url}, such as "http://127.0.0.1:8601".
	BaseURL string
	// Key is the project's key or the operator credential, sent as a
	// Bearer token; empty for the public routes.
	Key string
	// HTTP sends the requests; nil means a client with a 10 s timeout.
	HTTP *http.Client
}

// APIError is a refusal by the dashboard API: its status and error object,
// and the answer as it came, for callers that pass it on unchanged.
type APIError struct {
	Status int
	Err    Error
	Body   json.RawMessage
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("dashboard: %d %s", e.Status, e.Err.Code)
	if e.Err.Field != "" {
		msg += " at " + e.Err.Field
	}
	if e.Err.Message != "" {
		msg += ": " + e.Err.Message
	}
	return msg
}

// maxAnswer caps an answer read by the client.
const maxAnswer = 4 << 20

// Do sends body (nil for none) as JSON to path and returns the JSON answer
// (nil for 204). A refusal is an *APIError; a failure to reach the
// dashboard or read its answer is any other error.
func (c *Client) Do(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("dashboard: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if body != nil || method != http.MethodGet && method != http.MethodHead {
		// The dashboard takes no state-changing request of another
		// content type, even without a body (docs/dashboard.md).
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	a, err := jsonhttp.Do(hc, req, maxAnswer)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if a.Status >= 400 {
		ae := &APIError{Status: a.Status, Body: a.Body}
		if json.Unmarshal(a.Body, &ae.Err) != nil || ae.Err.Code == "" {
			return nil, fmt.Errorf("dashboard: %s without an error object", a.StatusText)
		}
		return nil, ae
	}
	if a.Status == http.StatusNoContent {
		return nil, nil
	}
	var raw json.RawMessage
	if err := a.Decode(&raw); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return raw, nil
}
