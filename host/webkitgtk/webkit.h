// Declarations shared by the cgo preamble of engine.go and the C bodies in
// webkit.c. Go only calls these functions; the C side calls back into Go
// through the functions exported in _cgo_export.h, always through MH_TO_GO
// (webkit.c), which keeps JavaScriptCore's thread-suspend signal away from
// Go's stacks (docs/webkitgtk.md, "Signals").

#ifndef MINIAPP_HOST_WEBKITGTK_H
#define MINIAPP_HOST_WEBKITGTK_H

#include <stdint.h>
#include <gtk/gtk.h>
#include <webkit2/webkit2.h>

// View numbers, as package host numbers them (host.View).
enum { MH_VIEW_MINIAPP = 0, MH_VIEW_HOST = 1, MH_VIEW_LAUNCHER = 2 };

int mh_display_available(void);
GtkWindow *mh_window_new(const char *title, int width, int height);
void mh_quit(void);
void mh_run(void);
WebKitWebContext *mh_context_new(const char *data_dir, const char *cache_dir, const char *cookies, int sandbox);
// Layouts of a window with a launcher (host.Layout).
enum { MH_LAYOUT_SIDE = 0, MH_LAYOUT_TABS = 1 };
// The device area's geometry, in pixels: its margin around the frame, the
// bezel's width, the device pane's first width, and how narrow a side of
// the split is when it counts as collapsed.
#define MH_AREA_MARGIN 16
#define MH_BEZEL 14
#define MH_DEVICE_PANE 520
#define MH_COLLAPSED 40
void mh_setup(GtkWindow *win, uintptr_t handle, int launcher, int layout, int devtools, int webdriver, int sandbox, WebKitWebContext *ctx,
              WebKitWebView **views);
void mh_set_device(int width, int height, double zoom, int bezel);
double mh_device_zoom(void);
void mh_set_style_sheet(WebKitWebView *view, const char *css);
void mh_set_user_agent(WebKitWebView *view, const char *ua);
void mh_set_languages(WebKitWebContext *ctx, char **langs);
void mh_set_proxy(WebKitWebContext *ctx, const char *uri);
void mh_set_dark(int dark);
char *mh_snapshot_device(GtkWindow *win, const char *path);
const char *mh_window_child_type(GtkWindow *win);
WebKitWebView *mh_replace_miniapp_view(WebKitWebView *old, WebKitWebContext *ctx);
void mh_clear_data(WebKitWebContext *ctx, uintptr_t req);
void mh_init_signals(void);
int mh_suspend_signal(void);
int mh_signals_without_onstack(int *out, int max);
void mh_block_suspend(void);
void mh_unblock_suspend(void);

void mh_dispatch(uintptr_t fn);
void mh_show_host_view(WebKitWebView *host, int show);
void mh_show_page(GtkWindow *win, int page);
void mh_track_size(GtkWindow *win, int width, int height);
void mh_window_size(int *width, int *height);
void mh_load_uri(WebKitWebView *view, const char *uri);
void mh_load_html(WebKitWebView *view, const char *html);
void mh_eval(WebKitWebView *view, const char *js);
void mh_eval_result(WebKitWebView *view, const char *js, uintptr_t req);
void mh_eval_await(WebKitWebView *view, const char *js, uintptr_t req);
void mh_install_filter(WebKitWebView *view, const char *store_path, const char *json, uintptr_t req);
void mh_register_script(WebKitWebView *view, const char *script);
void mh_set_console_script(WebKitWebView *view, const char *script);
void mh_show_inspector(WebKitWebView *view);
void mh_close_inspector(WebKitWebView *view, int developer_extras);
int mh_developer_extras(WebKitWebView *view);
int mh_inspector_open(WebKitWebView *view);
void mh_add_cookie(WebKitWebView *view, const char *name, const char *value, const char *domain,
                   const char *path, int max_age, int http_only, int secure, int same_site, uintptr_t req);
void mh_get_cookies(WebKitWebView *view, const char *uri, uintptr_t req);
void mh_clear_cookies(WebKitWebView *view, uintptr_t req);
void mh_snapshot(WebKitWebView *view, const char *path, uintptr_t req);
char *mh_snapshot_window(GtkWindow *win, const char *path);
void mh_terminate_web_process(WebKitWebView *view);
void mh_probe(WebKitWebView *view, uintptr_t req);
void mh_screen_centre(GtkWidget *widget, int *x, int *y);
void mh_screen_origin(GtkWidget *widget, int *x, int *y);

int mh_bare_window(const char *uri);
int mh_live_miniapp_views(void);
int mh_live_view_children(WebKitWebView *view, int *current);

// webdriver.c
void mh_webdriver_allow(WebKitWebContext *ctx);
void mh_webdriver_attach(WebKitWebContext *ctx, WebKitWebView *view);
int mh_webkit_api(void);

#endif
