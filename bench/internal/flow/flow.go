// Package flow is what the benchmark drivers share (bench/peer/flowdriver
// and bench/side-by-side/driver): an OAuth 2.0 authorization-code flow
// (PKCE S256, resource, authorization_details) walked through a server's
// own HTML sign-in and consent forms up to the redirect to redirect_uri
// (never contacted), the token request, the discovery document, and the
// counting of a run's results. Loopback only: every URL the walk would
// follow is checked first. Standard library only.
package flow

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is what a flow needs of its driver's flags.
type Config struct {
	ClientID    string
	Secret      string // client_secret (client_secret_basic)
	RedirectURI string // never contacted
	Scope       string // "" for none
	Resource    string // "" for none
	Details     string // authorization_details JSON, "" for none
	Prompt      string // "" for none
	Login       string // typed into empty text, email and password inputs
	MaxSteps    int    // HTTP hops between authorize and the redirect to the client
	// PressButton makes a form's submit send the pressed button's
	// name=value, as a browser does: the first button whose value is in
	// Press, else the form's first submit button. Without it no button's
	// value is sent.
	PressButton bool
	Press       []string
	// Do sends a request; nil: the client's Do.
	Do func(*http.Client, *http.Request) (*http.Response, error)
}

// AddFlags registers the flags that set c on fs, with the defaults of the
// benchmark's peer (bench/peer/server.mjs); SetResource completes
// -resource once the flags are parsed.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.ClientID, "client", "bench-code", "client_id")
	fs.StringVar(&c.Secret, "secret", "bench-code-secret", "client_secret (client_secret_basic)")
	fs.StringVar(&c.RedirectURI, "redirect", "http://127.0.0.1:9/cb", "redirect_uri (never contacted)")
	fs.StringVar(&c.Scope, "scope", "openid offline_access api:read", "scope parameter (empty: none)")
	fs.StringVar(&c.Resource, "resource", "", "resource indicator (default: <issuer>/api; '-' for none)")
	fs.StringVar(&c.Details, "details", `[{"type":"bank_account","actions":["read","transfer"],"identifier":"acct-0001"}]`, "authorization_details JSON ('' for none)")
	fs.StringVar(&c.Prompt, "prompt", "consent", "prompt parameter ('' for none; offline_access needs consent)")
	fs.StringVar(&c.Login, "login", "bench-user", "value typed into empty text/email/password inputs")
	fs.IntVar(&c.MaxSteps, "max-steps", 12, "max HTTP hops between authorize and the redirect to the client")
}

// SetResource turns -resource into the resource indicator: "" is
// <issuer>/api, "-" none.
func (c *Config) SetResource(issuer string) {
	if c.Resource == "" {
		c.Resource = strings.TrimRight(issuer, "/") + "/api"
	} else if c.Resource == "-" {
		c.Resource = ""
	}
}

func (c *Config) do(client *http.Client, req *http.Request) (*http.Response, error) {
	if c.Do != nil {
		return c.Do(client, req)
	}
	return client.Do(req)
}

// Endpoints are the two endpoints of the discovery document a flow uses.
type Endpoints struct{ Authorization, Token string }

// RequireLoopback refuses a URL whose host is not localhost or a loopback
// address.
func RequireLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("refusing non-loopback URL %q", raw)
	}
	return nil
}

// NewTransport is the drivers' HTTP transport for c concurrent workers:
// no proxy, keep-alive connections for all of them, no compression.
func NewTransport(c int) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        c * 4,
		MaxIdleConnsPerHost: c * 4,
		IdleConnTimeout:     60 * time.Second,
		DisableCompression:  true,
	}
}

// Discover reads the issuer's OpenID discovery document.
func Discover(transport *http.Transport, issuer string, timeout time.Duration) (Endpoints, error) {
	c := &http.Client{Transport: transport, Timeout: timeout}
	u := strings.TrimRight(issuer, "/") + "/.well-known/openid-configuration"
	resp, err := c.Get(u)
	if err != nil {
		return Endpoints{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return Endpoints{}, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var doc struct {
		Authorization string `json:"authorization_endpoint"`
		Token         string `json:"token_endpoint"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return Endpoints{}, err
	}
	if doc.Authorization == "" || doc.Token == "" {
		return Endpoints{}, fmt.Errorf("discovery lacks authorization_endpoint/token_endpoint")
	}
	return Endpoints{Authorization: doc.Authorization, Token: doc.Token}, nil
}

// RandB64 is n random bytes, base64url without padding.
func RandB64(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// AuthorizeURL is an authorization request to endpoint with a fresh PKCE
// verifier (S256) and state, which it returns too.
func (c *Config) AuthorizeURL(endpoint string) (u, state, verifier string, err error) {
	verifier = RandB64(32) // 43 characters
	sum := sha256.Sum256([]byte(verifier))
	state = RandB64(16)
	q := url.Values{}
	q.Set("client_id", c.ClientID)
	q.Set("response_type", "code")
	q.Set("redirect_uri", c.RedirectURI)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	q.Set("state", state)
	for k, v := range map[string]string{"scope": c.Scope, "resource": c.Resource, "authorization_details": c.Details, "prompt": c.Prompt} {
		if v != "" {
			q.Set(k, v)
		}
	}
	authURL, err := url.Parse(endpoint)
	if err != nil {
		return "", "", "", err
	}
	authURL.RawQuery = q.Encode()
	return authURL.String(), state, verifier, nil
}

// WalkToCode follows redirects and submits HTML forms from start until the
// server redirects to redirect_uri; it returns the code from that
// redirect and the requests it made.
func (c *Config) WalkToCode(client *http.Client, start, state string) (string, int, error) {
	redirect, err := url.Parse(c.RedirectURI)
	if err != nil {
		return "", 0, err
	}
	req, _ := http.NewRequest(http.MethodGet, start, nil)
	for step := 0; step < c.MaxSteps; step++ {
		resp, err := c.do(client, req)
		if err != nil {
			return "", 0, fmt.Errorf("step %d %s %s: %w", step, req.Method, req.URL.Path, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return "", 0, fmt.Errorf("step %d read: %w", step, err)
		}
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			loc, err := resp.Location()
			if err != nil {
				return "", 0, fmt.Errorf("step %d: %s without Location", step, resp.Status)
			}
			if sameEndpoint(loc, redirect) {
				code, err := codeFrom(loc, state)
				return code, step + 1, err
			}
			if err := RequireLoopback(loc.String()); err != nil {
				return "", 0, err
			}
			req, _ = http.NewRequest(http.MethodGet, loc.String(), nil)
		case resp.StatusCode == 200:
			f, err := parseForm(body, c.PressButton, c.Press)
			if err != nil {
				return "", 0, fmt.Errorf("step %d %s %s: %w: %s", step, req.Method, req.URL.Path, err, Trim(body))
			}
			action, err := req.URL.Parse(f.action)
			if err != nil {
				return "", 0, fmt.Errorf("step %d: bad form action %q", step, f.action)
			}
			if err := RequireLoopback(action.String()); err != nil {
				return "", 0, err
			}
			vals := url.Values{}
			for _, in := range f.inputs {
				v := in.value
				switch in.typ {
				case "text", "email", "password", "":
					if v == "" {
						v = c.Login
					}
				case "checkbox", "radio":
					if !in.checked {
						continue
					}
					if v == "" {
						v = "on"
					}
				}
				vals.Add(in.name, v)
			}
			if f.method == "get" {
				action.RawQuery = vals.Encode()
				req, _ = http.NewRequest(http.MethodGet, action.String(), nil)
			} else {
				req, _ = http.NewRequest(http.MethodPost, action.String(), strings.NewReader(vals.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
		default:
			return "", 0, fmt.Errorf("step %d %s %s: %s: %s", step, req.Method, req.URL.Path, resp.Status, Trim(body))
		}
	}
	return "", 0, fmt.Errorf("no redirect to redirect_uri after %d steps", c.MaxSteps)
}

func sameEndpoint(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && a.Host == b.Host && a.Path == b.Path
}

func codeFrom(loc *url.URL, state string) (string, error) {
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("authorization error %s: %s", e, q.Get("error_description"))
	}
	if q.Get("state") != state {
		return "", fmt.Errorf("state mismatch in redirect")
	}
	code := q.Get("code")
	if code == "" {
		return "", fmt.Errorf("redirect without code: %s", loc.RawQuery)
	}
	return code, nil
}

// Token is what a token response held.
type Token struct {
	Body                         []byte
	RAR, Refresh, IDToken, JWTAT bool // authorization_details, refresh_token, id_token, a JWT access_token
}

// Redeem POSTs the code to the token endpoint (client_secret_basic and the
// code_verifier) and requires an access_token in the answer.
func (c *Config) Redeem(client *http.Client, tokenURL, code, verifier string) (Token, error) {
	form := url.Values{}
	form.Set("grant_type", "authorization_code")
	form.Set("code", code)
	form.Set("redirect_uri", c.RedirectURI)
	form.Set("code_verifier", verifier)
	req, _ := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.Secret))
	resp, err := c.do(client, req)
	if err != nil {
		return Token{}, fmt.Errorf("token: %w", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return Token{}, fmt.Errorf("token: read: %w", err)
	}
	if resp.StatusCode != 200 {
		return Token{}, fmt.Errorf("token: %s: %s", resp.Status, Trim(body))
	}
	var tr struct {
		AccessToken  string            `json:"access_token"`
		RefreshToken string            `json:"refresh_token"`
		IDToken      string            `json:"id_token"`
		Details      []json.RawMessage `json:"authorization_details"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		return Token{}, fmt.Errorf("token: bad JSON: %w", err)
	}
	if tr.AccessToken == "" {
		return Token{}, fmt.Errorf("token: no access_token: %s", Trim(body))
	}
	return Token{Body: body, RAR: len(tr.Details) > 0, Refresh: tr.RefreshToken != "", IDToken: tr.IDToken != "",
		JWTAT: strings.Count(tr.AccessToken, ".") == 2}, nil
}

// Result is one measured operation: a flow, or a redemption.
type Result struct {
	Dur      time.Duration
	Err      error
	Requests int // HTTP requests it made
	Token        // of the token response, when Err is nil (Body not kept)
}

// Parallel calls f(i) for every i in [0, n) on min(c, n) goroutines and
// returns when all have returned.
func Parallel(n, c int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(c, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// Run runs n operations op on c workers, starting none after maxDuration:
// those are ErrSkipped. It returns the results in order, the time it took
// and whether the bound stopped it. op times itself (Result.Dur).
func Run(n, c int, maxDuration time.Duration, op func() Result) (results []Result, elapsed time.Duration, stopped bool) {
	results = make([]Result, n)
	deadline := time.Now().Add(maxDuration)
	var stop atomic.Bool
	start := time.Now()
	Parallel(n, c, func(i int) {
		if time.Now().After(deadline) {
			stop.Store(true)
			results[i] = Result{Err: ErrSkipped}
			return
		}
		results[i] = op()
	})
	return results, time.Since(start), stop.Load()
}

// ErrSkipped marks an operation not started because the run's bound was
// reached; Collect leaves it out.
var ErrSkipped = errors.New("skipped (max-duration reached)")

// Counted is a run's results without the skipped ones, counted.
type Counted struct {
	Results    []Result
	OK, Errors int
}

// Collect counts results, leaving out the skipped ones.
func Collect(results []Result) Counted {
	var c Counted
	for _, r := range results {
		if errors.Is(r.Err, ErrSkipped) {
			continue
		}
		c.Results = append(c.Results, r)
		if r.Err != nil {
			c.Errors++
		} else {
			c.OK++
		}
	}
	return c
}

// Summary is what a report says of a run's results.
type Summary struct {
	Latencies                    []time.Duration // of the successful ones, sorted
	Requests                     int             // HTTP requests of the successful ones
	RAR, Refresh, IDToken, JWTAT int             // token responses with each
	ErrorSamples                 map[string]int  // each error message (at most 200 bytes) and how often
}

// Summarize sums results up for a report.
func Summarize(results []Result) Summary {
	s := Summary{ErrorSamples: map[string]int{}}
	for _, x := range results {
		if x.Err != nil {
			msg := x.Err.Error()
			if len(msg) > 200 {
				msg = msg[:200]
			}
			s.ErrorSamples[msg]++
			continue
		}
		s.Latencies = append(s.Latencies, x.Dur)
		s.Requests += x.Requests
		if x.RAR {
			s.RAR++
		}
		if x.Refresh {
			s.Refresh++
		}
		if x.IDToken {
			s.IDToken++
		}
		if x.JWTAT {
			s.JWTAT++
		}
	}
	sort.Slice(s.Latencies, func(i, j int) bool { return s.Latencies[i] < s.Latencies[j] })
	return s
}

// Pct is the nearest-rank p-quantile of sorted durations; 0 of none.
func Pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	k := int(float64(len(s))*p+0.999999) - 1 // nearest rank
	k = max(0, min(k, len(s)-1))
	return s[k]
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Trim is b on one line, at most 300 bytes, for an error message.
func Trim(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
