/* brk api: the broker's HTTP API (docs/broker.md, "API quality and security";
 * docs/broker-openapi.yaml), on the skeleton's HTTP server (--api-addr):
 *
 *   GET  /api/clusters            the catalog (--with-catalog): ETag / If-None-Match, filters,
 * pages POST /api/toggle?id=&enable=  (GET too, as the original) enable or disable a provider GET
 * /api/policy, PUT /api/policy GET  /, /app.js, /style.css   the dashboard plus the skeleton's
 * /healthz, /livez, /readyz and /metrics.
 *
 * Every answer is JSON (the dashboard's files excepted) and every error {"error": "...",
 * "message": "..."}: 400 a bad parameter or body (naming it), 401 no or a wrong bearer token, 404
 * an unknown cluster ID or path, 405 a wrong method (with Allow), 409 a write that kept
 * conflicting, 410 a continue token of another broker process, 413 a body over BRK_API_MAX_BODY,
 * 415 a body that is not JSON by its Content-Type, 429 over the rate limit (with Retry-After), 500
 * out of memory, 502 the API server refused a write, 503 before the informers synced or while the
 * modules start again, 504 a write without an answer in time. The catalog's pages carry the next
 * page's token in the header Continue. Mutating requests need `Authorization: Bearer <token>` when
 * --require-token (the default beyond loopback); reads too beyond loopback unless
 * --public-catalog. Tokens are compared in constant time.
 *
 * Writes go to the ConfigMap cliqo-broker-state with optimistic concurrency: read, change, replace
 * with the resourceVersion read; a conflict starts again (at most BRK_API_WRITE_ATTEMPTS times). */
#ifndef CLIQO_BROKER_API_H
#define CLIQO_BROKER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"

#define BRK_API_MAX_BODY       65536
#define BRK_API_WRITE_ATTEMPTS 5
#define BRK_API_MAX_CLIENTS    1024 /* rate-limit buckets kept; the oldest is reused */

/* One route of the API, for the OpenAPI check (tests/unit/test-broker-openapi.c). */
struct brk_api_route {
    const char *method, *path;
    const char *module; /* the --with-* module that serves it; NULL: always */
    bool mutating;
};
extern const struct brk_api_route brk_api_routes[];
extern const size_t brk_api_nroutes;

/* A token bucket: rate per second, burst; pure, for the unit tests. Returns true when a request
 * at now_ms may go (and takes a token), else false with *retry_s the seconds until one is there. */
struct brk_bucket {
    double tokens;
    uint64_t at_ms;
    bool used;
};
bool brk_bucket_take(struct brk_bucket *b, uint32_t rate, uint32_t burst, uint64_t now_ms,
                     unsigned *retry_s);

/* The module "api": registers the routes of the modules that run (init), on every replica. */
int brk_api_init(struct agent *a);
void brk_api_fini(struct agent *a);
#define BRK_MODULE_API                                                                             \
    {                                                                                              \
        "api", brk_api_init, NULL, NULL, brk_api_fini, NULL, false                                 \
    }

#endif
