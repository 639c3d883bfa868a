// Declarations shared by the cgo preamble of webkit_linux.go and the C
// bodies in webkit_linux.c. The Go side only calls these functions; the C
// side calls back into Go through the functions exported in _cgo_export.h.

#ifndef MINIAPP_HOST_WEBKIT_LINUX_H
#define MINIAPP_HOST_WEBKIT_LINUX_H

#include <stdint.h>
#include <gtk/gtk.h>
#include <webkit2/webkit2.h>

// mh_setup wraps the view that webview_go created in an overlay, adds the
// host's own view on top of it (hidden) and connects every signal.
// It returns the host view, or NULL when the window has no WebKitWebView.
WebKitWebView *mh_setup(GtkWindow *win, uintptr_t handle);
WebKitWebView *mh_main_view(GtkWindow *win);

void mh_fix_signals(void);
void mh_dispatch(uintptr_t fn);
void mh_show_host_view(WebKitWebView *host, int show);
void mh_load_uri(WebKitWebView *view, const char *uri);
void mh_load_html(WebKitWebView *view, const char *html);
void mh_eval(WebKitWebView *view, const char *js);
void mh_eval_result(WebKitWebView *view, const char *js, uintptr_t req);
void mh_install_filter(WebKitWebView *view, const char *store_path, const char *json, uintptr_t req);
void mh_remove_filters(WebKitWebView *view);
void mh_add_cookie(WebKitWebView *view, const char *name, const char *value, const char *domain,
                   const char *path, int max_age, int http_only, int secure, int same_site, uintptr_t req);
void mh_get_cookies(WebKitWebView *view, const char *uri, uintptr_t req);
void mh_clear_cookies(WebKitWebView *view, uintptr_t req);
void mh_set_persistent_cookies(WebKitWebView *view, const char *path);
void mh_snapshot(WebKitWebView *view, const char *path, uintptr_t req);
void mh_terminate_web_process(WebKitWebView *view);
void mh_screen_centre(GtkWidget *widget, int *x, int *y);
WebKitWebView *mh_add_launcher(GtkWindow *win, uintptr_t handle);
void mh_show_page(GtkWindow *win, int page);
char *mh_snapshot_window(GtkWindow *win, const char *path);
void mh_forget_site(WebKitWebView *view, const char *host, uintptr_t req);
void mh_register_bridge(WebKitWebView *view, const char *script);

#endif
