package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/miniapp-host/miniapp-host/origin"
)

// canonicalOrigin is raw's origin as the origin policy writes it; raw
// itself when it does not parse.
func canonicalOrigin(raw string) string {
	if o, err := origin.Parse(raw); err == nil {
		return o.String()
	}
	return raw
}

// DataKey is the identity of a Miniapp's data (MiniappData.Key): its
// canonical origin and its manifest id.
func DataKey(rawOrigin, id string) string { return canonicalOrigin(rawOrigin) + "\n" + id }

// MiniappDir is the data folder of the Miniapp at rawOrigin with manifest
// id under root: named after the canonical origin, with a hash of the
// origin and the id that keeps any character of either out of the path
// and tells two ids on one origin apart.
func MiniappDir(root, rawOrigin, id string) string {
	name := canonicalOrigin(rawOrigin)
	sum := sha256.Sum256([]byte(name + "\n" + id))
	label := strings.NewReplacer("://", "_", ":", "_", "/", "_").Replace(name)
	if len(label) > 60 {
		label = label[:60]
	}
	return filepath.Join(root, label+"-"+hex.EncodeToString(sum[:6]))
}

// dataOf is the data of the Miniapp at rawOrigin with manifest id id: in
// memory for an ephemeral window, else its folder under Options.DataRoot,
// made when missing.
func (o *Options) dataOf(rawOrigin, id string) (MiniappData, error) {
	d := MiniappData{Key: DataKey(rawOrigin, id)}
	if o.Ephemeral {
		return d, nil
	}
	d.Dir = MiniappDir(o.DataRoot, rawOrigin, id)
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return MiniappData{}, fmt.Errorf("host: data folder: %w", err)
	}
	return d, nil
}

// appData is the data of a Miniapp the window mounts (Miniapp.Origin and
// ID; without an Origin, that of its start URL, else its load URL).
func (o *Options) appData(app *Miniapp) (MiniappData, error) {
	at := app.Origin
	if at == "" {
		u := app.reloadURL()
		at = u.Scheme + "://" + u.Host
	}
	return o.dataOf(at, app.ID)
}

// ForgetMiniapp removes what the engine keeps for the Miniapp at rawOrigin
// with manifest id id: its cookies, local storage, IndexedDB, caches (not
// session storage). Each Miniapp's data is its own, so no other Miniapp,
// on the same host or not, loses anything.
func (w *Window) ForgetMiniapp(ctx context.Context, rawOrigin, id string) error {
	o, err := origin.Parse(rawOrigin)
	if err != nil {
		return fmt.Errorf("host: reset storage: %w", err)
	}
	if o.IsOpaque() {
		return errors.New("host: reset storage needs an http(s) origin")
	}
	d, err := w.opts.dataOf(rawOrigin, id)
	if err != nil {
		return err
	}
	return awaitErr(ctx, w.eng, "reset storage", func(done func(error)) { w.eng.ForgetData(d, done) })
}
