package httplimit

import (
	"log"
	"net/http"
	"time"
)

// Config bounds an http.Server. Zero values mean the defaults named on
// each field.
type Config struct {
	// ReadHeaderTimeout is how long a client may take to send the request
	// line and headers; default 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client may take to send a whole request,
	// headers and body: a body that stalls is cut at this deadline and the
	// connection closed. Default 30s, ample for the largest body any
	// endpoint accepts on a slow link.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response; default 60s.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request; default 2 minutes.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers; default 256 KiB,
	// room for the longest authorization request the service accepts in a
	// URL (docs/authserver.md, Limits) and far below net/http's 1 MiB.
	MaxHeaderBytes int
	// MaxConnsPerSource caps the concurrent connections of one source IP
	// address (Listener); default 256.
	MaxConnsPerSource int
	// TrustedProxies are reverse proxies in front of the server: their
	// connections are not capped per source, and the per-source quotas of
	// the requests they forward count the client they name (Proxies).
	TrustedProxies Proxies
}

// Defaults of Config.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 256 << 10
	DefaultMaxConnsPerSource = 256
)

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.MaxConnsPerSource <= 0 {
		c.MaxConnsPerSource = DefaultMaxConnsPerSource
	}
	return c
}

// Server returns an http.Server for h with c's timeouts and header cap.
// The ReadTimeout deadline covers the body too: net/http sets it on the
// connection when it starts reading a request, so a handler blocked on a
// body that stopped arriving gets an error at the deadline and the
// connection is closed, instead of holding a descriptor for ever.
func Server(h http.Handler, c Config, errorLog *log.Logger) *http.Server {
	c = c.WithDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    c.MaxHeaderBytes,
		ErrorLog:          errorLog,
	}
}
