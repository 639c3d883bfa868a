package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/netshape"
)

// network is the window's network conditions for the Miniapp's view
// (docs/playground.md, "Network conditions and mocks"): one proxy
// (package netshape) started the first time a launch has conditions, on
// 127.0.0.1 behind a random credential. From then on every Miniapp view
// of the window goes through it, passing requests through unchanged while
// no conditions are set. The host's own requests (native consent, the
// confidential callback, the token request, discovery) are made by this
// process with Options.HTTPClient and never reach it: the conditions are
// the Miniapp's network only. Window embeds it: its exported methods are
// the Window's.
type network struct {
	eng          Engine
	always       bool // start the proxy with the first launch, conditions or not (Options.NetworkProxy)
	loopbackOnly bool // Options.NetworkLoopbackOnly
	// viewNet is the mounted Miniapp and the network log's flow its
	// view's requests belong to now (Window.viewNet).
	viewNet func() (*Miniapp, *netlog.Flow, time.Time)

	mu    sync.Mutex // guards proxy; held while the proxy starts and the engine takes it
	proxy *netshape.Proxy
}

// SetNetwork makes c the network conditions of the Miniapp's view from
// its next request on, until the next launch (Mount takes the launch's
// own, Miniapp.Network) or the next SetNetwork. Mocked answers are recorded
// in the launch's network log, marked injected.
func (n *network) SetNetwork(ctx context.Context, c netshape.Conditions) error {
	if err := netshape.Compile(c.Mocks); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proxy == nil {
		if c.IsZero() && !n.always {
			return nil
		}
		p, err := netshape.Start(netshape.Options{OnInjected: n.injected, LoopbackOnly: n.loopbackOnly})
		if err != nil {
			return err
		}
		if err := awaitErr(ctx, n.eng, "network proxy", func(done func(error)) {
			n.eng.SetMiniappProxy(p.URL())
			done(nil)
		}); err != nil {
			p.Close()
			return err
		}
		n.proxy = p
	}
	return n.proxy.Set(c)
}

// Network is the network conditions of the Miniapp's view now.
func (n *network) Network() netshape.Conditions {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proxy == nil {
		return netshape.Conditions{}
	}
	return n.proxy.Conditions()
}

// closeNetwork stops the proxy (Terminate).
func (n *network) closeNetwork() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proxy != nil {
		n.proxy.Close()
	}
}

// injected records a mocked answer in the launch's network log: in the
// consent flow the view's requests belong to now, else in the launch's
// network flow (netlog.Launch.Injected).
func (n *network) injected(inj netshape.Injected) {
	app, nf, until := n.viewNet()
	if app == nil || app.NetLog == nil {
		return
	}
	x := netlog.Exchange{Source: netlog.SourceView, Kind: netlog.KindResource, Method: inj.Method, URL: inj.URL,
		RequestHeader: inj.RequestHeader, RequestSize: -1, Status: inj.Status, ResponseHeader: inj.Header,
		ResponseBody: inj.Body, ResponseSize: int64(len(inj.Body)), Started: inj.Started, FirstByte: inj.Ended, Done: inj.Ended,
		Injected: netlog.InjectedMock}
	if nf != nil && (until.IsZero() || !inj.Started.After(until)) && !nf.Ended() {
		nf.Add(x)
		return
	}
	app.NetLog.Injected(x)
}

var _ bridge.NetworkController = (*controller)(nil)

// SetNetwork implements bridge.NetworkController: the automation channel's
// network.set and network.clear.
func (c *controller) SetNetwork(ctx context.Context, cmd bridge.NetworkCommand) (bridge.NetworkResult, error) {
	if err := checkView(cmd.View); err != nil {
		return bridge.NetworkResult{}, err
	}
	return c.w.SetNetworkCommand(ctx, cmd)
}

// SetNetworkCommand carries out a network.set or network.clear command:
// cmd's conditions replace the view's. A throttle or a mock rule that
// cannot be read is refused as invalid_params, naming the field (a mock
// rule's by its JSON pointer, /mocks/0/status).
func (n *network) SetNetworkCommand(ctx context.Context, cmd bridge.NetworkCommand) (bridge.NetworkResult, error) {
	c, err := NetworkOf(cmd.Throttle, cmd.Mocks)
	if err != nil {
		return bridge.NetworkResult{}, bridge.Errorf(bridge.CodeInvalidParams, "%v", err)
	}
	if err := n.SetNetwork(ctx, c); err != nil {
		return bridge.NetworkResult{}, err
	}
	return bridge.NetworkResult{Throttle: c.Throttle.String(), Mocks: len(c.Mocks)}, nil
}

// NetworkOf reads network conditions as the command line and the
// automation channel give them: a throttle as `--network` takes it, and a
// JSON array of mock rules (nil for none).
func NetworkOf(throttle string, mocks []byte) (netshape.Conditions, error) {
	var c netshape.Conditions
	var err error
	if c.Throttle, err = netshape.ParseThrottle(throttle); err != nil {
		return c, fmt.Errorf("throttle: %w", err)
	}
	if len(mocks) > 0 {
		if c.Mocks, err = netshape.ParseRules(mocks); err != nil {
			return c, err
		}
	}
	return c, nil
}
