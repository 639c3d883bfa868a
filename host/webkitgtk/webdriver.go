//go:build linux && cgo

package webkitgtk

/*
#include "webkit.h"
*/
import "C"

import (
	"fmt"
	"os"
)

// API is the WebKitGTK API this build links: "4.1" (libsoup 3) or "4.0"
// (libsoup 2). WebKitWebDriver is built on 4.1: against a 4.0 host, element
// click, element send keys and actions answer "unsupported operation"
// (docs/webdriver.md, "Limits").
func API() string {
	if C.mh_webkit_api() == 41 {
		return "4.1"
	}
	return "4.0"
}

// BuildAPI is the WebKitGTK API this build was asked to link: "4.1" by
// default, "4.0" with the build tag webkit2_40 (api41.go, api40.go).
func BuildAPI() string { return buildAPI }

// webdriverEnv prepares the process's environment for WebDriver, before
// any window exists. WebDriver's Take Screenshot crashes the UI process
// (a NULL dereference in WebKit, WebKitGTK 2.50.6) when compositing is
// off, and the session then waits for ever for its answer: a window
// WebDriver drives composites, whatever WEBKIT_DISABLE_COMPOSITING_MODE
// asks. WebKit reads the variable when a view is realized and passes the
// environment on to its web processes.
func webdriverEnv() error {
	if err := os.Unsetenv("WEBKIT_DISABLE_COMPOSITING_MODE"); err != nil {
		return fmt.Errorf("webkitgtk: webdriver: %w", err)
	}
	return nil
}
