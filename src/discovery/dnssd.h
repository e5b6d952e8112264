/* dnssd: unicast DNS Service Discovery (RFC 6763) with c-ares on a libuv loop, for the WAN.
 *
 * dnssd_browse(service, domain) queries PTR <service>.<domain>, then for every instance named by
 * the answer SRV and TXT at once, and reports one result when every lookup has finished. Each
 * lookup fails alone: an instance whose SRV or TXT could not be looked up carries its own error and
 * the others are still reported.
 *
 * Outcomes are classed so that a caller never mistakes an outage for an absence:
 *   - the PTR query answered NXDOMAIN or no data: err -ENOENT, no instance (the domain lists none);
 *   - the PTR query failed otherwise (timeout, refused, server failure): err -EIO / -ETIMEDOUT and
 *     a message; nothing may be concluded about the instances;
 *   - per instance: state DNSSD_OK (SRV and TXT answered), DNSSD_ABSENT (SRV or TXT answered
 *     NXDOMAIN / no data: a stale PTR), or DNSSD_FAILED (a lookup failed: unknown).
 *
 * Limits: at most max_instances instances per browse (the rest are counted in `truncated`), TXT
 * strings and bytes as in record.h (excess is handed to the parser, which rejects it), DNS messages
 * as c-ares bounds them (64 KiB over TCP). Every name is handed over as c-ares expands it
 * (presentation form, escaped).
 *
 * Resolver: the servers of /etc/resolv.conf, or the one given as "IPv4[:port]" (tests use an
 * unprivileged port on loopback). Per query: timeout_ms per try, `tries` tries.
 *
 * Ownership: the loop is borrowed. Results are borrowed for the duration of the callback. A browse
 * can be cancelled (its callback is then not called); dnssd_free cancels everything. */
#ifndef CLIQO_DISCOVERY_DNSSD_H
#define CLIQO_DISCOVERY_DNSSD_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "discovery/record.h"

#define DNSSD_DEFAULT_MAX_INSTANCES 256
#define DNSSD_SERVER_MAX            64

struct dnssd;
struct dnssd_browse;

enum dnssd_state { DNSSD_OK, DNSSD_ABSENT, DNSSD_FAILED };

struct dnssd_instance {
    char fullname[DREC_HOST_MAX + 2]; /* as the PTR named it (presentation form) */
    enum dnssd_state state;
    char message[160];              /* why ABSENT or FAILED */
    char target[DREC_HOST_MAX + 2]; /* SRV target (presentation form) */
    unsigned port;                  /* SRV port */
    struct drec_txt_item txt[DREC_TXT_ITEMS_MAX + 1];
    size_t ntxt;
    bool multiple_txt; /* more than one TXT record */
};

struct dnssd_result {
    int err; /* 0, -ENOENT (no instance), -EIO or -ETIMEDOUT (PTR lookup failed) */
    char message[200];
    struct dnssd_instance *inst;
    size_t n;
    size_t truncated; /* instances over max_instances, not looked up */
};

typedef void (*dnssd_cb)(struct dnssd *d, const struct dnssd_result *r, void *data);

struct dnssd_options {
    const char *server;   /* "IPv4[:port]"; NULL: /etc/resolv.conf */
    unsigned timeout_ms;  /* per try; default 2000 */
    unsigned tries;       /* default 2 */
    size_t max_instances; /* default DNSSD_DEFAULT_MAX_INSTANCES */
};

/* True for "a.b.c.d" or "a.b.c.d:port" (port 1..65535). */
bool dnssd_server_valid(const char *s);

/* Returns 0, -EINVAL (bad server), -ENOMEM, -EIO (c-ares could not start; reason in err). */
int dnssd_new(uv_loop_t *loop, const struct dnssd_options *o, struct dnssd **ret, char *err,
              size_t errlen);
/* Cancels every browse (no callback) and frees once c-ares' sockets are closed. NULL-safe. */
struct dnssd *dnssd_free(struct dnssd *d);

/* Starts a browse of <service>.<domain> (service like "_liqo_auth._tcp", domain like
 * "example.com"). Returns 0, -EINVAL or -ENOMEM. *ret (may be NULL) can cancel it until the
 * callback has run. */
int dnssd_browse(struct dnssd *d, const char *service, const char *domain, dnssd_cb cb, void *data,
                 struct dnssd_browse **ret);
/* The callback will not be called. NULL-safe. */
void dnssd_browse_cancel(struct dnssd_browse *b);

#endif
