package authserver

import (
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/metrics"
)

// newMetrics returns the metrics of a server with Config.MetricsAddr, nil
// (none recorded) without; an address off loopback without
// Config.MetricsPublic is a *SettingError.
func newMetrics(cfg Config) (*metrics.Metrics, error) {
	if cfg.MetricsAddr == "" {
		return nil, nil
	}
	if err := metrics.CheckAddr(cfg.MetricsAddr, cfg.MetricsPublic); err != nil {
		ae := err.(*metrics.AddrError)
		return nil, &SettingError{Field: "MetricsAddr", Key: ae.Addr, Rule: ae.Rule}
	}
	return metrics.New(), nil
}

// listenMetrics opens the metrics listener, nil without metrics. An
// address another process holds is a *SettingError naming it.
func listenMetrics(cfg Config, mx *metrics.Metrics) (net.Listener, error) {
	if mx == nil {
		return nil, nil
	}
	ln, err := cfg.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, &SettingError{Field: "MetricsAddr", Key: cfg.MetricsAddr,
			Rule: fmt.Sprintf("cannot listen there (%v): another process may hold it; choose another address, or port 0 for a free one", err)}
	}
	return ln, nil
}

// serveMetrics serves GET metrics.Path on ln until Shutdown, with the
// limits of every listener; Shutdown stops it with the roles.
func (s *Server) serveMetrics(mx *metrics.Metrics, ln net.Listener, hc httplimit.Config, errorLog *log.Logger) {
	mux := http.NewServeMux()
	mux.Handle("GET "+metrics.Path, mx.Handler())
	hs := httplimit.Server(mux, hc, errorLog)
	s.servers = append(s.servers, hs)
	s.listen.Metrics = ln.Addr().String()
	s.urls.Metrics = "http://" + s.listen.Metrics + metrics.Path
	go hs.Serve(ln)
}
