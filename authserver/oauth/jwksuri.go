package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/go-jose/go-jose/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// Keys at a jwks_uri (RFC 7591 §2; OpenID Connect Core §10.1.1 on key
// rotation): a private_key_jwt client may register the URL where it
// publishes its JWK Set instead of the keys themselves. The server fetches
// it when it first needs it and keeps it for jwksTTL; an assertion whose
// kid the kept set lacks makes it fetch again at once (the client rotated
// its keys), at most once per jwksRefetch per URL, so that assertions with
// made-up kids cannot make the server hammer the client's host. A fetch is
// bounded: jwksTimeout for the whole exchange, maxJWKSBody bytes, no
// redirect, and, outside development (FAPIConfig.LocalJWKSURI), only
// public addresses: the dialer refuses every address the address policy
// does not call public (origin.AddrRule: loopback, private, link-local and
// the other special-purpose blocks, in whatever IPv6 form carries them)
// after the name is resolved, so a registered URL cannot make the server
// call the services of its own network (docs/fapi.md, "Keys at a
// jwks_uri"). Why a fetch failed is logged, never told the caller, who
// has not been authenticated yet (clientKeys).

const (
	// jwksTTL is how long a fetched JWK Set is used before it is fetched
	// again.
	jwksTTL = 5 * time.Minute
	// jwksRefetch is the least time between two fetches of one URL.
	jwksRefetch = 10 * time.Second
	// jwksTimeout bounds one fetch, connection and body included.
	jwksTimeout = 5 * time.Second
	// maxJWKSBody bounds a fetched JWK Set.
	maxJWKSBody = 64 << 10
	// maxJWKSCache bounds the URLs whose sets are kept; past it the cache
	// starts again empty.
	maxJWKSCache = 10_000
)

// jwksCache fetches and keeps the JWK Sets of jwks_uri clients.
type jwksCache struct {
	hc      *http.Client
	now     func() time.Time
	timeout time.Duration // of one fetch: jwksTimeout
	tracer  trace.Tracer  // a client span per fetch, its traceparent sent (docs/deploy.md, "Traces")

	mu      sync.Mutex
	entries map[string]*jwksEntry
}

// jwksEntry is the state of one URL. Its own mutex serializes fetches of
// that URL: concurrent assertions wait for one fetch.
type jwksEntry struct {
	mu      sync.Mutex
	keys    *jose.JSONWebKeySet // nil until a fetch succeeded
	expires time.Time           // keys are used until then
	fetched time.Time           // the last fetch, successful or not
	err     error               // the last fetch's failure, if it failed
}

func newJWKSCache(local bool, now func() time.Time) *jwksCache {
	d := &net.Dialer{Timeout: jwksTimeout}
	if !local {
		d.Control = publicOnly
	}
	tr := &http.Transport{
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    jwksTimeout,
		ResponseHeaderTimeout:  jwksTimeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        time.Minute,
	}
	return &jwksCache{
		timeout: jwksTimeout,
		hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the jwks_uri redirects: register the URL that serves the set")
		}},
		now:     now,
		tracer:  noTracer,
		entries: map[string]*jwksEntry{},
	}
}

// publicOnly is the dialer's check, after name resolution, that the
// address is a public one (net.Dialer.Control): the address policy of
// package origin (origin.AddrRule), the same the dashboard applies to the
// URL's host at registration, so that a name that resolves to a private
// address only when fetched (DNS rebinding) is refused too.
func publicOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("oauth: jwks_uri: address %q: %w", address, err)
	}
	if rule := origin.AddrRule(ap.Addr()); rule != "" {
		return fmt.Errorf("oauth: jwks_uri resolves to %s, %s, which this server does not fetch outside development", ap.Addr(), rule)
	}
	return nil
}

// keys returns the JWK Set at uri. kid is the key the caller looks for
// (or ""): when the kept set lacks it, the set is fetched again, unless
// it was fetched less than jwksRefetch ago.
func (c *jwksCache) keys(ctx context.Context, uri, kid string) (*jose.JSONWebKeySet, error) {
	c.mu.Lock()
	e, ok := c.entries[uri]
	if !ok {
		if len(c.entries) >= maxJWKSCache {
			clear(c.entries)
		}
		e = &jwksEntry{}
		c.entries[uri] = e
	}
	c.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.now()
	fresh := e.keys != nil && now.Before(e.expires)
	known := fresh && (kid == "" || len(e.keys.Key(kid)) > 0)
	recent := !e.fetched.IsZero() && now.Sub(e.fetched) < jwksRefetch
	switch {
	case known:
		return e.keys, nil
	case recent && fresh:
		return e.keys, nil // an unknown kid, but the set was just fetched
	case recent && e.err != nil:
		return nil, e.err
	}
	keys, err := c.fetch(ctx, uri)
	e.fetched = c.now()
	if err != nil {
		e.err = err
		if fresh {
			return e.keys, nil // keep using the set still valid
		}
		return nil, err
	}
	e.keys, e.expires, e.err = keys, e.fetched.Add(jwksTTL), nil
	return keys, nil
}

// fetch GETs the JWK Set at uri and checks it.
func (c *jwksCache) fetch(ctx context.Context, uri string) (_ *jose.JSONWebKeySet, err error) {
	// A caller that goes away does not cut the fetch others wait for.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, fmt.Errorf("the jwks_uri %s cannot be requested: %v", uri, err)
	}
	ctx, span := c.tracer.Start(ctx, spanJWKSFetch, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", http.MethodGet), attribute.String("server.address", req.URL.Hostname())))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}()
	req = req.WithContext(ctx)
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	telemetry.Inject(ctx, req.Header)
	a, err := jsonhttp.Do(c.hc, req, maxJWKSBody)
	var je *jsonhttp.Error
	switch {
	case errors.Is(err, jsonhttp.ErrTooLarge):
		return nil, fmt.Errorf("the jwks_uri %s serves more than %d bytes: a JWK Set of a few public keys is far smaller", uri, maxJWKSBody)
	case errors.As(err, &je) && je.Status == 0:
		return nil, fmt.Errorf("the jwks_uri %s could not be fetched: %v", uri, je.Err)
	case err != nil:
		return nil, fmt.Errorf("the jwks_uri %s: reading the set: %v", uri, err)
	case a.Status != http.StatusOK:
		return nil, fmt.Errorf("the jwks_uri %s answered %s, not 200 with the JWK Set", uri, a.StatusText)
	}
	body := a.Body
	set := new(jose.JSONWebKeySet)
	if err := json.Unmarshal(body, set); err != nil {
		return nil, fmt.Errorf("the jwks_uri %s does not serve a JWK Set (RFC 7517 section 5): %v", uri, err)
	}
	if err := usableKeys(set); err != nil {
		return nil, fmt.Errorf("the jwks_uri %s: %v", uri, err)
	}
	return set, nil
}

// usableKeys checks a fetched set as the dashboard checks one registered
// inline: public keys only, each EC P-256, RSA of 2048 bits or more, or
// Ed25519.
func usableKeys(set *jose.JSONWebKeySet) error {
	if len(set.Keys) == 0 {
		return errors.New("the set has no keys")
	}
	for i, k := range set.Keys {
		switch pk := k.Key.(type) {
		case *ecdsa.PublicKey:
			if pk.Curve != elliptic.P256() {
				return fmt.Errorf("key %d is an EC key on another curve than P-256", i)
			}
		case *rsa.PublicKey:
			if pk.N.BitLen() < 2048 {
				return fmt.Errorf("key %d is an RSA key of %d bits, under 2048", i, pk.N.BitLen())
			}
		case ed25519.PublicKey:
		default:
			return fmt.Errorf("key %d is not a public EC P-256, RSA or Ed25519 key (a private or symmetric key is refused)", i)
		}
	}
	return nil
}
