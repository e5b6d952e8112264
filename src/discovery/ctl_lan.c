/* The LAN side of discovery (see ctl.h): configuration from ClusterConfig spec.discoveryConfig,
 * the mDNS responder (interfaces, our announcement, the browse) and what it reports.
 *
 * The announcement: instance "<cluster name>_<cluster ID>" of discoveryConfig.authService in
 * discoveryConfig.domain, SRV to our mDNS host "cliqo-<ID prefix>" and the auth endpoint's port
 * (discoveryConfig.port if set), TXT txtvers, id, name, url (the auth URL: --auth-url, else
 * ClusterConfig spec.peeringConfig.authUrl) and cahash (of the auth CA in Secret auth-tls), TTL
 * discoveryConfig.ttl. Any change of these re-announces.
 *
 * Interfaces: discoveryConfig.interfaces if given; otherwise every interface that is up,
 * multicast-capable, has an IPv4 address, is not loopback and does not look like a pod network
 * (names starting with one of pod_prefixes). Checked again every IFACE_RESCAN_MS; a change
 * restarts the responder (goodbye, then a fresh announcement on the new set). */
#include "discovery/ctl.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/config.h"
#include "agent/identity.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "discovery/mdns.h"
#include "peering/pki.h"
#include "peering/resources.h"

#define IFACE_RESCAN_MS 10000
#define IFACES_MAX      16

/* Interfaces of container and pod networks on a node (CNI plugins, bridges, tunnels). */
static const char *const pod_prefixes[] = {"cni",   "flannel", "cali",         "cilium", "lxc",
                                           "vxlan", "weave",   "docker",       "veth",   "kube-",
                                           "tunl",  "genev",   "nodelocaldns", "cbr",    "liqo",
                                           "ovn",   "antrea",  "kilo",         "wg-",    "flannel"};

/* The LAN's part of the module's state (struct disc, d->lan). */
struct disc_lan {
    struct disc *d;
    struct mdns *m;
    bool running;
    char ifaces[IFACES_MAX][IF_NAMESIZE];
    size_t nifaces;
    char host[DREC_LABEL_MAX + 1];
    unsigned max; /* the responder's browse limit */
    char btype[DREC_LABEL_MAX * 2 + 2], bdomain[DREC_HOST_MAX + 1];
    int64_t browse_since;
    int64_t last_scan, last_fail;
    char state[24];
    char warned[256];
    unsigned long rejected_before; /* mDNS packets rejected by the responders freed so far */
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *disc_lan_state(const struct disc *d)
{
    return d->lan->state[0] ? d->lan->state : "none";
}

int64_t disc_lan_sweep_after(const struct disc *d)
{
    const struct disc_lan *lan = d->lan;

    return lan->browse_since ? lan->browse_since + (int64_t)disc_config(d)->ttl * 1000 : 0;
}

unsigned long disc_lan_rejected_packets(const struct disc *d)
{
    return d->lan->rejected_before + mdns_rejected_packets(d->lan->m);
}

/* Logs a warning once per distinct message (the configuration is looked at often). */
static void warn_once(struct disc_lan *lan, const char *msg)
{
    if (strcmp(lan->warned, msg) == 0)
        return;
    snprintf(lan->warned, sizeof(lan->warned), "%s", msg);
    log_warn(DISC_MOD, "%s", msg);
}

/* ---- configuration -----------------------------------------------------------------------------
 */

static void copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

static bool get_bool(const json_t *o, const char *k, bool def)
{
    const json_t *v = json_object_get(o, k);

    return json_is_boolean(v) ? json_is_true(v) : def;
}

static unsigned get_uint(const json_t *o, const char *k, unsigned def, unsigned min, unsigned max)
{
    const json_t *v = json_object_get(o, k);
    json_int_t i;

    if (!json_is_integer(v))
        return def;
    i = json_integer_value(v);
    return i < min ? min : i > max ? max : (unsigned)i;
}

static void read_config(struct disc *d)
{
    struct disc_lan_config *c = &d->cfg, n;
    json_t *cc = disc_cluster_config(d);
    const json_t *dc = json_object_get(json_object_get(cc, "spec"), "discoveryConfig");
    const json_t *ifs = json_object_get(dc, "interfaces"), *v;
    const char *s;
    size_t i;

    memset(&n, 0, sizeof(n));
    /* Opt-in (the CRD's defaults too): announcing tells the LAN about us, browsing turns what
     * anyone on the LAN says into ForeignClusters. */
    n.enable_discovery = get_bool(dc, "enableDiscovery", false);
    n.enable_advertisement = get_bool(dc, "enableAdvertisement", false);
    n.autojoin = get_bool(dc, "autojoin", true);
    n.autojoin_untrusted = get_bool(dc, "autojoinUntrusted", false);
    copy(n.cluster_name, sizeof(n.cluster_name),
         json_string_value(json_object_get(dc, "clusterName")));
    copy(n.name, sizeof(n.name), json_string_value(json_object_get(dc, "name")));
    s = json_string_value(json_object_get(dc, "authService"));
    copy(n.service, sizeof(n.service), s && *s ? s : "_liqo_auth._tcp");
    s = json_string_value(json_object_get(dc, "domain"));
    copy(n.domain, sizeof(n.domain), s && *s ? s : "local");
    if (strlen(n.domain) > 1 && n.domain[strlen(n.domain) - 1] == '.')
        n.domain[strlen(n.domain) - 1] = '\0';
    n.port = get_uint(dc, "port", 0, 0, 65535);
    n.ttl = get_uint(dc, "ttl", DISC_DEFAULT_TTL, 1, 86400);
    n.max_clusters = get_uint(dc, "maxClusters", DISC_DEFAULT_MAX, 1, DISC_MAX_LIMIT);
    json_array_foreach(ifs, i, v)
    {
        s = json_string_value(v);
        if (s && *s && strlen(s) < sizeof(n.interfaces[0]) && n.ninterfaces < 16)
            copy(n.interfaces[n.ninterfaces++], sizeof(n.interfaces[0]), s);
    }
    *c = n;
    json_decref(cc);
}

static const char *auth_url(struct disc *d, char *buf, size_t size)
{
    const struct agent_config *ac = agent_config(disc_agent(d));
    json_t *cc;
    const char *u;

    if (ac && ac->auth_url)
        return ac->auth_url;
    cc = disc_cluster_config(d);
    u = json_string_value(
        json_object_get(json_object_get(json_object_get(cc, "spec"), "peeringConfig"), "authUrl"));
    copy(buf, size, u);
    json_decref(cc);
    return buf[0] ? buf : NULL;
}

/* ---- interfaces --------------------------------------------------------------------------------
 */

static bool pod_network(const char *name)
{
    for (size_t i = 0; i < sizeof(pod_prefixes) / sizeof(pod_prefixes[0]); i++)
        if (strncmp(name, pod_prefixes[i], strlen(pod_prefixes[i])) == 0)
            return true;
    return false;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The interfaces to use now, sorted. */
static size_t pick_interfaces(const struct disc *d, char out[IFACES_MAX][IF_NAMESIZE])
{
    const struct disc_lan_config *c = disc_config(d);
    struct ifaddrs *ifs = NULL;
    size_t n = 0;

    if (c->ninterfaces > 0) {
        for (size_t i = 0; i < c->ninterfaces && n < IFACES_MAX; i++)
            copy(out[n++], IF_NAMESIZE, c->interfaces[i]);
    } else if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            bool dup = false;

            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
                !(i->ifa_flags & IFF_MULTICAST) || (i->ifa_flags & IFF_LOOPBACK) ||
                strlen(i->ifa_name) >= IF_NAMESIZE || pod_network(i->ifa_name))
                continue;
            for (size_t k = 0; k < n; k++)
                dup = dup || strcmp(out[k], i->ifa_name) == 0;
            if (!dup && n < IFACES_MAX)
                copy(out[n++], IF_NAMESIZE, i->ifa_name);
        }
        freeifaddrs(ifs);
    }
    qsort(out, n, IF_NAMESIZE, name_cmp);
    return n;
}

/* ---- responder callbacks -----------------------------------------------------------------------
 */

static void on_found(struct mdns *m, const struct mdns_found *f, void *data)
{
    struct disc_source s;
    enum drec_reason why;
    char id[PEER_NAME_MAX + 1];
    unsigned conflict;
    struct disc *d = ((struct disc_lan *)data)->d;
    const char *own = identity_cluster_id(disc_agent(d));
    int e;

    (void)m;
    memset(&s, 0, sizeof(s));
    e = drec_txt_parse(f->txt, f->ntxt, DREC_REQUIRE_URL, &s.a, &why);
    /* An instance name in our format must name the same cluster as its TXT. */
    if (e == 0 && drec_instance_parse(f->instance, strlen(f->instance), id, &conflict, NULL) == 0 &&
        strcmp(id, s.a.id) != 0) {
        why = DREC_ID_MISMATCH;
        e = -EINVAL;
    }
    if (e < 0) {
        log_debug(DISC_MOD, "LAN: ignoring instance '%s': %s", f->instance, drec_reason_name(why));
        disc_count_ignored(d, DISC_LAN, drec_reason_name(why));
        disc_source_drop(d, DISC_LAN, "", f->instance); /* it may have been valid before */
        return;
    }
    if (own && strcmp(s.a.id, own) == 0)
        return; /* ourselves (an earlier incarnation, or a copy of our announcement) */
    s.kind = DISC_LAN;
    copy(s.key, sizeof(s.key), f->instance);
    copy(s.instance, sizeof(s.instance), f->instance);
    e = disc_source_put(d, s.a.id, &s);
    if (e == -ENOSPC) {
        log_debug(DISC_MOD, "LAN: ignoring cluster %s: the table is full", s.a.id);
        disc_count_dropped(d, "clusters-cap");
        return;
    }
    disc_count_event(d, "lan-found");
}

static void on_removed(struct mdns *m, const char *instance, void *data)
{
    struct disc *d = ((struct disc_lan *)data)->d;

    (void)m;
    log_debug(DISC_MOD, "LAN: instance '%s' is gone (goodbye or TTL)", instance);
    disc_count_event(d, "lan-removed");
    disc_source_drop(d, DISC_LAN, "", instance);
}

static void on_published(struct mdns *m, enum mdns_pub_state st, const char *instance,
                         const char *msg, void *data)
{
    struct disc_lan *lan = data;

    (void)m;
    copy(lan->state, sizeof(lan->state), mdns_pub_state_name(st));
    switch (st) {
    case MDNS_PUB_ESTABLISHED:
        log_info(DISC_MOD, "announcing this cluster on the LAN as '%s' (%s.%s)", instance,
                 disc_config(lan->d)->service, disc_config(lan->d)->domain);
        break;
    case MDNS_PUB_RENAMED:
        log_warn(DISC_MOD, "mDNS: %s: renamed to '%s' and probing again", msg, instance);
        break;
    case MDNS_PUB_FAILED:
        log_warn(DISC_MOD, "mDNS: cannot announce this cluster: %s", msg);
        break;
    default:
        break;
    }
}

static void on_dropped(struct mdns *m, const char *reason, const char *instance, void *data)
{
    struct disc_lan *lan = data;

    (void)m;
    if (strcmp(reason, "cap") == 0) {
        log_debug(DISC_MOD, "LAN: not following instance '%s': the browse limit is reached",
                  instance);
        disc_count_dropped(lan->d, "mdns-cap");
    } else if (strcmp(reason, "unresolved") == 0) {
        log_debug(DISC_MOD, "LAN: instance '%s' has no SRV or TXT record", instance);
        disc_count_ignored(lan->d, DISC_LAN, "unresolved");
    } else {
        log_warn(DISC_MOD, "mDNS: the browser failed; restarting the responder");
        lan->last_scan = 0; /* the next tick restarts */
        lan->nifaces = IFACES_MAX + 1;
    }
}

/* ---- apply -------------------------------------------------------------------------------------
 */

static void responder_stop(struct disc_lan *lan)
{
    if (!lan->m)
        return;
    lan->rejected_before += mdns_rejected_packets(lan->m);
    lan->m = mdns_free(lan->m); /* goodbyes */
    lan->browse_since = 0;
    lan->btype[0] = lan->bdomain[0] = '\0';
    /* What it saw is unknown now, not gone: those clusters go only if a new browse does not find
     * them within a TTL. */
    disc_sources_drop_all(lan->d, DISC_LAN, NULL, false);
}

static void host_label(const char *id, char out[DREC_LABEL_MAX + 1])
{
    size_t o = 0;

    o = (size_t)snprintf(out, DREC_LABEL_MAX + 1, "cliqo-");
    for (size_t i = 0; id && id[i] && o < 6 + 12; i++)
        if ((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9'))
            out[o++] = id[i];
    while (o > 0 && out[o - 1] == '-')
        o--;
    out[o] = '\0';
}

static void announce(struct disc_lan *lan)
{
    struct disc *d = lan->d;
    const struct disc_lan_config *c = disc_config(d);
    const char *id = identity_cluster_id(disc_agent(d)),
               *iname = identity_cluster_name(disc_agent(d)), *url;
    char ubuf[DREC_URL_MAX + 1], items[DREC_TXT_BUILD_MAX][DREC_TXT_ITEM_MAX + 1], err[256];
    const char *txt[DREC_TXT_BUILD_MAX], *prefix;
    struct drec_announce a;
    json_t *tls;
    char *ca;
    size_t n;
    int e;

    if (!c->enable_advertisement) {
        mdns_unpublish(lan->m);
        copy(lan->state, sizeof(lan->state), "disabled");
        return;
    }
    url = auth_url(d, ubuf, sizeof(ubuf));
    if (!url || !drec_url_valid(url)) {
        mdns_unpublish(lan->m);
        copy(lan->state, sizeof(lan->state), "no-auth-url");
        warn_once(lan,
                  url ? "not announcing this cluster on the LAN: its auth URL is not "
                        "https://host[:port] (set --auth-url or ClusterConfig "
                        "spec.peeringConfig.authUrl)"
                      : "not announcing this cluster on the LAN: no auth URL (set --auth-url or "
                        "ClusterConfig spec.peeringConfig.authUrl)");
        return;
    }
    memset(&a, 0, sizeof(a));
    copy(a.id, sizeof(a.id), id);
    prefix = c->cluster_name[0] ? c->cluster_name : iname && *iname ? iname : c->name;
    if (peer_cluster_name_valid(prefix))
        copy(a.name, sizeof(a.name), prefix);
    copy(a.url, sizeof(a.url), url);
    tls = disc_secret(d, PEER_AUTH_TLS_SECRET);
    ca = disc_secret_field(tls, "ca.crt", PEER_PKI_PEM_MAX);
    if (ca && peer_pki_ca_hash(ca, strlen(ca), a.ca_hash, err, sizeof(err)) < 0)
        a.ca_hash[0] = '\0';
    x_free(ca);
    json_decref(tls);
    if (drec_txt_build(&a, items, &n) < 0) {
        warn_once(lan, "not announcing this cluster on the LAN: its identity does not fit in TXT");
        return;
    }
    for (size_t i = 0; i < n; i++)
        txt[i] = items[i];
    e = mdns_publish(lan->m, &(struct mdns_service){.prefix = prefix,
                                                    .id = id,
                                                    .type = c->service,
                                                    .domain = c->domain,
                                                    .port = c->port ? c->port : drec_url_port(url),
                                                    .ttl = c->ttl,
                                                    .txt = txt,
                                                    .ntxt = n});
    if (e < 0) {
        snprintf(
            err, sizeof(err),
            "not announcing this cluster on the LAN: service type '%.60s' or domain '%.100s' is "
            "not valid for DNS-SD",
            c->service, c->domain);
        warn_once(lan, err);
    }
}

void disc_lan_reconfigure(struct disc *d)
{
    struct disc_lan *lan = d->lan;
    const struct disc_lan_config *c;
    char ifaces[IFACES_MAX][IF_NAMESIZE], host[DREC_LABEL_MAX + 1], err[256];
    const char *allow[IFACES_MAX + 1];
    const char *id = identity_cluster_id(disc_agent(d));
    size_t n;
    int e;

    read_config(d);
    if (!lan->running)
        return;
    c = disc_config(d);
    if (!id) {
        responder_stop(lan); /* no identity yet: nothing to announce, cannot tell ourselves apart */
        return;
    }
    if (!c->enable_discovery && !c->enable_advertisement) {
        responder_stop(lan);
        copy(lan->state, sizeof(lan->state), "disabled");
        return;
    }
    memset(ifaces, 0, sizeof(ifaces));
    n = pick_interfaces(d, ifaces);
    lan->last_scan = now_ms();
    host_label(id, host);
    if (lan->m && (n != lan->nifaces || memcmp(ifaces, lan->ifaces, sizeof(ifaces)) != 0 ||
                   strcmp(host, lan->host) != 0 || lan->max != c->max_clusters)) {
        log_info(DISC_MOD, "mDNS: the interfaces, host name or limit changed; restarting the "
                           "responder");
        responder_stop(lan);
    }
    if (!lan->m) {
        if (n == 0) {
            copy(lan->state, sizeof(lan->state), "failed");
            warn_once(lan,
                      "mDNS: no usable network interface (up, multicast, IPv4, not loopback or a "
                      "pod network); set ClusterConfig discoveryConfig.interfaces");
            return;
        }
        for (size_t i = 0; i < n; i++)
            allow[i] = ifaces[i];
        allow[n] = NULL;
        e = mdns_new(agent_loop(disc_agent(d)),
                     &(struct mdns_options){
                         .host_name = host, .allow_ifaces = allow, .max_services = c->max_clusters},
                     &(struct mdns_callbacks){.found = on_found,
                                              .removed = on_removed,
                                              .published = on_published,
                                              .dropped = on_dropped},
                     lan, &lan->m, err, sizeof(err));
        if (e < 0) {
            lan->last_fail = now_ms();
            copy(lan->state, sizeof(lan->state), "failed");
            warn_once(lan, err[0] ? err : "mDNS: cannot start the responder");
            return;
        }
        memcpy(lan->ifaces, ifaces, sizeof(ifaces));
        lan->nifaces = n;
        copy(lan->host, sizeof(lan->host), host);
        lan->max = c->max_clusters;
        {
            char list[IFACES_MAX * (IF_NAMESIZE + 1) + 1];
            size_t o = 0;

            list[0] = '\0';
            for (size_t i = 0; i < n; i++)
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? "," : "", ifaces[i]);
            log_info(DISC_MOD, "mDNS responder on %s as host '%s'", list, host);
        }
    }
    if (c->enable_discovery) {
        if (strcmp(lan->btype, c->service) != 0 || strcmp(lan->bdomain, c->domain) != 0) {
            if (lan->browse_since)
                disc_sources_drop_all(d, DISC_LAN, NULL, false);
            e = mdns_browse(lan->m, c->service, c->domain);
            if (e < 0) {
                snprintf(err, sizeof(err), "mDNS: cannot browse '%.60s' in '%.100s'", c->service,
                         c->domain);
                warn_once(lan, err);
                lan->browse_since = 0;
            } else {
                copy(lan->btype, sizeof(lan->btype), c->service);
                copy(lan->bdomain, sizeof(lan->bdomain), c->domain);
                lan->browse_since = now_ms();
            }
        }
    } else if (lan->browse_since) {
        mdns_browse_stop(lan->m);
        lan->browse_since = 0;
        lan->btype[0] = lan->bdomain[0] = '\0';
        disc_sources_drop_all(d, DISC_LAN, NULL, false);
    }
    announce(lan);
}

void disc_lan_tick(struct disc *d)
{
    struct disc_lan *lan = d->lan;
    int64_t now = now_ms();

    if (!lan->running)
        return;
    if ((lan->m && now - lan->last_scan >= IFACE_RESCAN_MS) ||
        (!lan->m && now - lan->last_fail >= IFACE_RESCAN_MS))
        disc_lan_reconfigure(d);
    else if (!lan->m && !lan->last_fail)
        disc_lan_reconfigure(d);
}

int disc_lan_init(struct disc *d)
{
    d->lan = x_calloc(1, sizeof(*d->lan));
    if (!d->lan)
        return -ENOMEM;
    d->lan->d = d;
    read_config(d);
    return 0;
}

void disc_lan_start(struct disc *d)
{
    d->lan->running = true;
    disc_lan_reconfigure(d);
}

void disc_lan_stop(struct disc *d)
{
    d->lan->running = false;
    responder_stop(d->lan);
}

void disc_lan_fini(struct disc *d)
{
    if (!d->lan)
        return;
    disc_lan_stop(d);
    x_free(d->lan);
    d->lan = NULL;
}
