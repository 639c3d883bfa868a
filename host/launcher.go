package host

import (
	"errors"
	"fmt"

	"github.com/miniapp-host/miniapp-host/origin"
)

// ShowLauncher loads the launcher page at u in its view and shows it. Only
// u's origin loads there afterwards. The window must have been made with
// Options.Launcher.
func (w *Window) ShowLauncher(u string) error {
	o, err := origin.OfString(u)
	if err != nil || o.IsOpaque() {
		return fmt.Errorf("host: launcher URL %q has no http(s) origin", u)
	}
	if !w.opts.Launcher {
		return errors.New("host: this window has no launcher (Options.Launcher)")
	}
	w.mu.Lock()
	w.launcherAt = o
	w.mu.Unlock()
	w.Dispatch(func() {
		w.eng.Load(ViewLauncher, u)
		w.eng.ShowPage(PageLauncher)
	})
	return nil
}
