//go:build !(linux && cgo)

package host

import (
	"errors"
	"testing"
)

func TestNoWebviewBuild(t *testing.T) {
	if _, err := NewWindow(Options{DataDir: t.TempDir()}); !errors.Is(err, ErrNoWebview) {
		t.Fatalf("NewWindow = %v, want ErrNoWebview", err)
	}
}
