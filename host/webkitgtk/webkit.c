//go:build linux && cgo

// C bodies of the WebKitGTK engine. A cgo file that uses //export may only
// declare C in its preamble, so the bodies live here and reach Go through
// _cgo_export.h. Every function here runs on the GTK main thread, but
// mh_dispatch, which any thread may call.

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libsoup/soup.h>
#include "webkit.h"
#include <math.h>
#include "_cgo_export.h"

// Signals (docs/webkitgtk.md, "Signals").
//
// JavaScriptCore runs in this process too: WebKitGTK hands script results
// and messages over as JSCValues of a VM in the UI process. Its garbage
// collector suspends the threads registered with the VM, the GTK main
// thread among them, by sending them the thread-suspend signal (WTF's
// sigThreadSuspendResume: SIGUSR1, or JSC_SIGNAL_FOR_GC). Its handler
// (WTF::Thread::signalHandlerSuspendResume) records the registers and
// sleeps in sigsuspend, but only when it runs on the thread's own stack:
// on any other stack it backs off, and the collector retries until it
// succeeds. Two consequences for a Go process:
//
// - The handler must not get SA_ONSTACK. With it, it always runs on the
//   alternate signal stack Go gives every thread, always backs off, and
//   the collector retries for ever while the main thread waits for it in
//   JSC::Heap::acquireAccessSlow: the window freezes and, its main loop
//   stuck, ignores SIGINT and SIGTERM.
// - Without SA_ONSTACK, the handler runs on whatever stack the thread is
//   on, and the main thread also runs Go code, on a goroutine stack that
//   may not have room for a signal frame. So the signal is blocked while
//   the main thread runs Go code (MH_TO_GO, and around the main loop) and
//   delivered when it returns to C, on the thread's own stack. The
//   collector meanwhile waits on its semaphore, not in a loop; Go code on
//   the main thread never calls into JavaScriptCore, so it cannot wait on
//   the collector in turn.
//
// Every other handler that C code installs without SA_ONSTACK gets it: Go
// needs it of every handler that may run on a Go thread (a signal arriving
// on a goroutine stack would overflow it, and Go's own handler, which
// JSC's SIGSEGV and SIGBUS handlers chain to, must run on the signal
// stack). JavaScriptCore installs some lazily, from its own timers on the
// main loop (SIGXCPU, after the first script results), so the check runs
// each time the main thread enters Go, before any Go code runs: about 28
// sigaction reads, a few microseconds.

static int mh_suspend_sig = SIGUSR1;
static sigset_t mh_suspend_set;

static void mh_fix_signals(void);

// MH_TO_GO wraps every call from C into Go.
#define MH_TO_GO(call)                                                   \
	do {                                                                 \
		sigset_t mh_old_;                                                \
		pthread_sigmask(SIG_BLOCK, &mh_suspend_set, &mh_old_);           \
		mh_fix_signals();                                                \
		call;                                                            \
		pthread_sigmask(SIG_SETMASK, &mh_old_, NULL);                    \
	} while (0)

// mh_fix_signals gives SA_ONSTACK to every handler of a standard signal
// that lacks it, but the thread-suspend signal's.
static void mh_fix_signals(void) {
	for (int sig = 1; sig < 32; sig++) {
		if (sig == mh_suspend_sig || sig == SIGKILL || sig == SIGSTOP) continue;
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) != 0) continue;
		if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN) continue;
		if (sa.sa_flags & SA_ONSTACK) continue;
		sa.sa_flags |= SA_ONSTACK;
		sigaction(sig, &sa, NULL);
	}
}

// mh_init_signals learns the suspend signal as WTF does, makes the UI
// process's JavaScriptCore install its handlers now (a VM is made with the
// first JSCContext) rather than at the first script result, and applies
// mh_fix_signals. The main thread goes back to Go with the suspend signal
// blocked.
void mh_init_signals(void) {
	const char *s = getenv("JSC_SIGNAL_FOR_GC");
	int v = 0;
	if (s && sscanf(s, "%d", &v) == 1 && v > 0 && v < 65) mh_suspend_sig = v;
	sigemptyset(&mh_suspend_set);
	sigaddset(&mh_suspend_set, mh_suspend_sig);
	JSCContext *ctx = jsc_context_new();
	JSCValue *val = jsc_context_evaluate(ctx, "0", -1);
	if (val) g_object_unref(val);
	g_object_unref(ctx);
	mh_fix_signals();
	mh_block_suspend();
}

int mh_suspend_signal(void) { return mh_suspend_sig; }

void mh_block_suspend(void) { pthread_sigmask(SIG_BLOCK, &mh_suspend_set, NULL); }

void mh_unblock_suspend(void) { pthread_sigmask(SIG_UNBLOCK, &mh_suspend_set, NULL); }

// mh_signals_without_onstack lists the standard signals whose handler is
// not Go's default and lacks SA_ONSTACK (for the tests); it returns how
// many, writing at most max of them to out.
int mh_signals_without_onstack(int *out, int max) {
	int n = 0;
	for (int sig = 1; sig < 32; sig++) {
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) != 0) continue;
		if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN) continue;
		if (sa.sa_flags & SA_ONSTACK) continue;
		if (n < max) out[n] = sig;
		n++;
	}
	return n;
}

// mh_display_available is gtk_init_check: whether a display can be opened.
int mh_display_available(void) { return gtk_init_check(NULL, NULL) ? 1 : 0; }

// A view's reference for its signals: the engine's handle and which view.
typedef struct {
	uintptr_t handle;
	int view;
} mh_ref;

static mh_ref *mh_ref_new(uintptr_t handle, int view) {
	mh_ref *r = g_new0(mh_ref, 1);
	r->handle = handle;
	r->view = view;
	return r;
}

static const char *nav_uri(WebKitNavigationAction *a) {
	WebKitURIRequest *r = webkit_navigation_action_get_request(a);
	const char *u = r ? webkit_uri_request_get_uri(r) : NULL;
	return u ? u : "";
}

static const char *nav_method(WebKitNavigationAction *a) {
	WebKitURIRequest *r = webkit_navigation_action_get_request(a);
	const char *m = r ? webkit_uri_request_get_http_method(r) : NULL;
	return m ? m : "GET";
}

// on_decide_policy hands every navigation and new-window action of a view
// to Go, which answers allow (0) or ignore (1). Responses are WebKit's.
static gboolean on_decide_policy(WebKitWebView *view, WebKitPolicyDecision *d, WebKitPolicyDecisionType type,
                                 gpointer data) {
	if (type != WEBKIT_POLICY_DECISION_TYPE_NAVIGATION_ACTION && type != WEBKIT_POLICY_DECISION_TYPE_NEW_WINDOW_ACTION) {
		return FALSE;
	}
	mh_ref *r = data;
	WebKitNavigationAction *a =
		webkit_navigation_policy_decision_get_navigation_action(WEBKIT_NAVIGATION_POLICY_DECISION(d));
	const char *frame = webkit_navigation_action_get_frame_name(a);
	int verdict = 1;
	MH_TO_GO(verdict = goDecide(r->handle, r->view, (char *)nav_uri(a), (char *)nav_method(a),
	                            (int)webkit_navigation_action_get_navigation_type(a),
	                            webkit_navigation_action_is_redirect(a), webkit_navigation_action_is_user_gesture(a),
	                            type == WEBKIT_POLICY_DECISION_TYPE_NEW_WINDOW_ACTION, (char *)(frame ? frame : "")));
	if (verdict == 0) {
		webkit_policy_decision_use(d);
	} else {
		webkit_policy_decision_ignore(d);
	}
	return TRUE;
}

// on_create is window.open (and target=_blank when no new-window decision
// is made): Go decides it like a navigation; no second view is ever made.
static GtkWidget *on_create(WebKitWebView *view, WebKitNavigationAction *a, gpointer data) {
	mh_ref *r = data;
	MH_TO_GO(goDecide(r->handle, r->view, (char *)nav_uri(a), "GET", -1, 0, webkit_navigation_action_is_user_gesture(a), 1,
	                  ""));
	return NULL;
}

static void on_load_changed(WebKitWebView *view, WebKitLoadEvent ev, gpointer data) {
	mh_ref *r = data;
	const char *u = webkit_web_view_get_uri(view);
	MH_TO_GO(goLoadChanged(r->handle, r->view, (int)ev, (char *)(u ? u : "")));
}

static gboolean on_load_failed(WebKitWebView *view, WebKitLoadEvent ev, gchar *uri, GError *err, gpointer data) {
	mh_ref *r = data;
	MH_TO_GO(goLoadFailed(r->handle, r->view, (char *)(uri ? uri : ""), err ? err->code : 0,
	                      (char *)(err && err->message ? err->message : "")));
	return FALSE;
}

static void on_terminated(WebKitWebView *view, WebKitWebProcessTerminationReason reason, gpointer data) {
	mh_ref *r = data;
	MH_TO_GO(goWebProcessTerminated(r->handle, (int)reason));
}

static void on_responsive(GObject *obj, GParamSpec *p, gpointer data) {
	mh_ref *r = data;
	MH_TO_GO(goResponsive(r->handle, webkit_web_view_get_is_web_process_responsive(WEBKIT_WEB_VIEW(obj))));
}

// on_input records real user input on the Miniapp's view for
// openExternal, which must not take the page's word for a gesture
// (docs/bridge.md, "What the host implements"). An event with send_event
// set was sent by another X client, not typed or clicked, so it does not
// count. It returns FALSE: WebKit still gets every event.
static gboolean on_input(GtkWidget *w, GdkEvent *ev, gpointer data) {
	mh_ref *r = data;
	if (ev->any.send_event) return FALSE;
	switch (ev->type) {
	case GDK_KEY_PRESS:
	case GDK_BUTTON_PRESS:
	case GDK_TOUCH_BEGIN:
		MH_TO_GO(goUserInput(r->handle));
		break;
	default:
		break;
	}
	return FALSE;
}

// Resource loads of the Miniapp's view, for the network log (docs/host.md,
// "Network log"). resource-load-started gives a WebKitWebResource and its
// request; the resource's sent-request signal gives the request as sent
// (and each redirect's response), notify::response the time its response
// came, failed the error, and finished (emitted after failed too) the
// end. Everything reaches Go once per request, as plain strings and
// integers, through MH_TO_GO.

// Bounds of the header text handed to Go: the log keeps no more.
#define MH_MAX_HEADERS 64
#define MH_MAX_HEADER_VALUE 4096

typedef struct {
	mh_ref *ref;
	char *method;
	char *uri;
	char *req_headers;
	char *error;
	gint64 started, responded; // g_get_real_time(), microseconds
} mh_res;

static void mh_res_free(gpointer data) {
	mh_res *r = data;
	g_free(r->method);
	g_free(r->uri);
	g_free(r->req_headers);
	g_free(r->error);
	g_free(r);
}

// headers_text writes headers as "Name: value" lines, at most
// MH_MAX_HEADERS of them, each value cut at MH_MAX_HEADER_VALUE bytes.
static char *headers_text(SoupMessageHeaders *h) {
	GString *s = g_string_new(NULL);
	if (h) {
		SoupMessageHeadersIter it;
		const char *name, *value;
		int n = 0;
		soup_message_headers_iter_init(&it, h);
		while (n < MH_MAX_HEADERS && soup_message_headers_iter_next(&it, &name, &value)) {
			size_t len = strnlen(value, MH_MAX_HEADER_VALUE);
			g_string_append_printf(s, "%s: %.*s\n", name, (int)len, value);
			n++;
		}
	}
	return g_string_free(s, FALSE);
}

static void mh_res_request(mh_res *r, WebKitURIRequest *req) {
	const char *m = webkit_uri_request_get_http_method(req);
	const char *u = webkit_uri_request_get_uri(req);
	g_free(r->method);
	g_free(r->uri);
	g_free(r->req_headers);
	r->method = g_strdup(m ? m : "GET");
	r->uri = g_strdup(u ? u : "");
	r->req_headers = headers_text(webkit_uri_request_get_http_headers(req));
}

// mh_res_report hands one request and its response (NULL: none) to Go.
static void mh_res_report(mh_res *r, WebKitURIResponse *resp, const char *err) {
	int status = 0;
	long long size = -1;
	char *resp_headers = NULL;
	const char *mime = NULL;
	if (resp) {
		status = (int)webkit_uri_response_get_status_code(resp);
		guint64 cl = webkit_uri_response_get_content_length(resp);
		if (cl > 0) size = (long long)cl;
		mime = webkit_uri_response_get_mime_type(resp);
		resp_headers = headers_text(webkit_uri_response_get_http_headers(resp));
	}
	MH_TO_GO(goResourceLoaded(r->ref->handle, r->method, r->uri, r->req_headers, status,
	                          resp_headers ? resp_headers : "", (char *)(mime ? mime : ""), size, r->started,
	                          r->responded, g_get_real_time(), (char *)(err ? err : "")));
	g_free(resp_headers);
}

static void on_resource_sent(WebKitWebResource *res, WebKitURIRequest *req, WebKitURIResponse *redirected,
                             gpointer data) {
	mh_res *r = data;
	if (redirected) {
		// A redirect: its hop is a request of its own, as HAR lists it.
		if (!r->responded) r->responded = g_get_real_time();
		mh_res_report(r, redirected, NULL);
		r->started = g_get_real_time();
		r->responded = 0;
	}
	// The request as sent has more headers than at its start.
	mh_res_request(r, req);
}

static void on_resource_response(GObject *obj, GParamSpec *p, gpointer data) {
	mh_res *r = data;
	if (!r->responded) r->responded = g_get_real_time();
}

static void on_resource_failed(WebKitWebResource *res, GError *err, gpointer data) {
	mh_res *r = data;
	g_free(r->error);
	r->error = g_strdup(err && err->message ? err->message : "the load failed");
}

static void on_resource_finished(WebKitWebResource *res, gpointer data) {
	mh_res *r = data;
	mh_res_report(r, webkit_web_resource_get_response(res), r->error);
}

static void on_resource_started(WebKitWebView *view, WebKitWebResource *res, WebKitURIRequest *req, gpointer data) {
	mh_res *r = g_new0(mh_res, 1);
	r->ref = data;
	r->started = g_get_real_time();
	mh_res_request(r, req);
	// The record lives as long as the resource.
	g_object_set_data_full(G_OBJECT(res), "miniapp-host-resource", r, mh_res_free);
	g_signal_connect(res, "sent-request", G_CALLBACK(on_resource_sent), r);
	g_signal_connect(res, "notify::response", G_CALLBACK(on_resource_response), r);
	g_signal_connect(res, "failed", G_CALLBACK(on_resource_failed), r);
	g_signal_connect(res, "finished", G_CALLBACK(on_resource_finished), r);
}

// on_script_message hands a page's message to Go as a string: no JSCValue
// ever reaches Go code.
static void on_script_message(WebKitUserContentManager *m, WebKitJavascriptResult *res, gpointer data) {
	mh_ref *r = data;
	char *s = jsc_value_to_string(webkit_javascript_result_get_js_value(res));
	MH_TO_GO(goScriptMessage(r->handle, r->view, s));
	g_free(s);
}

// on_console_message hands a message of the console capture script to Go
// as a string, cut to MH_CONSOLE_MAX bytes (host.ConsoleMaxRaw + 1: the
// core drops a longer one); not a string is handed over as "", which the
// core counts as not the script's.
#define MH_CONSOLE_MAX (128 * 1024 + 1)
static void on_console_message(WebKitUserContentManager *m, WebKitJavascriptResult *res, gpointer data) {
	mh_ref *r = data;
	JSCValue *v = webkit_javascript_result_get_js_value(res);
	if (!jsc_value_is_string(v)) {
		MH_TO_GO(goConsoleMessage(r->handle, "", 0));
		return;
	}
	char *s = jsc_value_to_string(v);
	size_t n = strlen(s);
	MH_TO_GO(goConsoleMessage(r->handle, s, (int)(n > MH_CONSOLE_MAX ? MH_CONSOLE_MAX : n)));
	g_free(s);
}

// Downloads (host.EngineEvents.DownloadDestination, docs/playground.md,
// "Downloads"). A download of one of the window's views (its mh_ref is on
// it) is saved where Go says, and its end reported to Go with where it
// went; a download of another view (the web inspector's) is WebKit's.

typedef struct {
	mh_ref *ref;
	char *suggested;
	char *path;
	char *error;
} mh_dl;

static void mh_dl_free(gpointer data) {
	mh_dl *d = data;
	g_free(d->suggested);
	g_free(d->path);
	g_free(d->error);
	g_free(d);
}

static gboolean on_download_decide(WebKitDownload *dl, gchar *suggested, gpointer data) {
	mh_dl *d = data;
	g_free(d->suggested);
	d->suggested = g_strdup(suggested ? suggested : "");
	char *path = NULL;
	MH_TO_GO(path = goDownloadDestination(d->ref->handle, d->ref->view, d->suggested));
	if (!path || !*path) {
		free(path);
		webkit_download_cancel(dl);
		return TRUE;
	}
	GError *err = NULL;
	char *uri = g_filename_to_uri(path, NULL, &err);
	if (!uri) {
		g_free(d->error);
		d->error = g_strdup(err ? err->message : "not a file name");
		if (err) g_error_free(err);
		free(path);
		webkit_download_cancel(dl);
		return TRUE;
	}
	g_free(d->path);
	d->path = g_strdup(path);
	free(path);
	webkit_download_set_allow_overwrite(dl, FALSE);
	webkit_download_set_destination(dl, uri);
	g_free(uri);
	return TRUE;
}

static void on_download_failed(WebKitDownload *dl, GError *err, gpointer data) {
	mh_dl *d = data;
	if (d->error) return; // the first reason
	d->error = g_strdup(err && err->message ? err->message : "the download failed");
}

static void on_download_finished(WebKitDownload *dl, gpointer data) {
	mh_dl *d = data;
	MH_TO_GO(goDownloadFinished(d->ref->handle, d->ref->view, d->suggested ? d->suggested : "", d->path ? d->path : "",
	                            d->error ? d->error : ""));
}

static void on_download_started(WebKitWebContext *ctx, WebKitDownload *dl, gpointer data) {
	WebKitWebView *v = webkit_download_get_web_view(dl);
	mh_ref *r = v ? g_object_get_data(G_OBJECT(v), "mh-ref") : NULL;
	if (!r) return;
	mh_dl *d = g_new0(mh_dl, 1);
	d->ref = r;
	// The record lives as long as the download.
	g_object_set_data_full(G_OBJECT(dl), "miniapp-host-download", d, mh_dl_free);
	g_signal_connect(dl, "decide-destination", G_CALLBACK(on_download_decide), d);
	g_signal_connect(dl, "failed", G_CALLBACK(on_download_failed), d);
	g_signal_connect(dl, "finished", G_CALLBACK(on_download_finished), d);
}

// watch_downloads reports the downloads of the web context of view, once
// per context.
static void watch_downloads(WebKitWebView *view) {
	WebKitWebContext *ctx = webkit_web_view_get_context(view);
	if (!ctx || g_object_get_data(G_OBJECT(ctx), "miniapp-host-downloads")) return;
	g_object_set_data(G_OBJECT(ctx), "miniapp-host-downloads", GINT_TO_POINTER(1));
	g_signal_connect(ctx, "download-started", G_CALLBACK(on_download_started), NULL);
}

// new_view makes a view with a content manager of its own, so that no
// script, filter or message handler of another view reaches it, and
// connects the signals every view reports.
static WebKitWebView *new_view(WebKitWebContext *ctx, uintptr_t handle, int view, const char *handler) {
	WebKitUserContentManager *ucm = webkit_user_content_manager_new();
	mh_ref *r = mh_ref_new(handle, view);
	if (handler) {
		char sig[64];
		snprintf(sig, sizeof sig, "script-message-received::%s", handler);
		g_signal_connect(ucm, sig, G_CALLBACK(on_script_message), r);
		webkit_user_content_manager_register_script_message_handler(ucm, handler);
	}
	WebKitWebView *v =
		WEBKIT_WEB_VIEW(g_object_new(WEBKIT_TYPE_WEB_VIEW, "web-context", ctx, "user-content-manager", ucm, NULL));
	g_object_unref(ucm);
	g_object_set_data(G_OBJECT(v), "mh-ref", r);
	watch_downloads(v);
	WebKitSettings *s = webkit_web_view_get_settings(v);
	webkit_settings_set_enable_developer_extras(s, FALSE);
	webkit_settings_set_javascript_can_open_windows_automatically(s, FALSE);
	g_signal_connect(v, "decide-policy", G_CALLBACK(on_decide_policy), r);
	g_signal_connect(v, "create", G_CALLBACK(on_create), r);
	g_signal_connect(v, "load-changed", G_CALLBACK(on_load_changed), r);
	return v;
}

// disable_feature turns a WebKit runtime feature off in settings.
static void disable_feature(WebKitSettings *s, const char *id) {
	WebKitFeatureList *l = webkit_settings_get_all_features();
	for (gsize i = 0; i < webkit_feature_list_get_length(l); i++) {
		WebKitFeature *f = webkit_feature_list_get(l, i);
		if (g_strcmp0(webkit_feature_get_identifier(f), id) == 0) webkit_settings_set_feature_enabled(s, f, FALSE);
	}
	webkit_feature_list_unref(l);
}

// The window (docs/webkitgtk.md, "The window"). The engine makes its own
// GtkWindow and views: no other library's cgo is linked, so the one
// pkg-config line of the build (api41.go or api40.go) decides the
// WebKitGTK API of the whole process.

static void on_window_destroy(GtkWidget *w, gpointer data) {
	(void)w;
	(void)data;
	mh_quit();
}

// mh_window_new makes the top-level window, not shown yet. Closing it
// ends the main loop. gtk_init_check has run (mh_display_available).
GtkWindow *mh_window_new(const char *title, int width, int height) {
	// WebKit's DMA-BUF renderer draws nothing on X11 with NVIDIA's driver
	// (WebKit bug 261874): without a choice of the user's, it is turned
	// off there before any view exists.
	if (!getenv("WEBKIT_DISABLE_DMABUF_RENDERER") && !getenv("WAYLAND_DISPLAY") &&
	    g_file_test("/sys/module/nvidia", G_FILE_TEST_IS_DIR)) {
		setenv("WEBKIT_DISABLE_DMABUF_RENDERER", "1", 1);
	}
	GtkWidget *win = gtk_window_new(GTK_WINDOW_TOPLEVEL);
	if (title && *title) gtk_window_set_title(GTK_WINDOW(win), title);
	if (width > 0 && height > 0) gtk_window_resize(GTK_WINDOW(win), width, height);
	g_signal_connect(win, "destroy", G_CALLBACK(on_window_destroy), NULL);
	return GTK_WINDOW(win);
}

static gboolean on_idle_quit(gpointer data) {
	(void)data;
	gtk_main_quit();
	return G_SOURCE_REMOVE;
}

// mh_quit asks the main loop to stop, from any thread: it stops when it
// next runs, so a quit asked before mh_run is not lost.
void mh_quit(void) { g_idle_add_full(G_PRIORITY_HIGH_IDLE, on_idle_quit, NULL, NULL); }

void mh_run(void) { gtk_main(); }

// mh_context_new makes the web context of one Miniapp's data: a website
// data manager of its own, so that no other Miniapp's view sees its
// cookies, local storage, IndexedDB or caches. With data_dir NULL
// everything is kept in memory; else under data_dir and cache_dir, with
// the cookies in the SQLite file cookies. With sandbox its web processes
// run in WebKitGTK's bubblewrap sandbox, asked before any of them starts
// (docs/webkitgtk.md, "The web process sandbox").
WebKitWebContext *mh_context_new(const char *data_dir, const char *cache_dir, const char *cookies, int sandbox) {
	WebKitWebsiteDataManager *m;
	if (!data_dir) {
		m = webkit_website_data_manager_new_ephemeral();
	} else {
		m = webkit_website_data_manager_new("base-data-directory", data_dir, "base-cache-directory", cache_dir, NULL);
		webkit_cookie_manager_set_persistent_storage(webkit_website_data_manager_get_cookie_manager(m), cookies,
		                                             WEBKIT_COOKIE_PERSISTENT_STORAGE_SQLITE);
	}
	WebKitWebContext *ctx = webkit_web_context_new_with_website_data_manager(m);
	g_object_unref(m);
	webkit_web_context_set_sandbox_enabled(ctx, sandbox ? TRUE : FALSE);
	return ctx;
}

// mh_set_proxy sends every request of ctx's network session through the
// HTTP proxy uri, loopback hosts included (no host is ignored); "" goes
// back to the system's settings. The same call exists in WebKitGTK 4.0 and
// 4.1 (webkit_website_data_manager_set_network_proxy_settings, 2.32).
void mh_set_proxy(WebKitWebContext *ctx, const char *uri) {
	WebKitWebsiteDataManager *m = webkit_web_context_get_website_data_manager(ctx);
	if (!uri || !*uri) {
		webkit_website_data_manager_set_network_proxy_settings(m, WEBKIT_NETWORK_PROXY_MODE_DEFAULT, NULL);
		return;
	}
	const gchar *const none[] = {NULL};
	WebKitNetworkProxySettings *s = webkit_network_proxy_settings_new(uri, none);
	webkit_website_data_manager_set_network_proxy_settings(m, WEBKIT_NETWORK_PROXY_MODE_CUSTOM, s);
	webkit_network_proxy_settings_free(s);
}

// The Miniapp views alive: made and not yet finalized. A view replaced by
// another must be finalized, or each launch of another Miniapp keeps the
// old view's memory in this process for as long as the window is open.
// Main thread only.
static int mh_miniapp_views;

static void on_miniapp_view_finalized(gpointer data, GObject *where) {
	(void)data;
	(void)where;
	mh_miniapp_views--;
}

int mh_live_miniapp_views(void) { return mh_miniapp_views; }

// The child widgets of Miniapp views alive, internal ones included: those
// a view had when it was made, not yet finalized. Main thread only.
static int mh_view_children;

static void on_view_child_finalized(gpointer data, GObject *where) {
	(void)data;
	(void)where;
	mh_view_children--;
}

static void track_child(GtkWidget *child, gpointer data) {
	(void)data;
	mh_view_children++;
	g_object_weak_ref(G_OBJECT(child), on_view_child_finalized, NULL);
}

static void count_child(GtkWidget *child, gpointer data) {
	(void)child;
	(*(int *)data)++;
}

// mh_live_view_children gives the children of Miniapp views alive, and in
// *current those the view has now.
int mh_live_view_children(WebKitWebView *view, int *current) {
	*current = 0;
	gtk_container_forall(GTK_CONTAINER(view), count_child, current);
	return mh_view_children;
}

// destroy_child destroys a child of a view that is being replaced, as
// GtkContainer's destroy would.
static void destroy_child(GtkWidget *child, gpointer data) {
	(void)data;
	gtk_widget_destroy(child);
}

// miniapp_view makes a Miniapp's view on ctx with the Miniapp views'
// content manager and settings (shared by every Miniapp view of the
// window, so scripts, message handlers, the content filter and developer
// extras carry over), and connects the signals the Miniapp's view
// reports.
static WebKitWebView *miniapp_view(WebKitWebContext *ctx, WebKitUserContentManager *ucm, WebKitSettings *s, mh_ref *r,
                                   int automation) {
	WebKitWebView *view = WEBKIT_WEB_VIEW(g_object_new(WEBKIT_TYPE_WEB_VIEW, "web-context", ctx, "user-content-manager",
	                                                   ucm, "settings", s, "is-controlled-by-automation",
	                                                   automation ? TRUE : FALSE, NULL));
	g_signal_connect(view, "decide-policy", G_CALLBACK(on_decide_policy), r);
	g_signal_connect(view, "create", G_CALLBACK(on_create), r);
	g_signal_connect(view, "load-changed", G_CALLBACK(on_load_changed), r);
	g_signal_connect(view, "load-failed", G_CALLBACK(on_load_failed), r);
	g_signal_connect(view, "web-process-terminated", G_CALLBACK(on_terminated), r);
	g_signal_connect(view, "notify::is-web-process-responsive", G_CALLBACK(on_responsive), r);
	// Connected on the Miniapp's view only: input on the host's view (the
	// consent screen) or any other widget proves nothing about the page.
	g_signal_connect(view, "key-press-event", G_CALLBACK(on_input), r);
	g_signal_connect(view, "button-press-event", G_CALLBACK(on_input), r);
	g_signal_connect(view, "touch-event", G_CALLBACK(on_input), r);
	// The network log's view requests: the Miniapp's view only, never the
	// host's consent view or the launcher.
	g_signal_connect(view, "resource-load-started", G_CALLBACK(on_resource_started), r);
	g_object_set_data(G_OBJECT(view), "mh-ref", r);
	watch_downloads(view);
	mh_miniapp_views++;
	g_object_weak_ref(G_OBJECT(view), on_miniapp_view_finalized, NULL);
	gtk_container_forall(GTK_CONTAINER(view), track_child, NULL);
	return view;
}

// The device area (docs/playground.md, "Devices"): the Miniapp's overlay in
// a frame that is the device's screen, centred on a plain background. A
// device of Width 0 (the desktop) fills the area. The frame is drawn with
// GTK CSS; the view inside it is the device's CSS viewport times the zoom,
// and the view's page zoom is that zoom, so the page lays out at the
// device's width whatever the zoom (WebKit's page zoom scales CSS pixels).
// One window per process: plain statics, UI thread only.
static GtkWidget *mh_overlay, *mh_frame, *mh_area, *mh_paned;
static WebKitWebView *mh_miniapp;
static struct {
	int width, height; // CSS pixels; 0: fill
	double zoom;       // 0: fit
	int bezel;         // draw the device's bezel
	double applied_zoom;
	int area_w, area_h; // the area's size the last layout was for
	guint idle;
} mh_dev = {0, 0, 0, 1, 1, 0, 0, 0};

static void mh_relayout(void) {
	if (!mh_area || !mh_frame) return;
	GtkStyleContext *sc = gtk_widget_get_style_context(mh_frame);
	int bezel = mh_dev.width > 0 && mh_dev.bezel ? MH_BEZEL : 0;
	// The bezel is the frame's background showing around the overlay: an
	// event box draws CSS backgrounds but takes no CSS padding.
	gtk_widget_set_margin_start(mh_overlay, bezel);
	gtk_widget_set_margin_end(mh_overlay, bezel);
	gtk_widget_set_margin_top(mh_overlay, bezel);
	gtk_widget_set_margin_bottom(mh_overlay, bezel);
	if (mh_dev.width <= 0) {
		gtk_style_context_remove_class(sc, "mh-bezel");
		gtk_widget_set_halign(mh_frame, GTK_ALIGN_FILL);
		gtk_widget_set_valign(mh_frame, GTK_ALIGN_FILL);
		gtk_widget_set_size_request(mh_overlay, -1, -1);
		mh_dev.applied_zoom = 1;
	} else {
		if (mh_dev.bezel) gtk_style_context_add_class(sc, "mh-bezel");
		else gtk_style_context_remove_class(sc, "mh-bezel");
		gtk_widget_set_halign(mh_frame, GTK_ALIGN_CENTER);
		gtk_widget_set_valign(mh_frame, GTK_ALIGN_CENTER);
		double z = mh_dev.zoom;
		if (z <= 0) {
			int room = 2 * (MH_AREA_MARGIN + (mh_dev.bezel ? MH_BEZEL : 0));
			double zw = (double)(mh_dev.area_w - room) / mh_dev.width;
			double zh = (double)(mh_dev.area_h - room) / mh_dev.height;
			z = MIN(1.0, MIN(zw, zh));
			// Quarter steps of a percent: WebKit rounds a zoom's layout to
			// 1/64 px, and a coarse zoom keeps innerWidth the device's.
			z = floor(z * 400) / 400;
			if (z < 0.25) z = 0.25;
		}
		mh_dev.applied_zoom = z;
		gtk_widget_set_size_request(mh_overlay, (int)ceil(mh_dev.width * z), (int)ceil(mh_dev.height * z));
	}
	if (mh_miniapp && webkit_web_view_get_zoom_level(mh_miniapp) != mh_dev.applied_zoom)
		webkit_web_view_set_zoom_level(mh_miniapp, mh_dev.applied_zoom);
}

static gboolean on_relayout_idle(gpointer data) {
	(void)data;
	mh_dev.idle = 0;
	mh_relayout();
	return G_SOURCE_REMOVE;
}

// A size change of the area refits the device after the layout pass that
// made it: a size request changed inside size-allocate would lay out again
// within the same pass.
static void on_area_allocate(GtkWidget *w, GdkRectangle *a, gpointer data) {
	(void)w;
	(void)data;
	if (a->width == mh_dev.area_w && a->height == mh_dev.area_h) return;
	mh_dev.area_w = a->width;
	mh_dev.area_h = a->height;
	if (mh_dev.zoom <= 0 && mh_dev.width > 0 && !mh_dev.idle) mh_dev.idle = g_idle_add(on_relayout_idle, NULL);
}

static GtkWidget *mh_device_area(GtkWidget *overlay) {
	static const char css[] =
	    ".mh-device-area { background: #d9dbe1; }\n"
	    ".mh-bezel { background: #1c1d21; border-radius: 28px; }\n";
	GtkCssProvider *p = gtk_css_provider_new();
	gtk_css_provider_load_from_data(p, css, -1, NULL);
	gtk_style_context_add_provider_for_screen(gdk_screen_get_default(), GTK_STYLE_PROVIDER(p),
	                                          GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
	g_object_unref(p);
	GtkWidget *area = gtk_event_box_new();
	gtk_style_context_add_class(gtk_widget_get_style_context(area), "mh-device-area");
	GtkWidget *frame = gtk_event_box_new();
	gtk_container_add(GTK_CONTAINER(frame), overlay);
	gtk_widget_set_margin_start(frame, 0);
	gtk_container_add(GTK_CONTAINER(area), frame);
	g_signal_connect(area, "size-allocate", G_CALLBACK(on_area_allocate), NULL);
	gtk_widget_show(frame);
	gtk_widget_show(area);
	mh_area = area;
	mh_frame = frame;
	mh_relayout();
	return area;
}

// mh_set_device shows the Miniapp as a device of width x height CSS pixels
// (0: the desktop, filling the area), at zoom (0: fit the area, at most
// 1), with or without its bezel.
void mh_set_device(int width, int height, double zoom, int bezel) {
	mh_dev.width = width;
	mh_dev.height = height;
	mh_dev.zoom = zoom;
	mh_dev.bezel = bezel;
	if (width > 0 && mh_area) {
		GtkAllocation a;
		gtk_widget_get_allocation(mh_area, &a);
		if (a.width > 1) {
			mh_dev.area_w = a.width;
			mh_dev.area_h = a.height;
		}
	}
	mh_relayout();
}

// mh_device_zoom is the zoom the Miniapp's view is shown at.
double mh_device_zoom(void) { return mh_dev.applied_zoom; }

// mh_set_style_sheet makes css the one user style sheet of the Miniapp
// views' content manager, in every frame ("" removes it).
void mh_set_style_sheet(WebKitWebView *view, const char *css) {
	WebKitUserContentManager *ucm = webkit_web_view_get_user_content_manager(view);
	webkit_user_content_manager_remove_all_style_sheets(ucm);
	if (!css || !*css) return;
	WebKitUserStyleSheet *ss = webkit_user_style_sheet_new(css, WEBKIT_USER_CONTENT_INJECT_ALL_FRAMES,
	                                                       WEBKIT_USER_STYLE_LEVEL_USER, NULL, NULL);
	webkit_user_content_manager_add_style_sheet(ucm, ss);
	webkit_user_style_sheet_unref(ss);
}

// mh_set_user_agent sets the Miniapp views' user agent; NULL or "" is
// WebKitGTK's own.
void mh_set_user_agent(WebKitWebView *view, const char *ua) {
	webkit_settings_set_user_agent(webkit_web_view_get_settings(view), ua && *ua ? ua : NULL);
}

// mh_set_languages sets the preferred languages of ctx (navigator.languages,
// Accept-Language, Intl's default locale): a NULL-terminated list. NULL
// would not give WebKit back its own choice, so the caller always gives
// one.
void mh_set_languages(WebKitWebContext *ctx, char **langs) {
	webkit_web_context_set_preferred_languages(ctx, (const gchar *const *)langs);
}

// mh_set_dark asks GTK for its dark variant, which WebKitGTK turns into
// prefers-color-scheme: dark in every view of the process.
void mh_set_dark(int dark) {
	g_object_set(gtk_settings_get_default(), "gtk-application-prefer-dark-theme", dark ? TRUE : FALSE, NULL);
}

// mh_snapshot_device writes what the screen shows of the device area's
// frame (with its bezel) as a PNG; "" or an error.
// mh_setup builds the window's views into views[] (host.View order): the
// Miniapp's view, on ctx (with webdriver: controlled by automation, and
// ctx allows automation), in an overlay whose top layer is the host's
// view, and, with launcher, a notebook whose first page is the launcher;
// then shows the window.
void mh_setup(GtkWindow *win, uintptr_t handle, int launcher, int layout, int devtools, int webdriver, int sandbox, WebKitWebContext *ctx,
              WebKitWebView **views) {
	mh_ref *r = mh_ref_new(handle, MH_VIEW_MINIAPP);

	WebKitSettings *vs = webkit_settings_new();
	// WebKit's popup blocker would drop window.open without a gesture
	// before the create signal: let every call reach create, where the
	// host decides it (and never opens a window).
	webkit_settings_set_javascript_can_open_windows_automatically(vs, TRUE);
	webkit_settings_set_javascript_can_access_clipboard(vs, TRUE);
	webkit_settings_set_enable_developer_extras(vs, devtools ? TRUE : FALSE);
	// Service workers and shared workers make their requests outside the
	// view's content filter (WebKit applies content blockers to a page's
	// loads, a dedicated worker's included, but not to theirs): a Miniapp
	// gets neither (docs/host.md, "What the view may not do").
	disable_feature(vs, "ServiceWorkers");
	disable_feature(vs, "SharedWorker");

	WebKitUserContentManager *vucm = webkit_user_content_manager_new();
	g_signal_connect(vucm, "script-message-received::miniappHost", G_CALLBACK(on_script_message), r);
	webkit_user_content_manager_register_script_message_handler(vucm, "miniappHost");
	// The console capture script's handler (host.ConsoleHandler): its own,
	// so that console traffic never reaches the bridge's.
	g_signal_connect(vucm, "script-message-received::mhConsole", G_CALLBACK(on_console_message), r);
	webkit_user_content_manager_register_script_message_handler(vucm, "mhConsole");

	if (webdriver) mh_webdriver_allow(ctx);
	WebKitWebView *view = miniapp_view(ctx, vucm, vs, r, webdriver);
	g_object_unref(vucm);
	g_object_unref(vs);
	if (webdriver) mh_webdriver_attach(ctx, view);

	// The Miniapp's view is in an overlay whose top layer is the host's
	// view: consent shows over the Miniapp without unloading it.
	GtkWidget *overlay = gtk_overlay_new();
	gtk_container_add(GTK_CONTAINER(overlay), GTK_WIDGET(view));

	// The host's views (consent, launcher) are on a web context of their
	// own, kept in memory: none of a Miniapp's data reaches them. The
	// host's view also has its own content manager: nothing the Miniapp's
	// view registers or injects reaches it, and its message handler is
	// unknown to the Miniapp's pages.
	// Sandboxed as the Miniapps' contexts are (mh_context_new).
	WebKitWebContext *hctx = webkit_web_context_new_ephemeral();
	webkit_web_context_set_sandbox_enabled(hctx, sandbox ? TRUE : FALSE);
	WebKitWebView *host = new_view(hctx, handle, MH_VIEW_HOST, "host");
	gtk_widget_set_halign(GTK_WIDGET(host), GTK_ALIGN_FILL);
	gtk_widget_set_valign(GTK_WIDGET(host), GTK_ALIGN_FILL);
	gtk_overlay_add_overlay(GTK_OVERLAY(overlay), GTK_WIDGET(host));
	gtk_widget_show(overlay);
	gtk_widget_show(GTK_WIDGET(view));
	gtk_widget_set_no_show_all(GTK_WIDGET(host), TRUE);
	gtk_widget_hide(GTK_WIDGET(host));

	views[MH_VIEW_MINIAPP] = view;
	views[MH_VIEW_HOST] = host;
	views[MH_VIEW_LAUNCHER] = NULL;
	mh_overlay = overlay;
	mh_miniapp = view;
	// The overlay sits in the device area: a frame that is the device's
	// screen, centred in the space it is given (mh_device_area).
	GtkWidget *area = mh_device_area(overlay);
	if (!launcher) {
		gtk_container_add(GTK_CONTAINER(win), area);
		gtk_widget_grab_focus(GTK_WIDGET(view));
	} else {
		// The playground's launcher, in a view of its own before the
		// Miniapp's: no bridge, no content filter, and none of its input
		// is a gesture on the Miniapp.
		WebKitWebView *l = new_view(hctx, handle, MH_VIEW_LAUNCHER, NULL);
		views[MH_VIEW_LAUNCHER] = l;
		gtk_widget_show(GTK_WIDGET(l));
		if (layout == MH_LAYOUT_TABS) {
			// Pages of a GtkNotebook: its tabs are the way back to the
			// launcher.
			GtkWidget *nb = gtk_notebook_new();
			gtk_notebook_append_page(GTK_NOTEBOOK(nb), GTK_WIDGET(l), gtk_label_new("Launcher"));
			gtk_notebook_append_page(GTK_NOTEBOOK(nb), area, gtk_label_new("Miniapp"));
			gtk_container_add(GTK_CONTAINER(win), nb);
			gtk_widget_show(nb);
			gtk_notebook_set_current_page(GTK_NOTEBOOK(nb), 0);
		} else {
			// The launcher and its tools beside the device, in a split the
			// user drags to resize, or to either edge to collapse a side.
			GtkWidget *paned = gtk_paned_new(GTK_ORIENTATION_HORIZONTAL);
			gtk_paned_set_wide_handle(GTK_PANED(paned), TRUE);
			gtk_paned_pack1(GTK_PANED(paned), GTK_WIDGET(l), TRUE, TRUE);
			gtk_paned_pack2(GTK_PANED(paned), area, TRUE, TRUE);
			int w = 0, h = 0;
			gtk_window_get_default_size(win, &w, &h);
			gtk_paned_set_position(GTK_PANED(paned), w > 0 ? w - MH_DEVICE_PANE : 640);
			gtk_container_add(GTK_CONTAINER(win), paned);
			gtk_widget_show(paned);
			mh_paned = paned;
		}
	}
	g_object_unref(hctx);
	gtk_widget_show(GTK_WIDGET(win));
}

// mh_replace_miniapp_view puts a new Miniapp view on ctx in the place of
// old, with old's content manager, settings and signals, and destroys
// old: its web process ends, and nothing it loaded reaches the new one.
// It returns the new view.
WebKitWebView *mh_replace_miniapp_view(WebKitWebView *old, WebKitWebContext *ctx) {
	mh_ref *r = g_object_get_data(G_OBJECT(old), "mh-ref");
	WebKitWebView *view = miniapp_view(ctx, webkit_web_view_get_user_content_manager(old),
	                                   webkit_web_view_get_settings(old), r, 0);
	GtkWidget *overlay = gtk_widget_get_parent(GTK_WIDGET(old));
	gboolean focus = gtk_widget_has_focus(GTK_WIDGET(old));
	g_signal_handlers_disconnect_by_data(old, r);
	g_object_set_data(G_OBJECT(old), "mh-ref", NULL);
	// Its children first, internal ones included. WebKitGTK (GTK 3)
	// parents a GtkTextView of its own to every view, its key binding
	// translator, and its dispose lets go of its pointer to it before
	// GtkContainer's destroy asks the view for its internal children: the
	// text view was never destroyed, and each replaced view left it, with
	// its buffer, style and input method contexts, in this process (the
	// host's memory grew with every launch of another Miniapp).
	gtk_container_forall(GTK_CONTAINER(old), destroy_child, NULL);
	gtk_container_remove(GTK_CONTAINER(overlay), GTK_WIDGET(old)); // the overlay's reference: old is destroyed
	gtk_container_add(GTK_CONTAINER(overlay), GTK_WIDGET(view));
	gtk_widget_show(GTK_WIDGET(view));
	if (focus) gtk_widget_grab_focus(GTK_WIDGET(view));
	mh_miniapp = view;
	webkit_web_view_set_zoom_level(view, mh_dev.applied_zoom);
	return view;
}

// The window's size in its normal state, kept on every configure-event:
// closing the window destroys it before the main loop returns, so its size
// must be known before. A maximized, tiled or full-screen size is not the
// user's choice of a size and is not kept. Plain C: no Go runs here.
static int mh_width, mh_height;

static gboolean on_configure(GtkWidget *widget, GdkEvent *event, gpointer data) {
	(void)event;
	(void)data;
	GdkWindow *gw = gtk_widget_get_window(widget);
	if (gw && (gdk_window_get_state(gw) &
	           (GDK_WINDOW_STATE_MAXIMIZED | GDK_WINDOW_STATE_FULLSCREEN | GDK_WINDOW_STATE_TILED)))
		return FALSE;
	gtk_window_get_size(GTK_WINDOW(widget), &mh_width, &mh_height);
	return FALSE;
}

// mh_track_size starts keeping the window's size, from the size it was
// made with.
void mh_track_size(GtkWindow *win, int width, int height) {
	mh_width = width;
	mh_height = height;
	g_signal_connect(win, "configure-event", G_CALLBACK(on_configure), NULL);
}

// mh_window_size is the last size kept.
void mh_window_size(int *width, int *height) {
	*width = mh_width;
	*height = mh_height;
}

// mh_show_page shows the launcher (0) or the Miniapp (1), when the window
// has a launcher.
void mh_show_page(GtkWindow *win, int page) {
	GtkWidget *nb = gtk_bin_get_child(GTK_BIN(win));
	if (nb && GTK_IS_NOTEBOOK(nb)) {
		gtk_notebook_set_current_page(GTK_NOTEBOOK(nb), page);
		return;
	}
	// Side by side, both pages are shown: a side the user collapsed
	// comes back when it is asked for.
	if (mh_paned) {
		int pos = gtk_paned_get_position(GTK_PANED(mh_paned));
		GtkAllocation a;
		gtk_widget_get_allocation(mh_paned, &a);
		if (page == 0 && pos < MH_COLLAPSED) gtk_paned_set_position(GTK_PANED(mh_paned), a.width / 2);
		if (page == 1 && pos > a.width - MH_COLLAPSED) gtk_paned_set_position(GTK_PANED(mh_paned), MAX(a.width - MH_DEVICE_PANE, a.width / 3));
	}
}

// What a reset forgets: everything but session storage, which WebKit keeps
// per view, not in the data manager.
#define MH_SITE_DATA (WEBKIT_WEBSITE_DATA_ALL & ~WEBKIT_WEBSITE_DATA_SESSION_STORAGE)

// snapshot_region writes what the X server shows of a rectangle of the
// window as a PNG; "" or an error.
static char *snapshot_region(GdkWindow *gw, int x, int y, int width, int height, const char *path) {
	GdkPixbuf *pb = gdk_pixbuf_get_from_window(gw, x, y, width, height);
	if (!pb) return g_strdup("the window is not on screen");
	GError *err = NULL;
	gboolean ok = gdk_pixbuf_save(pb, path, "png", &err, NULL);
	g_object_unref(pb);
	if (ok) return g_strdup("");
	char *msg = g_strdup(err ? err->message : "unknown error");
	if (err) g_error_free(err);
	return msg;
}

// mh_snapshot_window writes what the X server shows of the whole window
// (the launcher beside the device, or the tabs; the consent over the
// Miniapp) as a PNG; "" or an error.
char *mh_snapshot_window(GtkWindow *win, const char *path) {
	GdkWindow *gw = gtk_widget_get_window(GTK_WIDGET(win));
	if (!gw) return g_strdup("the window is not realized");
	return snapshot_region(gw, 0, 0, gdk_window_get_width(gw), gdk_window_get_height(gw), path);
}

// mh_snapshot_device writes what the X server shows of the device's frame
// (its bezel included) as a PNG; "" or an error.
char *mh_snapshot_device(GtkWindow *win, const char *path) {
	GdkWindow *gw = gtk_widget_get_window(GTK_WIDGET(win));
	if (!gw || !mh_frame || !gtk_widget_get_mapped(mh_frame)) return g_strdup("the device is not on screen");
	int x = 0, y = 0;
	if (!gtk_widget_translate_coordinates(mh_frame, GTK_WIDGET(win), 0, 0, &x, &y))
		return g_strdup("the device is not in the window");
	GtkAllocation a;
	gtk_widget_get_allocation(mh_frame, &a);
	return snapshot_region(gw, x, y, a.width, a.height, path);
}

void mh_show_host_view(WebKitWebView *host, int show) {
	if (show) {
		gtk_widget_show(GTK_WIDGET(host));
		gtk_widget_grab_focus(GTK_WIDGET(host));
	} else {
		gtk_widget_hide(GTK_WIDGET(host));
	}
}

void mh_load_uri(WebKitWebView *view, const char *uri) { webkit_web_view_load_uri(view, uri); }

void mh_load_html(WebKitWebView *view, const char *html) { webkit_web_view_load_html(view, html, NULL); }

void mh_eval(WebKitWebView *view, const char *js) {
	webkit_web_view_evaluate_javascript(view, js, -1, NULL, NULL, NULL, NULL, NULL);
}

// The Miniapp view's two user scripts, kept on its content manager: the
// console capture script (every frame) and the Miniapp's (top frame).
#define MH_CONSOLE_SCRIPT "mh-console-script"
#define MH_MINIAPP_SCRIPT "mh-miniapp-script"

// apply_scripts makes the view's user scripts the console capture script,
// then the Miniapp's: the capture is in place before the bridge's script
// runs.
static void apply_scripts(WebKitUserContentManager *ucm) {
	webkit_user_content_manager_remove_all_scripts(ucm);
	const char *keys[] = {MH_CONSOLE_SCRIPT, MH_MINIAPP_SCRIPT};
	for (int i = 0; i < 2; i++) {
		WebKitUserScript *s = g_object_get_data(G_OBJECT(ucm), keys[i]);
		if (s) webkit_user_content_manager_add_script(ucm, s);
	}
}

static void keep_script(WebKitWebView *view, const char *key, WebKitUserScript *s) {
	WebKitUserContentManager *ucm = webkit_web_view_get_user_content_manager(view);
	g_object_set_data_full(G_OBJECT(ucm), key, s, (GDestroyNotify)webkit_user_script_unref);
	apply_scripts(ucm);
}

// mh_register_script makes script the Miniapp's user script, injected at
// document start into the top frame only (host.Window.transportScript says
// why a subframe cannot forge a bridge message). The console capture
// script stays.
void mh_register_script(WebKitWebView *view, const char *script) {
	keep_script(view, MH_MINIAPP_SCRIPT,
	            webkit_user_script_new(script, WEBKIT_USER_CONTENT_INJECT_TOP_FRAME,
	                                   WEBKIT_USER_SCRIPT_INJECT_AT_DOCUMENT_START, NULL, NULL));
}

// mh_set_console_script makes script the console capture script, injected
// at document start into every frame (host.Engine.SetConsoleScript). Only
// the Miniapp's view is given one: the host's views have content managers
// of their own.
void mh_set_console_script(WebKitWebView *view, const char *script) {
	keep_script(view, MH_CONSOLE_SCRIPT,
	            webkit_user_script_new(script, WEBKIT_USER_CONTENT_INJECT_ALL_FRAMES,
	                                   WEBKIT_USER_SCRIPT_INJECT_AT_DOCUMENT_START, NULL, NULL));
}

// mh_show_inspector turns the view's developer extras on and shows its web
// inspector (host.Engine.ShowInspector; the Go side passes the Miniapp's
// view only).
void mh_show_inspector(WebKitWebView *view) {
	webkit_settings_set_enable_developer_extras(webkit_web_view_get_settings(view), TRUE);
	webkit_web_inspector_show(webkit_web_view_get_inspector(view));
}

// mh_close_inspector closes the view's inspector and sets its developer
// extras (the tests put the window back as it was).
void mh_close_inspector(WebKitWebView *view, int developer_extras) {
	webkit_web_inspector_close(webkit_web_view_get_inspector(view));
	webkit_settings_set_enable_developer_extras(webkit_web_view_get_settings(view), developer_extras ? TRUE : FALSE);
}

// mh_developer_extras reads the view's WebKit setting.
int mh_developer_extras(WebKitWebView *view) {
	return webkit_settings_get_enable_developer_extras(webkit_web_view_get_settings(view)) ? 1 : 0;
}

// mh_inspector_open reports whether the view's inspector has its page.
int mh_inspector_open(WebKitWebView *view) {
	return webkit_web_inspector_get_web_view(webkit_web_view_get_inspector(view)) != NULL;
}

typedef struct {
	WebKitWebView *view;
	uintptr_t req;
} filter_ctx;

static void on_filter_saved(GObject *src, GAsyncResult *res, gpointer data) {
	filter_ctx *ctx = data;
	GError *err = NULL;
	WebKitUserContentFilter *f =
		webkit_user_content_filter_store_save_finish(WEBKIT_USER_CONTENT_FILTER_STORE(src), res, &err);
	if (f) {
		WebKitUserContentManager *ucm = webkit_web_view_get_user_content_manager(ctx->view);
		webkit_user_content_manager_remove_all_filters(ucm);
		webkit_user_content_manager_add_filter(ucm, f);
		webkit_user_content_filter_unref(f);
		MH_TO_GO(goDone(ctx->req, ""));
	} else {
		MH_TO_GO(goDone(ctx->req, err ? err->message : "unknown error"));
		if (err) g_error_free(err);
	}
	g_object_unref(src);
	g_object_unref(ctx->view);
	g_free(ctx);
}

void mh_install_filter(WebKitWebView *view, const char *store_path, const char *json, uintptr_t req) {
	WebKitUserContentFilterStore *store = webkit_user_content_filter_store_new(store_path);
	GBytes *b = g_bytes_new(json, strlen(json));
	filter_ctx *ctx = g_new0(filter_ctx, 1);
	ctx->view = g_object_ref(view);
	ctx->req = req;
	webkit_user_content_filter_store_save(store, "miniapp-host-authorize", b, NULL, on_filter_saved, ctx);
	g_bytes_unref(b);
}

static WebKitCookieManager *cookie_manager(WebKitWebView *view) {
	return webkit_website_data_manager_get_cookie_manager(webkit_web_view_get_website_data_manager(view));
}

static void on_cookie_added(GObject *src, GAsyncResult *res, gpointer data) {
	GError *err = NULL;
	if (webkit_cookie_manager_add_cookie_finish(WEBKIT_COOKIE_MANAGER(src), res, &err)) {
		MH_TO_GO(goDone((uintptr_t)data, ""));
	} else {
		MH_TO_GO(goDone((uintptr_t)data, err ? err->message : "unknown error"));
		if (err) g_error_free(err);
	}
}

// mh_add_cookie sets one cookie with its flags; max_age < 0 makes a session
// cookie. Only soup_cookie_* accessors are used (the same in libsoup 2 and 3).
void mh_add_cookie(WebKitWebView *view, const char *name, const char *value, const char *domain,
                   const char *path, int max_age, int http_only, int secure, int same_site, uintptr_t req) {
	SoupCookie *c = soup_cookie_new(name, value, domain, path, max_age);
	soup_cookie_set_http_only(c, http_only);
	soup_cookie_set_secure(c, secure);
	soup_cookie_set_same_site_policy(c, (SoupSameSitePolicy)same_site);
	webkit_cookie_manager_add_cookie(cookie_manager(view), c, NULL, on_cookie_added, (gpointer)req);
	soup_cookie_free(c);
}

static void on_cookies_got(GObject *src, GAsyncResult *res, gpointer data) {
	GError *err = NULL;
	GList *list = webkit_cookie_manager_get_cookies_finish(WEBKIT_COOKIE_MANAGER(src), res, &err);
	if (err) {
		MH_TO_GO(goDone2((uintptr_t)data, "", err->message));
		g_error_free(err);
		return;
	}
	GSList *sl = NULL;
	for (GList *l = list; l; l = l->next) sl = g_slist_append(sl, l->data);
	char *header = sl ? soup_cookies_to_cookie_header(sl) : g_strdup("");
	MH_TO_GO(goDone2((uintptr_t)data, header, ""));
	g_free(header);
	g_slist_free(sl);
	g_list_free_full(list, (GDestroyNotify)soup_cookie_free);
}

// mh_get_cookies answers with the Cookie header WebKit would send to uri,
// HttpOnly cookies included.
void mh_get_cookies(WebKitWebView *view, const char *uri, uintptr_t req) {
	webkit_cookie_manager_get_cookies(cookie_manager(view), uri, NULL, on_cookies_got, (gpointer)req);
}

static void on_cleared(GObject *src, GAsyncResult *res, gpointer data) {
	GError *err = NULL;
	if (webkit_website_data_manager_clear_finish(WEBKIT_WEBSITE_DATA_MANAGER(src), res, &err)) {
		MH_TO_GO(goDone((uintptr_t)data, ""));
	} else {
		MH_TO_GO(goDone((uintptr_t)data, err ? err->message : "unknown error"));
		if (err) g_error_free(err);
	}
}

void mh_clear_cookies(WebKitWebView *view, uintptr_t req) {
	webkit_website_data_manager_clear(webkit_web_view_get_website_data_manager(view), WEBKIT_WEBSITE_DATA_COOKIES,
	                                  0, NULL, on_cleared, (gpointer)req);
}

// mh_clear_data removes everything a Miniapp's web context keeps: cookies,
// local storage, IndexedDB, caches. The context is that Miniapp's alone
// (mh_context_new), so no other Miniapp loses anything.
void mh_clear_data(WebKitWebContext *ctx, uintptr_t req) {
	webkit_website_data_manager_clear(webkit_web_context_get_website_data_manager(ctx), MH_SITE_DATA, 0, NULL,
	                                  on_cleared, (gpointer)req);
}

typedef struct {
	char *path;
	uintptr_t req;
} snap_ctx;

static void on_snapshot(GObject *src, GAsyncResult *res, gpointer data) {
	snap_ctx *ctx = data;
	GError *err = NULL;
	cairo_surface_t *s = webkit_web_view_get_snapshot_finish(WEBKIT_WEB_VIEW(src), res, &err);
	if (s) {
		cairo_status_t st = cairo_surface_write_to_png(s, ctx->path);
		cairo_surface_destroy(s);
		MH_TO_GO(goDone(ctx->req, (char *)(st == CAIRO_STATUS_SUCCESS ? "" : cairo_status_to_string(st))));
	} else {
		MH_TO_GO(goDone(ctx->req, err ? err->message : "unknown error"));
		if (err) g_error_free(err);
	}
	g_free(ctx->path);
	g_free(ctx);
}

void mh_snapshot(WebKitWebView *view, const char *path, uintptr_t req) {
	snap_ctx *ctx = g_new0(snap_ctx, 1);
	ctx->path = g_strdup(path);
	ctx->req = req;
	webkit_web_view_get_snapshot(view, WEBKIT_SNAPSHOT_REGION_VISIBLE, WEBKIT_SNAPSHOT_OPTIONS_NONE, NULL,
	                             on_snapshot, ctx);
}

// mh_screen_centre gives the centre of widget in root-window
// coordinates, where a test's XTest click (xdotool) must land.
void mh_screen_centre(GtkWidget *widget, int *x, int *y) {
	GtkWidget *top = gtk_widget_get_toplevel(widget);
	int tx = 0, ty = 0, ox = 0, oy = 0;
	gtk_widget_translate_coordinates(widget, top, gtk_widget_get_allocated_width(widget) / 2,
	                                 gtk_widget_get_allocated_height(widget) / 2, &tx, &ty);
	gdk_window_get_origin(gtk_widget_get_window(top), &ox, &oy);
	*x = ox + tx;
	*y = oy + ty;
}

static void on_probe_done(GObject *src, GAsyncResult *res, gpointer data) {
	GError *err = NULL;
	webkit_web_view_can_execute_editing_command_finish(WEBKIT_WEB_VIEW(src), res, &err);
	MH_TO_GO(goDone((uintptr_t)data, (char *)(err && err->message ? err->message : "")));
	if (err) g_error_free(err);
}

// mh_probe asks the view's web process a question its main thread answers
// (can "Copy" run?) and runs no script in the page (host.Engine.Probe).
void mh_probe(WebKitWebView *view, uintptr_t req) {
	webkit_web_view_can_execute_editing_command(view, WEBKIT_EDITING_COMMAND_COPY, NULL, on_probe_done, (gpointer)req);
}

// mh_screen_origin gives the top-left corner of widget in root-window
// coordinates.
void mh_screen_origin(GtkWidget *widget, int *x, int *y) {
	GtkWidget *top = gtk_widget_get_toplevel(widget);
	int tx = 0, ty = 0, ox = 0, oy = 0;
	gtk_widget_translate_coordinates(widget, top, 0, 0, &tx, &ty);
	gdk_window_get_origin(gtk_widget_get_window(top), &ox, &oy);
	*x = ox + tx;
	*y = oy + ty;
}

void mh_terminate_web_process(WebKitWebView *view) { webkit_web_view_terminate_web_process(view); }

// answer_json hands an evaluation's outcome to Go: its value as JSON
// (null for undefined), or its error; it takes v and err.
static void answer_json(JSCValue *v, GError *err, gpointer data) {
	if (!v) {
		MH_TO_GO(goDone2((uintptr_t)data, "", err ? err->message : "unknown error"));
		if (err) g_error_free(err);
		return;
	}
	char *json = jsc_value_to_json(v, 0);
	MH_TO_GO(goDone2((uintptr_t)data, json ? json : "null", ""));
	g_free(json);
	g_object_unref(v);
}

static void on_eval_done(GObject *src, GAsyncResult *res, gpointer data) {
	GError *err = NULL;
	JSCValue *v = webkit_web_view_evaluate_javascript_finish(WEBKIT_WEB_VIEW(src), res, &err);
	answer_json(v, err, data);
}

// mh_eval_result evaluates js in the top frame and answers with its value
// as JSON (null for undefined).
void mh_eval_result(WebKitWebView *view, const char *js, uintptr_t req) {
	webkit_web_view_evaluate_javascript(view, js, -1, NULL, NULL, NULL, on_eval_done, (gpointer)req);
}

// The body of the function mh_eval_await calls: the script, an argument,
// evaluated as a script of the page's global scope (an indirect eval); a
// Promise it completes with is awaited (WebKit awaits the function's
// result), and its rejection becomes an Error naming the reason, which
// the engine reports as the evaluation's error.
static const char *MH_AWAIT_BODY =
	"const v = (0, eval)(script);\n"
	"if (v === null || (typeof v !== 'object' && typeof v !== 'function') || typeof v.then !== 'function') return v;\n"
	"return Promise.resolve(v).then(undefined, (e) => {\n"
	"  let why;\n"
	"  try { why = e instanceof Error ? String(e) : JSON.stringify(e); } catch (x) { why = undefined; }\n"
	"  if (why === undefined) { try { why = String(e); } catch (x) { why = typeof e; } }\n"
	"  throw new Error('the Promise was rejected: ' + why);\n"
	"});";

static void on_await_done(GObject *src, GAsyncResult *res, gpointer data) {
	GError *err = NULL;
	JSCValue *v = webkit_web_view_call_async_javascript_function_finish(WEBKIT_WEB_VIEW(src), res, &err);
	answer_json(v, err, data);
}

// mh_eval_await evaluates js in the top frame, as a script of the page's
// global scope, and answers with its value as JSON (null for undefined),
// a Promise's settled value once it has settled
// (webkit_web_view_call_async_javascript_function, WebKitGTK 2.40).
void mh_eval_await(WebKitWebView *view, const char *js, uintptr_t req) {
	GVariantBuilder b;
	g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
	g_variant_builder_add(&b, "{sv}", "script", g_variant_new_string(js));
	webkit_web_view_call_async_javascript_function(view, MH_AWAIT_BODY, -1, g_variant_builder_end(&b), NULL, NULL, NULL,
		on_await_done, (gpointer)req);
}

static gboolean on_idle_dispatch(gpointer data) {
	MH_TO_GO(goDispatch((uintptr_t)data));
	return G_SOURCE_REMOVE;
}

// mh_dispatch queues a Go function (a cgo.Handle) for the main loop. It is
// safe from any thread (g_idle_add is). webview_go's own Dispatch is not
// used: it reads its shared index after releasing its lock, so two
// goroutines dispatching at once can run one function twice and lose the
// other (the race detector shows it).
void mh_dispatch(uintptr_t fn) {
	g_idle_add_full(G_PRIORITY_HIGH_IDLE, on_idle_dispatch, (gpointer)fn, NULL);
}

static void on_bare_loaded(WebKitUserContentManager *m, WebKitJavascriptResult *res, gpointer data) {
	(void)m;
	(void)res;
	(void)data;
	printf("loaded\n");
	fflush(stdout);
}

// mh_bare_window is the baseline of BenchmarkFirstLoad: a window with one
// view on the default web context, no host, that loads uri and prints
// "loaded" on the page's load event. It returns when the window closes.
int mh_bare_window(const char *uri) {
	if (!gtk_init_check(NULL, NULL)) return 1;
	GtkWindow *win = mh_window_new("bare", 800, 600);
	WebKitUserContentManager *ucm = webkit_user_content_manager_new();
	g_signal_connect(ucm, "script-message-received::loaded", G_CALLBACK(on_bare_loaded), NULL);
	webkit_user_content_manager_register_script_message_handler(ucm, "loaded");
	webkit_user_content_manager_add_script(
		ucm, webkit_user_script_new("window.addEventListener('load', function () { "
		                            "window.webkit.messageHandlers.loaded.postMessage(''); });",
		                            WEBKIT_USER_CONTENT_INJECT_TOP_FRAME, WEBKIT_USER_SCRIPT_INJECT_AT_DOCUMENT_START,
		                            NULL, NULL));
	WebKitWebView *v = WEBKIT_WEB_VIEW(webkit_web_view_new_with_user_content_manager(ucm));
	g_object_unref(ucm);
	gtk_container_add(GTK_CONTAINER(win), GTK_WIDGET(v));
	gtk_widget_show_all(GTK_WIDGET(win));
	webkit_web_view_load_uri(v, uri);
	gtk_main();
	return 0;
}

// mh_window_child_type names the type of the window's child: the layout
// a test can tell apart (GtkPaned beside, GtkNotebook in tabs, the device
// area alone).
const char *mh_window_child_type(GtkWindow *win) {
	GtkWidget *c = gtk_bin_get_child(GTK_BIN(win));
	return c ? G_OBJECT_TYPE_NAME(c) : "";
}
