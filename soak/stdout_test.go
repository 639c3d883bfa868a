package soak

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestReadStdout: the playground's printed block is read whole (the
// launcher without its fragment, the channel, the token, every demo
// Miniapp, the subjects) and sent once, when the window says the launcher
// is loaded (at once without a window); the token is never logged.
func TestReadStdout(t *testing.T) {
	block := []string{
		"launcher http://127.0.0.1:9/launcher#k=secret",
		"automation channel  ws://127.0.0.1:8/automation",
		"automation token  tok-secret",
		"demo Miniapp  http://127.0.0.1:7  --id shop  (demo)",
		"demo Miniapp  http://127.0.0.1:6  --id pay  (demo)",
		"subjects  sub_ana, sub_bob , sub_carla (sign in as any)",
		"demo Miniapp  short",
	}
	want := started{launcher: "http://127.0.0.1:9/launcher", automationURL: "ws://127.0.0.1:8/automation", token: "tok-secret",
		demos:    map[string]string{"shop": "http://127.0.0.1:7", "pay": "http://127.0.0.1:6"},
		subjects: []string{"sub_ana", "sub_bob", "sub_carla"}}
	for _, tc := range []struct {
		name     string
		lines    []string
		noWindow bool
		sent     bool
	}{
		{"no window", block, true, true},
		{"window loaded", append(append([]string{}, block...), "window  the launcher is loaded", "window  the launcher is loaded"), false, true},
		{"window not loaded", append(append([]string{}, block...), "window  opening"), false, false},
		{"no token", append([]string{}, block[:2]...), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			p := &playground{log: &log}
			up := make(chan started, 2)
			p.readStdout(strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), up, tc.noWindow)
			close(up)
			var got []started
			for s := range up {
				got = append(got, s)
			}
			switch {
			case !tc.sent && len(got) != 0:
				t.Errorf("sent %+v before the block was whole", got)
			case tc.sent && (len(got) != 1 || !reflect.DeepEqual(got[0], want)):
				t.Errorf("sent %+v, want once %+v", got, want)
			}
			if strings.Contains(log.String(), "secret") {
				t.Errorf("the log holds a secret:\n%s", log.String())
			}
			if !strings.Contains(log.String(), "stdout launcher …") || !strings.Contains(log.String(), "stdout automation channel  ws://") {
				t.Errorf("the log lacks the lines:\n%s", log.String())
			}
		})
	}
}
