//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
)

// TestEvalAwaitsPromise: the automation channel's eval (docs/automation.md)
// of a script that completes with a Promise returns the Promise's settled
// value, once it settles; a rejection is an error naming the reason; a
// script that completes with a plain value, or throws, is answered as
// before, in the page's global scope.
func TestEvalAwaitsPromise(t *testing.T) {
	e := testEnv(t)
	clearCookies(t)
	ctl := testWin.Controller(func(context.Context, bridge.OpenCommand) error { return errors.New("not in this test") })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	mount(t, publicApp(t, e, nil))
	for _, tc := range []struct{ name, script, want, err string }{
		{"plain value", `document.title`, `"Demo public Miniapp"`, ""},
		{"undefined", `void 0`, `null`, ""},
		{"resolved", `Promise.resolve(42)`, `42`, ""},
		{"settles later", `new Promise((resolve) => setTimeout(() => resolve({title: document.title, n: [1, 2]}), 50))`,
			`{"title":"Demo public Miniapp","n":[1,2]}`, ""},
		{"async function", `(async () => { await null; return "done"; })()`, `"done"`, ""},
		{"a var is global", `var evalPromiseGlobal = 7; evalPromiseGlobal`, `7`, ""},
		{"seen by the next", `window.evalPromiseGlobal + 1`, `8`, ""},
		{"rejected with an Error", `Promise.reject(new TypeError("no such account"))`, "", "the Promise was rejected: TypeError: no such account"},
		{"rejected with a value", `new Promise((_, reject) => setTimeout(() => reject({reason: "denied"}), 10))`, "", `the Promise was rejected: {"reason":"denied"}`},
		{"throws", `throw new RangeError("out of range")`, "", "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ctl.Eval(ctx, bridge.EvalCommand{Script: tc.script})
			switch {
			case tc.err == "" && (err != nil || !sameJSON(string(out), tc.want)):
				t.Errorf("eval %s: %s %v, want %s", tc.script, out, err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("eval %s: %s %v, want an error naming %q", tc.script, out, err, tc.err)
			}
		})
	}
}

// sameJSON reports whether a and b are the same JSON value, whatever the
// order of their members.
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}
