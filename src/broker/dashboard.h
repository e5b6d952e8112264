#ifndef CLIQO_BROKER_DASHBOARD_H
#define CLIQO_BROKER_DASHBOARD_H

/* The broker's dashboard (docs/broker.md, "Dashboard"): the static files of src/broker/dashboard/,
 * compiled in at build time by src/broker/dashboard/embed.cmake (library cliqo_broker_dashboard),
 * for the API server to answer GET / with.
 *
 * Everything here is static storage: borrowed, never freed, valid for the program's life. data
 * holds the file's exact bytes, len of them (a NUL follows, not counted). etag is a strong entity
 * tag with its quotes ("\"<32 hex digits>\"", the start of the content's SHA-256), fixed at build
 * time: ready for an ETag header and to compare with If-None-Match. The pages need a
 * Content-Security-Policy of default-src 'self' at most (no inline script or style, nothing fetched
 * elsewhere). */

#include <stddef.h>

struct brk_asset {
    const char *path;         /* the URL path it is served at: "/", "/app.js", "/style.css" */
    const char *content_type; /* with its charset, e.g. "text/html; charset=utf-8" */
    const unsigned char *data;
    size_t len;
    const char *etag;
};

/* The asset served at path, a URL path without its query string ("/" is index.html); NULL when no
 * asset has that path (or path is NULL). */
const struct brk_asset *brk_asset_find(const char *path);

/* Internal: the table, defined by the generated source, in the order of CLIQO_DASHBOARD_FILES
 * (src/broker/dashboard/dashboard.cmake). Callers use brk_asset_find. */
extern const struct brk_asset brk__assets[];
extern const size_t brk__assets_count;

#endif
