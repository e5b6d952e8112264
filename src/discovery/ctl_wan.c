/* The WAN side of discovery (see ctl.h): every SearchDomain is browsed with unicast DNS-SD every
 * spec.refreshSeconds (default 30): PTR <service>.<domain> (service: spec.service, else
 * ClusterConfig discoveryConfig.authService), then SRV and TXT of each instance (dnssd.h). What is
 * found goes into the table (kind WAN, owned by the SearchDomain); instances a successful refresh
 * no longer lists leave it, and with them their ForeignClusters (unless peered). A failed refresh
 * changes nothing but the SearchDomain's status: an outage is not an absence. One failing instance
 * lookup does not affect the others: its cluster is kept as it was.
 *
 * status of the SearchDomain (subresource): foreignClusters (references to the ForeignClusters of
 * the clusters found), and discovery {lastRefreshTime, result Ok | Partial | Empty | Error,
 * message, found, ignored, failed}. */
#include "discovery/ctl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/identity.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "discovery/dnssd.h"
#include "kube/backoff.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define REFRESH_MIN_S 1
#define REFRESH_MAX_S 86400

struct sdom {
    struct disc *d; /* the module (timer and lookup callbacks get the sdom) */
    bool used;
    char name[DREC_HOST_MAX + 1];
    char domain[DREC_HOST_MAX + 1];
    char service[DREC_LABEL_MAX * 2 + 2];
    char server[DNSSD_SERVER_MAX + 1];
    unsigned refresh_s;
    struct dnssd *dns;
    struct dnssd_browse *b;
    uv_timer_t *timer;
    /* The last refresh: did it succeed, and which clusters did it list (or could not look up). */
    bool last_ok;
    char (*keep_ids)[PEER_NAME_MAX + 1];
    size_t nkeep;
};

/* The WAN's part of the module's state (struct disc, d->wan). */
struct disc_wan {
    struct inf_informer *sds;
    struct sdom sd[DISC_SD_MAX];
    bool running;
};

static void copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

static struct sdom *sd_find(struct disc_wan *wan, const char *name)
{
    for (int i = 0; i < DISC_SD_MAX; i++)
        if (wan->sd[i].used && strcmp(wan->sd[i].name, name) == 0)
            return &wan->sd[i];
    return NULL;
}

bool disc_wan_known_absent(const struct disc *d, const char *sd, const char *id)
{
    const struct sdom *s = sd_find(d->wan, sd);

    if (!s || !s->last_ok)
        return false;
    for (size_t i = 0; i < s->nkeep; i++)
        if (strcmp(s->keep_ids[i], id) == 0)
            return false;
    return true;
}

/* ---- status ------------------------------------------------------------------------------------
 */

static void after_status(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c, (void)data;
    if (res->err < 0 && res->err != -ENOENT)
        log_warn(DISC_MOD, "cannot update the status of a SearchDomain: %s", res->status.message);
}

static void write_status(struct sdom *s, const char *result, const char *message, size_t found,
                         size_t ignored, size_t failed, char (*ids)[PEER_NAME_MAX + 1], size_t nids)
{
    char now[32], *body;
    json_t *refs = json_array(), *patch;

    rfc3339_now(0, now, sizeof(now));
    for (size_t i = 0; refs && i < nids; i++)
        json_array_append_new(refs,
                              json_pack("{s:s,s:s,s:s}", "apiVersion", "discovery.liqo.io/v1alpha1",
                                        "kind", "ForeignCluster", "name", ids[i]));
    patch = json_pack("{s:{s:o,s:{s:s,s:s,s:s,s:I,s:I,s:I}}}", "status", "foreignClusters", refs,
                      "discovery", "lastRefreshTime", now, "result", result, "message", message,
                      "found", (json_int_t)found, "ignored", (json_int_t)ignored, "failed",
                      (json_int_t)failed);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (body)
        (void)kapi_patch(agent_kube(disc_agent(s->d)), &peer_res_searchdomains, NULL, s->name,
                         "status", KAPI_PATCH_MERGE, body, after_status, NULL);
    x_free(body);
}

/* ---- refresh -----------------------------------------------------------------------------------
 */

static void schedule(struct sdom *s, uint64_t ms);

static bool keep_has(char (*ids)[PEER_NAME_MAX + 1], size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0)
            return true;
    return false;
}

static void on_result(struct dnssd *d, const struct dnssd_result *r, void *data)
{
    struct sdom *s = data;
    struct disc *dm = s->d;
    char service_domain[DREC_HOST_MAX * 2 + 8], msg[512] = "", (*keys)[DISC_KEY_MAX] = NULL;
    char(*ids)[PEER_NAME_MAX + 1] = NULL, (*found_ids)[PEER_NAME_MAX + 1] = NULL;
    size_t nkeys = 0, nids = 0, nfound = 0, ignored = 0, failed = 0;
    const char *own = identity_cluster_id(disc_agent(dm));

    (void)d;
    s->b = NULL;
    if (!dm->wan->running)
        return;
    schedule(s, (uint64_t)s->refresh_s * 1000);
    if (r->err < 0 && r->err != -ENOENT) {
        log_warn(DISC_MOD, "SearchDomain %s: %s; keeping what was found before", s->name,
                 r->message);
        disc_count_event(dm, "wan-refresh-error");
        s->last_ok = false;
        write_status(s, "Error", r->message, 0, 0, 0, NULL, 0);
        return;
    }
    disc_count_event(dm, "wan-refresh-ok");
    snprintf(service_domain, sizeof(service_domain), "%s.%s", s->service, s->domain);
    if (r->n) {
        keys = x_calloc(r->n, sizeof(*keys));
        ids = x_calloc(r->n, sizeof(*ids));
        found_ids = x_calloc(r->n, sizeof(*found_ids));
        if (!keys || !ids || !found_ids) {
            s->last_ok = false;
            goto out;
        }
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct dnssd_instance *in = &r->inst[i];
        struct disc_source src;
        enum drec_reason why = DREC_OK;
        char iid[PEER_NAME_MAX + 1] = "";
        unsigned conflict;
        size_t llen;
        bool named;

        memset(&src, 0, sizeof(src));
        if (drec_fullname_split(in->fullname, service_domain, src.instance, &llen) < 0) {
            why = DREC_BAD_INSTANCE;
            goto ignore;
        }
        named = drec_instance_parse(src.instance, llen, iid, &conflict, NULL) == 0;
        if (in->state == DNSSD_FAILED) {
            /* Unknown now: keep whatever this instance gave before. */
            failed++;
            copy(keys[nkeys++], DISC_KEY_MAX, in->fullname);
            if (named)
                copy(ids[nids++], PEER_NAME_MAX + 1, iid);
            else if (disc_source_id(dm, DISC_WAN, s->name, in->fullname))
                copy(ids[nids++], PEER_NAME_MAX + 1,
                     disc_source_id(dm, DISC_WAN, s->name, in->fullname));
            if (!msg[0])
                snprintf(msg, sizeof(msg), "%.200s: %.200s", in->fullname, in->message);
            continue;
        }
        if (in->state == DNSSD_ABSENT) {
            why = DREC_BAD_SRV;
            log_debug(DISC_MOD, "SearchDomain %s: instance %s: %s", s->name, in->fullname,
                      in->message);
            goto ignore;
        }
        if (in->multiple_txt) {
            why = DREC_MULTIPLE_TXT;
            goto ignore;
        }
        if (drec_txt_parse(in->txt, in->ntxt, 0, &src.a, &why) < 0)
            goto ignore;
        if (named && strcmp(iid, src.a.id) != 0) {
            why = DREC_ID_MISMATCH;
            goto ignore;
        }
        if (!src.a.url[0] && drec_url_from_srv(in->target, in->port, src.a.url) < 0) {
            why = DREC_BAD_SRV;
            goto ignore;
        }
        if (own && strcmp(own, src.a.id) == 0)
            continue;
        src.kind = DISC_WAN;
        copy(src.sd, sizeof(src.sd), s->name);
        copy(src.key, sizeof(src.key), in->fullname);
        if (disc_source_put(dm, src.a.id, &src) == -ENOSPC) {
            disc_count_dropped(dm, "clusters-cap");
            continue;
        }
        copy(keys[nkeys++], DISC_KEY_MAX, in->fullname);
        copy(ids[nids++], PEER_NAME_MAX + 1, src.a.id);
        if (!keep_has(found_ids, nfound, src.a.id))
            copy(found_ids[nfound++], PEER_NAME_MAX + 1, src.a.id);
        continue;
    ignore:
        ignored++;
        log_debug(DISC_MOD, "SearchDomain %s: ignoring instance %s: %s", s->name, in->fullname,
                  drec_reason_name(why));
        disc_count_ignored(dm, DISC_WAN, drec_reason_name(why));
    }
    if (r->truncated) {
        disc_count_dropped(dm, "wan-instances-cap");
        if (!msg[0])
            snprintf(msg, sizeof(msg), "%zu instances over the limit were not looked up",
                     r->truncated);
    }
    disc_sources_retain(dm, s->name, keys, nkeys);
    x_free(s->keep_ids);
    s->keep_ids = ids;
    s->nkeep = nids;
    ids = NULL;
    s->last_ok = true;
    log_debug(DISC_MOD, "SearchDomain %s: %zu clusters, %zu ignored, %zu failed", s->name, nfound,
              ignored, failed);
    write_status(s,
                 failed ? "Partial"
                 : r->n ? "Ok"
                        : "Empty",
                 msg[0]              ? msg
                 : r->err == -ENOENT ? "no instance listed"
                                     : "ok",
                 nfound, ignored, failed, found_ids, nfound);
out:
    x_free(keys);
    x_free(ids);
    x_free(found_ids);
    /* ForeignClusters of this domain the refresh no longer lists: the reconcile decides. */
    disc_enqueue_all(dm);
}

static void refresh(struct sdom *s)
{
    int e;

    if (!s->d->wan->running || s->b || !s->dns)
        return;
    e = dnssd_browse(s->dns, s->service, s->domain, on_result, s, &s->b);
    if (e < 0) {
        s->b = NULL;
        write_status(s, "Error", "cannot start the DNS lookups", 0, 0, 0, NULL, 0);
        schedule(s, (uint64_t)s->refresh_s * 1000);
    }
}

static void on_timer(uv_timer_t *t)
{
    refresh(t->data);
}

static void schedule(struct sdom *s, uint64_t ms)
{
    if (s->timer)
        uv_timer_start(s->timer, on_timer, ms, 0);
}

/* ---- SearchDomains -----------------------------------------------------------------------------
 */

static void sd_close(struct sdom *s)
{
    if (s->b)
        dnssd_browse_cancel(s->b);
    s->b = NULL;
    s->dns = dnssd_free(s->dns);
    ktimer_free(s->timer);
    s->timer = NULL;
}

static void sd_forget(struct sdom *s)
{
    sd_close(s);
    x_free(s->keep_ids);
    memset(s, 0, sizeof(*s));
}

static void sd_apply(struct disc *d, json_t *obj)
{
    struct disc_wan *wan = d->wan;
    const char *name = kapi_obj_name(obj), *domain, *server, *service;
    const json_t *spec = json_object_get(obj, "spec");
    struct sdom *s, n;
    json_int_t refresh_s;
    char err[256];

    if (!name || !wan->running)
        return;
    domain = json_string_value(json_object_get(spec, "domain"));
    server = json_string_value(json_object_get(spec, "dnsServer"));
    service = json_string_value(json_object_get(spec, "service"));
    refresh_s = json_integer_value(json_object_get(spec, "refreshSeconds"));
    memset(&n, 0, sizeof(n));
    n.d = d;
    copy(n.name, sizeof(n.name), name);
    copy(n.domain, sizeof(n.domain), domain);
    if (n.domain[0] && n.domain[strlen(n.domain) - 1] == '.')
        n.domain[strlen(n.domain) - 1] = '\0';
    copy(n.server, sizeof(n.server), server);
    copy(n.service, sizeof(n.service), service && *service ? service : disc_config(d)->service);
    n.refresh_s = refresh_s >= REFRESH_MIN_S && refresh_s <= REFRESH_MAX_S
                      ? (unsigned)refresh_s
                      : DISC_DEFAULT_WAN_REFRESH;
    s = sd_find(wan, name);
    if (s && strcmp(s->domain, n.domain) == 0 && strcmp(s->server, n.server) == 0 &&
        strcmp(s->service, n.service) == 0 && s->refresh_s == n.refresh_s) {
        disc_enqueue_all(d); /* autojoin may have changed */
        return;
    }
    if (!s) {
        for (int i = 0; i < DISC_SD_MAX && !s; i++)
            if (!wan->sd[i].used)
                s = &wan->sd[i];
        if (!s) {
            log_warn(DISC_MOD, "SearchDomain %s: more than %d SearchDomains; ignoring it", name,
                     DISC_SD_MAX);
            disc_count_dropped(d, "searchdomains-cap");
            return;
        }
    } else {
        /* Another domain or server: what the old one listed is unknown now. */
        sd_close(s);
        x_free(s->keep_ids);
        disc_sources_drop_all(d, DISC_WAN, name, false);
    }
    *s = n;
    s->used = true;
    if (!n.domain[0] || (n.server[0] && !dnssd_server_valid(n.server))) {
        write_status(s, "Error",
                     !n.domain[0] ? "spec.domain is empty"
                                  : "spec.dnsServer is not an IPv4 address with an optional port",
                     0, 0, 0, NULL, 0);
        return;
    }
    if (dnssd_new(agent_loop(disc_agent(d)),
                  &(struct dnssd_options){.server = n.server[0] ? n.server : NULL,
                                          .max_instances = disc_config(d)->max_clusters},
                  &s->dns, err, sizeof(err)) < 0) {
        write_status(s, "Error", err[0] ? err : "cannot start the DNS resolver", 0, 0, 0, NULL, 0);
        return;
    }
    s->timer = ktimer_new(agent_loop(disc_agent(d)), s);
    log_info(DISC_MOD, "SearchDomain %s: browsing %s.%s every %us%s%s", name, s->service, s->domain,
             s->refresh_s, n.server[0] ? " with DNS server " : "", n.server);
    refresh(s);
}

static void on_sd(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    sd_apply(data, obj);
}

static void on_sd_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_sd(inf, new_obj, data);
}

static void on_sd_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct disc *d = data;
    struct sdom *s = kapi_obj_name(obj) ? sd_find(d->wan, kapi_obj_name(obj)) : NULL;

    (void)inf;
    if (!s)
        return;
    log_info(DISC_MOD, "SearchDomain %s deleted: its ForeignClusters go with it (owner)", s->name);
    disc_sources_drop_all(d, DISC_WAN, s->name, false);
    sd_forget(s);
}

static void replay(json_t *obj, void *data)
{
    sd_apply(data, obj);
}

int disc_wan_init(struct disc *d)
{
    struct inf_handlers h = {.on_add = on_sd, .on_update = on_sd_update, .on_delete = on_sd_delete};

    d->wan = x_calloc(1, sizeof(*d->wan));
    if (!d->wan)
        return -ENOMEM;
    return agent_informer(disc_agent(d), &peer_res_searchdomains, NULL, NULL, 0, &h, d,
                          &d->wan->sds);
}

void disc_wan_start(struct disc *d)
{
    struct disc_wan *wan = d->wan;

    wan->running = true;
    /* The agent replays cached objects after start; applying twice is harmless. */
    if (wan->sds && inf_synced(wan->sds))
        inf_foreach(wan->sds, replay, d);
}

void disc_wan_stop(struct disc *d)
{
    struct disc_wan *wan = d->wan;

    wan->running = false;
    for (int i = 0; i < DISC_SD_MAX; i++)
        if (wan->sd[i].used)
            sd_close(&wan->sd[i]);
}

void disc_wan_fini(struct disc *d)
{
    struct disc_wan *wan = d->wan;

    if (!wan)
        return;
    for (int i = 0; i < DISC_SD_MAX; i++)
        if (wan->sd[i].used)
            sd_forget(&wan->sd[i]);
    x_free(wan);
    d->wan = NULL;
}
