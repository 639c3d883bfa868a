package host_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
)

// TestDownloadsSayWhere: a file a page of the window downloads is saved in
// the download folder under its own name, a second one of the same name
// beside it rather than over it, a name with a path in it stays in the
// folder, and each says on the channel where it went; the host's consent
// view downloads nothing.
func TestDownloadsSayWhere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Downloads")
	c := newCore(t, host.Options{DownloadDir: dir})
	for _, tc := range []struct {
		view            host.View
		suggested, want string
	}{
		{host.ViewLauncher, "flow-f2.har", "flow-f2.har"},
		{host.ViewLauncher, "flow-f2.har", "flow-f2 (2).har"},
		{host.ViewMiniapp, "../../.bashrc", ".bashrc"},
		{host.ViewLauncher, "..", "download"},
	} {
		path := c.eng.Download(tc.view, tc.suggested, []byte("{}"))
		if path != filepath.Join(dir, tc.want) {
			t.Errorf("%s's download of %q went to %q, want %s in %s", tc.view, tc.suggested, path, tc.want, dir)
			continue
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "{}" {
			t.Errorf("%s: %q %v", path, b, err)
		}
		ev := c.rec.Wait(t, "the download of "+tc.want, func(e host.Event) bool { return e.Kind == host.EventDownload && e.URL == path })
		if ev.Detail != "" {
			t.Errorf("download to %s: error %q", path, ev.Detail)
		}
	}
	if path := c.eng.Download(host.ViewHost, "x.txt", nil); path != "" {
		t.Errorf("the host's view downloaded to %q", path)
	}
	var events []host.DownloadEvent
	for _, e := range c.bus.all() {
		if d, ok := e.(host.DownloadEvent); ok {
			events = append(events, d)
		}
	}
	if len(events) != 5 || events[0] != (host.DownloadEvent{View: "launcher", Filename: "flow-f2.har", Path: filepath.Join(dir, "flow-f2.har")}) ||
		events[2].View != "miniapp" || events[4].Path != "" || events[4].Error == "" || events[4].View != "host" {
		t.Errorf("download events %+v", events)
	}
}
