package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
)

// openWithChannel runs Open with its automation channel on the fake
// engine and connects to the channel once the first Miniapp has loaded.
func openWithChannel(t *testing.T, cfg host.OpenConfig) (*hosttest.Engine, *client.Client) {
	t.Helper()
	var eng *hosttest.Engine
	rec := hosttest.NewRecorder()
	cfg.Automation, cfg.AutomationFile, cfg.OnEvent = true, filepath.Join(t.TempDir(), "automation.json"), rec.Add
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- host.Open(ctx, hosttest.Factory(&eng), cfg) }()
	t.Cleanup(func() { cancel(); <-done })
	rec.Wait(t, "the first Miniapp loaded", hosttest.Kind(host.EventLoadFinished))
	raw, err := os.ReadFile(cfg.AutomationFile)
	if err != nil {
		t.Fatal(err)
	}
	var info host.AutomationInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(t.Context(), info.URL, info.Token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return eng, c
}

// TestOpenGivesEachMiniappItsData: `open` starts the Miniapp's view on the
// data of the Miniapp it was given, in its own folder; the automation
// channel's open of another Miniapp hands the engine that Miniapp's data,
// in a folder of its own, before anything of it loads; opened again, the
// first Miniapp gets its own data back (docs/host.md, "Each Miniapp's
// data").
func TestOpenGivesEachMiniappItsData(t *testing.T) {
	srv, a := hosttest.StartServer(t)
	b := hosttest.StartPublic(t, srv, "demo-public-b")
	u := srv.URLs()
	root := t.TempDir()
	eng, c := openWithChannel(t, host.OpenConfig{Origin: a.Origin, ID: "demo-public", Dashboard: u.Dashboard, Service: u.Issuer,
		Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret, DataRoot: root})
	dataA := host.MiniappData{Key: host.DataKey(a.Origin, "demo-public"), Dir: host.MiniappDir(root, a.Origin, "demo-public")}
	dataB := host.MiniappData{Key: host.DataKey(b.Origin, "demo-public-b"), Dir: host.MiniappDir(root, b.Origin, "demo-public-b")}
	if got := eng.Config().Miniapp; got != dataA {
		t.Fatalf("the window started with data %+v, want A's %+v", got, dataA)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, x := range []struct {
		origin, id string
		want       host.MiniappData
	}{{b.Origin, "demo-public-b", dataB}, {a.Origin, "demo-public", dataA}} {
		if _, err := c.Open(ctx, x.origin, x.id); err != nil {
			t.Fatal(err)
		}
		uses := eng.DataUses()
		if len(uses) == 0 || uses[len(uses)-1] != x.want {
			t.Fatalf("after the channel's open of %s the engine was given %+v, want %+v last", x.origin, uses, x.want)
		}
		if fi, err := os.Stat(x.want.Dir); err != nil || !fi.IsDir() {
			t.Errorf("the data folder of %s: %v", x.origin, err)
		}
	}
	if dataA.Dir == dataB.Dir || dataA.Key == dataB.Key {
		t.Errorf("A and B share data: %+v %+v", dataA, dataB)
	}
}

// TestOpenWebDriverKeepsItsMiniapp: a WebDriver session holds the
// Miniapp's view, which keeps its Miniapp's data, so the channel's open of
// another Miniapp is refused, saying why, and the first stays mounted.
func TestOpenWebDriverKeepsItsMiniapp(t *testing.T) {
	srv, a := hosttest.StartServer(t)
	b := hosttest.StartPublic(t, srv, "demo-public-b")
	u := srv.URLs()
	eng, c := openWithChannel(t, host.OpenConfig{Origin: a.Origin, ID: "demo-public", Dashboard: u.Dashboard, Service: u.Issuer,
		Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret, Ephemeral: true, WebDriver: true})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var refused *client.Error
	if _, err := c.Open(ctx, b.Origin, "demo-public-b"); !errors.As(err, &refused) || refused.Code != bridge.CodeCommandFailed {
		t.Fatalf("open of another Miniapp under WebDriver: %v, want %s", err, bridge.CodeCommandFailed)
	}
	if loads := eng.Loads(host.ViewMiniapp); len(loads) != 1 {
		t.Errorf("the Miniapp's view loaded %v, want the first Miniapp only", loads)
	}
	if uses := eng.DataUses(); len(uses) != 1 || uses[0].Key != host.DataKey(a.Origin, "demo-public") {
		t.Errorf("the engine was given %+v, want the first Miniapp's data only", uses)
	}
}
