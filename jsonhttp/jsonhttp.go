// Package jsonhttp reads the JSON answers of HTTP servers, the one way the
// module's clients do: a request sent, its answer's body read within a cap
// (an answer over it is an error, never a truncated body), its status
// checked, its JSON decoded, and every failure an *Error that names the
// request (method and URL, without its query), the status and the cap.
//
//	var out T
//	if _, err := jsonhttp.Call(client, req, 1<<20, &out); err != nil { ... }
//
// A caller that reads a server's error object on a refusal, or keeps the
// raw answer, sends with [Do] (or reads a response it already has with
// [Read]) and looks at the [Answer] itself.
package jsonhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ErrTooLarge is the cause of an *Error for an answer over its cap.
var ErrTooLarge = errors.New("the answer is over its cap")

// Error is a request whose answer could not be had or used.
type Error struct {
	// Request is the method and the URL without its query and user
	// information: "GET http://127.0.0.1:8601/api/miniapps".
	Request string
	// Status is the answer's status code; 0 when there was no answer.
	Status int
	// StatusText is the answer's status line ("404 Not Found").
	StatusText string
	// Max is the cap on the answer's body, in bytes.
	Max int64
	// Reason says what was wrong; Err is the cause, if any.
	Reason string
	Err    error
}

func (e *Error) Error() string {
	msg := e.Request + ": " + e.Reason
	if e.Err != nil && !errors.Is(e.Err, ErrTooLarge) {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Answer is an HTTP answer read whole within its cap.
type Answer struct {
	// Request is the method and URL (Error.Request).
	Request    string
	Status     int
	StatusText string
	Header     http.Header
	Body       []byte
	// Max is the cap the body was read within.
	Max int64
}

// Do sends req with c (nil: http.DefaultClient) and reads its answer with
// [Read]. A failure to get an answer is an *Error with Status 0.
func Do(c *http.Client, req *http.Request, max int64) (*Answer, error) {
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the method and URL
		}
		return nil, &Error{Request: describe(req), Max: max, Reason: "no answer", Err: err}
	}
	return Read(resp, max)
}

// Read reads resp's body, at most max bytes, and closes it. An answer
// whose body (or declared Content-Length) is over max is an *Error
// wrapping ErrTooLarge, which says the cap.
func Read(resp *http.Response, max int64) (*Answer, error) {
	defer resp.Body.Close()
	a := &Answer{Request: describe(resp.Request), Status: resp.StatusCode, StatusText: statusText(resp), Header: resp.Header, Max: max}
	if resp.ContentLength > max {
		return nil, a.tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, a.fail(fmt.Sprintf("reading the answer (%s)", a.StatusText), err)
	}
	if int64(len(body)) > max {
		return nil, a.tooLarge()
	}
	a.Body = body
	return a, nil
}

// Call sends req with [Do], wants a 2xx status and decodes the answer's
// JSON into v (nil: the body is not read as JSON).
func Call(c *http.Client, req *http.Request, max int64, v any) (*Answer, error) {
	a, err := Do(c, req, max)
	if err != nil {
		return nil, err
	}
	if err := a.WantOK(); err != nil {
		return a, err
	}
	if v != nil {
		if err := a.Decode(v); err != nil {
			return a, err
		}
	}
	return a, nil
}

// OK reports whether the status is 2xx.
func (a *Answer) OK() bool { return a.Status >= 200 && a.Status < 300 }

// WantOK is nil for a 2xx status, else an *Error that quotes the start of
// the answer.
func (a *Answer) WantOK() error {
	if a.OK() {
		return nil
	}
	reason := "answered " + a.StatusText + ", not 2xx"
	if b := bytes.TrimSpace(a.Body); len(b) > 0 {
		if len(b) > 200 {
			b = append(b[:200:200], "..."...)
		}
		reason += ": " + string(b)
	}
	return a.fail(reason, nil)
}

// Decode decodes the answer's JSON into v; an answer that is not JSON, or
// not the JSON v takes, is an *Error.
func (a *Answer) Decode(v any) error {
	if err := json.Unmarshal(a.Body, v); err != nil {
		return a.fail(fmt.Sprintf("the answer (%s, %d bytes) is not the expected JSON", a.StatusText, len(a.Body)), err)
	}
	return nil
}

func (a *Answer) fail(reason string, err error) *Error {
	return &Error{Request: a.Request, Status: a.Status, StatusText: a.StatusText, Max: a.Max, Reason: reason, Err: err}
}

func (a *Answer) tooLarge() *Error {
	return a.fail(fmt.Sprintf("the answer (%s) is over the cap of %d bytes", a.StatusText, a.Max), ErrTooLarge)
}

// describe is a request's method and URL without query, fragment or user
// information, which may hold secrets.
func describe(req *http.Request) string {
	if req == nil || req.URL == nil {
		return "a request"
	}
	u := *req.URL
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	s := u.String()
	if req.URL.RawQuery != "" {
		s += "?..."
	}
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	return m + " " + s
}

func statusText(resp *http.Response) string {
	if s := strings.TrimSpace(resp.Status); s != "" {
		return s
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
}
