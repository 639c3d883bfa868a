//go:build linux && cgo

// W3C WebDriver (docs/webdriver.md). WebKitWebDriver starts the host with
// WEBKIT_INSPECTOR_SERVER in its environment; a web context that allows
// automation connects to it, and when the driver asks for a session the
// context emits automation-started. The session then asks for a browsing
// context with create-web-view, which must answer with a view made with
// the construct-only property is-controlled-by-automation. mh_setup makes
// the Miniapp's view so, on the Miniapp's web context, which allows
// automation (mh_webdriver_allow), and gives it everything it gives any
// Miniapp view (signals, settings, content manager, the overlay with the
// host's view), so navigation policy, consent and completion are the same
// with and without WebDriver.

#include <libsoup/soup.h>
#include "webkit.h"

// The Miniapp's view, handed to the first browsing context a session asks
// for. The window has no second one: a later request (WebDriver's New
// Window) gets none, and the driver says it could not create a window.
typedef struct {
	WebKitWebView *view;
	int handed;
} mh_webdriver;

static WebKitWebView *on_create_web_view(WebKitAutomationSession *session, gpointer data) {
	(void)session;
	mh_webdriver *wd = data;
	if (wd->handed) return NULL;
	wd->handed = 1;
	return wd->view; // transfer none: the window keeps it
}

// on_close is WebDriver's Close Window and Delete Session, which close the
// session's browsing context: the host closes its window, as when the user
// closes it, so the process ends as it does then (an ephemeral data folder
// removed) instead of waiting for the driver to kill it.
static void on_close(WebKitWebView *view, gpointer data) {
	(void)data;
	GtkWidget *top = gtk_widget_get_toplevel(GTK_WIDGET(view));
	if (GTK_IS_WINDOW(top)) gtk_window_close(GTK_WINDOW(top));
}

// on_automation_started names the browser for the session's capabilities
// (browserName "miniapp-host") and hands it the Miniapp's view.
static void on_automation_started(WebKitWebContext *ctx, WebKitAutomationSession *session, gpointer data) {
	(void)ctx;
	WebKitApplicationInfo *info = webkit_application_info_new();
	webkit_application_info_set_name(info, "miniapp-host");
	webkit_application_info_set_version(info, webkit_get_major_version(), webkit_get_minor_version(),
	                                    webkit_get_micro_version());
	webkit_automation_session_set_application_info(session, info);
	webkit_application_info_unref(info);
	g_signal_connect(session, "create-web-view", G_CALLBACK(on_create_web_view), data);
}

// mh_webdriver_allow allows automation on the Miniapp's web context, before
// its view is made. Only one web context of a process may.
void mh_webdriver_allow(WebKitWebContext *ctx) { webkit_web_context_set_automation_allowed(ctx, TRUE); }

// mh_webdriver_attach hands view, the Miniapp's view made controlled by
// automation on ctx, to the session that asks for a browsing context, and
// makes the session's Close Window close the window.
void mh_webdriver_attach(WebKitWebContext *ctx, WebKitWebView *view) {
	g_signal_connect(view, "close", G_CALLBACK(on_close), NULL);
	mh_webdriver *wd = g_new0(mh_webdriver, 1);
	wd->view = view;
	g_signal_connect(ctx, "automation-started", G_CALLBACK(on_automation_started), wd);
}

// mh_webkit_api is the WebKitGTK API this file was compiled against: 41
// (libsoup 3) or 40 (libsoup 2).
int mh_webkit_api(void) { return SOUP_MAJOR_VERSION >= 3 ? 41 : 40; }
