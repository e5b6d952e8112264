/* mdns: cliqo's announcer and browser on libavahi-core (see mdns.h). */
#include "discovery/mdns.h"

#include <avahi-common/alternative.h>
#include <avahi-common/domain.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-core/core.h>
#include <avahi-core/log.h>
#include <avahi-core/lookup.h>
#include <avahi-core/publish.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "discovery/avahi_uv.h"

#define TXT_STRINGS_MAX 8
#define TTL_MAX         86400

struct entry {
    struct mdns *m;
    char name[DREC_LABEL_MAX + 1];
    unsigned refs; /* copies seen (per interface) */
    bool resolved, reported_unresolved;
    AvahiSServiceResolver *res;
};

struct service {
    char prefix[DREC_LABEL_MAX + 1];
    char id[PEER_NAME_MAX + 1];
    char type[DREC_LABEL_MAX * 2 + 2];
    char domain[DREC_HOST_MAX + 1];
    unsigned port, ttl;
    char txt[TXT_STRINGS_MAX][DREC_TXT_ITEM_MAX + 1];
    size_t ntxt;
};

struct mdns {
    uv_loop_t *loop;
    struct auv *poll;
    AvahiServer *server;
    struct mdns_callbacks cb;
    void *data;
    size_t max_services;
    char host[DREC_LABEL_MAX + 1]; /* the host label we were given */
    char fqdn[DREC_HOST_MAX + 1];  /* SRV target: "<host>[-<n>].<domain>" */
    char allow[MDNS_MAX_IFACES][IF_NAMESIZE], deny[MDNS_MAX_IFACES][IF_NAMESIZE];
    size_t nallow, ndeny;
    /* announcing */
    AvahiSEntryGroup *group;
    AvahiSEntryGroup *old_group; /* the previous service, withdrawn once the new one is up */
    bool want;                   /* a service should be announced */
    bool in_group;               /* svc's records are in the group (updates replace them) */
    struct service svc, committed;
    unsigned conflict; /* 0: none; n >= 2: " #n" */
    char instance[DREC_LABEL_MAX + 1];
    enum mdns_pub_state pub;
    /* browsing */
    AvahiSServiceBrowser *browser;
    char btype[DREC_LABEL_MAX * 2 + 2], bdomain[DREC_HOST_MAX + 1];
    struct entry **entries;
    size_t nentries;
    unsigned long rejected; /* packets Avahi rejected (avahi_log_hook) */
};

unsigned long mdns_rejected_packets(const struct mdns *m)
{
    return m ? m->rejected : 0;
}

const char *mdns_pub_state_name(enum mdns_pub_state s)
{
    switch (s) {
    case MDNS_PUB_NONE:
        return "none";
    case MDNS_PUB_PROBING:
        return "probing";
    case MDNS_PUB_ESTABLISHED:
        return "established";
    case MDNS_PUB_RENAMED:
        return "renamed";
    case MDNS_PUB_FAILED:
        return "failed";
    }
    return "unknown";
}

/* Avahi logs through one process-wide function. Its messages go to our log at debug level (a
 * hostile LAN must not be able to flood the log), errors at warn; the packets it rejects are
 * counted in the responder that received them (the one whose socket callback is running: packets
 * are read only there). */
static void avahi_log_hook(AvahiLogLevel level, const char *txt)
{
    struct mdns *m = auv_dispatching();

    static const char *const rejects[] = {
        "Received invalid packet", "Packet too short or invalid",  "Invalid response packet",
        "Invalid legacy unicast",  "Received non-local",           "with invalid source port",
        "with invalid TTL",        "Received packet from invalid",
    };

    for (size_t i = 0; i < sizeof(rejects) / sizeof(rejects[0]); i++)
        if (strstr(txt, rejects[i])) {
            if (m)
                m->rejected++;
            break;
        }
    log_msg(level == AVAHI_LOG_ERROR ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG, "mdns", "avahi: %s", txt);
}

static void set_pub(struct mdns *m, enum mdns_pub_state st, const char *msg)
{
    m->pub = st;
    if (m->cb.published)
        m->cb.published(m, st, m->instance, msg ? msg : "", m->data);
}

/* ---- announcing ------------------------------------------------------------------------------
 */

static void publish_now(struct mdns *m);

static void group_cb(AvahiServer *s, AvahiSEntryGroup *g, AvahiEntryGroupState state, void *data)
{
    struct mdns *m = data;
    char msg[160];

    (void)s;
    if (g != m->group && m->group)
        return;
    switch (state) {
    case AVAHI_ENTRY_GROUP_ESTABLISHED:
        if (m->old_group) {
            /* The new name is defended now: say goodbye to the old one. Browsers saw the new
             * instance before the old one left, so a rename never looks like a departure. */
            avahi_s_entry_group_free(m->old_group);
            m->old_group = NULL;
        }
        set_pub(m, MDNS_PUB_ESTABLISHED, "announced");
        break;
    case AVAHI_ENTRY_GROUP_COLLISION:
        /* Another host owns the name: pick the next one and probe again. */
        m->conflict = m->conflict < 2 ? 2 : m->conflict + 1;
        m->in_group = false;
        avahi_s_entry_group_reset(g);
        if (m->conflict > DREC_CONFLICT_MAX) {
            set_pub(m, MDNS_PUB_FAILED, "too many name conflicts");
            return;
        }
        snprintf(msg, sizeof(msg), "name conflict on '%s'", m->instance);
        publish_now(m);
        if (m->pub != MDNS_PUB_FAILED)
            set_pub(m, MDNS_PUB_RENAMED, msg);
        break;
    case AVAHI_ENTRY_GROUP_FAILURE:
        m->in_group = false;
        snprintf(msg, sizeof(msg), "Avahi: %s", avahi_strerror(avahi_server_errno(m->server)));
        set_pub(m, MDNS_PUB_FAILED, msg);
        break;
    case AVAHI_ENTRY_GROUP_UNCOMMITED:
    case AVAHI_ENTRY_GROUP_REGISTERING:
        break;
    }
}

static int add_record(struct mdns *m, AvahiRecord *r, AvahiPublishFlags flags)
{
    int e = avahi_server_add(m->server, m->group, AVAHI_IF_UNSPEC, AVAHI_PROTO_INET, flags, r);

    avahi_record_unref(r);
    return e;
}

static AvahiRecord *ptr_record(const char *name, const char *target, unsigned ttl)
{
    AvahiRecord *r = avahi_record_new_full(name, AVAHI_DNS_CLASS_IN, AVAHI_DNS_TYPE_PTR, ttl);

    if (r && !(r->data.ptr.name = avahi_strdup(target))) {
        avahi_record_unref(r);
        r = NULL;
    }
    return r;
}

/* Adds SRV and TXT (flags: UNIQUE, or UNIQUE|UPDATE to replace them in an established group). */
static int add_srv_txt(struct mdns *m, const char *svc_name, AvahiPublishFlags flags, char *why,
                       size_t whylen)
{
    const char *txt[TXT_STRINGS_MAX];
    AvahiRecord *r;
    int e;

    r = avahi_record_new_full(svc_name, AVAHI_DNS_CLASS_IN, AVAHI_DNS_TYPE_SRV, m->svc.ttl);
    if (!r)
        return snprintf(why, whylen, "out of memory"), -ENOMEM;
    r->data.srv.priority = 0;
    r->data.srv.weight = 0;
    r->data.srv.port = (uint16_t)m->svc.port;
    r->data.srv.name = avahi_strdup(m->fqdn);
    if (!r->data.srv.name) {
        avahi_record_unref(r);
        return snprintf(why, whylen, "out of memory"), -ENOMEM;
    }
    if ((e = add_record(m, r, flags)) < 0)
        return snprintf(why, whylen, "SRV: %s", avahi_strerror(e)), -EIO;
    r = avahi_record_new_full(svc_name, AVAHI_DNS_CLASS_IN, AVAHI_DNS_TYPE_TXT, m->svc.ttl);
    if (!r)
        return snprintf(why, whylen, "out of memory"), -ENOMEM;
    for (size_t i = 0; i < m->svc.ntxt; i++)
        txt[i] = m->svc.txt[i];
    r->data.txt.string_list = avahi_string_list_new_from_array(txt, (int)m->svc.ntxt);
    if (m->svc.ntxt && !r->data.txt.string_list) {
        avahi_record_unref(r);
        return snprintf(why, whylen, "out of memory"), -ENOMEM;
    }
    if ((e = add_record(m, r, flags)) < 0)
        return snprintf(why, whylen, "TXT: %s", avahi_strerror(e)), -EIO;
    return 0;
}

static bool in_list(char list[][IF_NAMESIZE], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

/* A records for our host name on every interface we announce on (the SRV target resolves for
 * DNS-SD clients that look it up), without the reverse PTR: the host's own responder, if any,
 * owns the reverse mapping of its addresses, and two owners would fight over it forever. */
static int add_addresses(struct mdns *m, char *why, size_t whylen)
{
    struct ifaddrs *ifs = NULL;
    int e, added = 0;

    if (getifaddrs(&ifs) < 0)
        return snprintf(why, whylen, "getifaddrs: %s", strerror(errno)), -EIO;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        AvahiAddress a;
        unsigned idx;

        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
            in_list(m->deny, m->ndeny, i->ifa_name))
            continue;
        if (m->nallow ? !in_list(m->allow, m->nallow, i->ifa_name)
                      : (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_MULTICAST))
            continue;
        idx = if_nametoindex(i->ifa_name);
        if (idx == 0 || idx > INT32_MAX)
            continue;
        a.proto = AVAHI_PROTO_INET;
        a.data.ipv4.address = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        e = avahi_server_add_address(m->server, m->group, (AvahiIfIndex)idx, AVAHI_PROTO_INET,
                                     AVAHI_PUBLISH_NO_REVERSE, m->fqdn, &a);
        if (e < 0 && e != AVAHI_ERR_COLLISION) {
            freeifaddrs(ifs);
            return snprintf(why, whylen, "A record: %s", avahi_strerror(e)), -EIO;
        }
        added++;
    }
    freeifaddrs(ifs);
    (void)added; /* none: nothing to announce on yet; the service records still go out */
    return 0;
}

static bool same_identity(const struct service *a, const struct service *b)
{
    return strcmp(a->prefix, b->prefix) == 0 && strcmp(a->id, b->id) == 0 &&
           strcmp(a->type, b->type) == 0 && strcmp(a->domain, b->domain) == 0 && a->ttl == b->ttl;
}

/* Puts m->svc into the group: an update of SRV and TXT when only they changed, else the whole
 * service anew. Runs when the server is running (else later, from server_cb). */
static void publish_now(struct mdns *m)
{
    char svc_name[AVAHI_DOMAIN_NAME_MAX], ptr_name[AVAHI_DOMAIN_NAME_MAX],
        enum_name[AVAHI_DOMAIN_NAME_MAX], why[200] = "";
    AvahiRecord *r;
    int e;

    if (!m->want || !m->server || avahi_server_get_state(m->server) != AVAHI_SERVER_RUNNING)
        return;
    if (!m->group) {
        m->group = avahi_s_entry_group_new(m->server, group_cb, m);
        if (!m->group) {
            snprintf(why, sizeof(why), "entry group: %s",
                     avahi_strerror(avahi_server_errno(m->server)));
            goto fail;
        }
    }
    if (m->in_group && same_identity(&m->svc, &m->committed)) {
        if (avahi_service_name_join(svc_name, sizeof(svc_name), m->instance, m->svc.type,
                                    m->svc.domain) < 0 ||
            add_srv_txt(m, svc_name, AVAHI_PUBLISH_UNIQUE | AVAHI_PUBLISH_UPDATE, why,
                        sizeof(why)) < 0)
            goto fail;
        m->committed = m->svc;
        return;
    }
    if (m->in_group && !same_identity(&m->svc, &m->committed)) {
        AvahiSEntryGroup *fresh = avahi_s_entry_group_new(m->server, group_cb, m);

        m->conflict = 0; /* a new name: start again without a suffix */
        if (fresh) {
            /* Keep announcing the old service until the new one is established. */
            if (m->old_group)
                avahi_s_entry_group_free(m->old_group);
            m->old_group = m->group;
            m->group = fresh;
        }
    }
    avahi_s_entry_group_reset(m->group);
    m->in_group = false;
    if (m->conflict > 1)
        snprintf(m->fqdn, sizeof(m->fqdn), "%s-%u.%s", m->host, m->conflict,
                 avahi_server_get_domain_name(m->server));
    else
        snprintf(m->fqdn, sizeof(m->fqdn), "%s.%s", m->host,
                 avahi_server_get_domain_name(m->server));
    if (drec_instance_build(m->svc.prefix, m->svc.id, m->conflict, m->instance) < 0) {
        snprintf(why, sizeof(why), "no instance name fits for ID '%s' (conflict %u)", m->svc.id,
                 m->conflict);
        goto fail;
    }
    if ((e = avahi_service_name_join(svc_name, sizeof(svc_name), m->instance, m->svc.type,
                                     m->svc.domain)) < 0 ||
        (e = avahi_service_name_join(ptr_name, sizeof(ptr_name), NULL, m->svc.type,
                                     m->svc.domain)) < 0 ||
        (e = avahi_service_name_join(enum_name, sizeof(enum_name), NULL, "_services._dns-sd._udp",
                                     m->svc.domain)) < 0) {
        snprintf(why, sizeof(why), "service name: %s", avahi_strerror(e));
        goto fail;
    }
    if (!(r = ptr_record(ptr_name, svc_name, m->svc.ttl)) || (e = add_record(m, r, 0)) < 0) {
        snprintf(why, sizeof(why), "PTR: %s", r ? avahi_strerror(e) : "out of memory");
        goto fail;
    }
    if (add_srv_txt(m, svc_name, AVAHI_PUBLISH_UNIQUE, why, sizeof(why)) < 0 ||
        add_addresses(m, why, sizeof(why)) < 0)
        goto fail;
    if (!(r = ptr_record(enum_name, ptr_name, m->svc.ttl)) || (e = add_record(m, r, 0)) < 0) {
        snprintf(why, sizeof(why), "enumeration PTR: %s", r ? avahi_strerror(e) : "out of memory");
        goto fail;
    }
    if ((e = avahi_s_entry_group_commit(m->group)) < 0) {
        snprintf(why, sizeof(why), "commit: %s", avahi_strerror(e));
        goto fail;
    }
    m->in_group = true;
    m->committed = m->svc;
    if (m->pub != MDNS_PUB_RENAMED)
        set_pub(m, MDNS_PUB_PROBING, "probing");
    return;
fail:
    if (m->group)
        avahi_s_entry_group_reset(m->group);
    if (m->old_group)
        avahi_s_entry_group_free(m->old_group);
    m->old_group = NULL;
    m->in_group = false;
    set_pub(m, MDNS_PUB_FAILED, why);
}

static void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

int mdns_publish(struct mdns *m, const struct mdns_service *s)
{
    struct service n;
    char inst[DREC_LABEL_MAX + 1];

    if (!m || !s || !s->type || !s->domain || s->port == 0 || s->port > 65535 || s->ttl == 0 ||
        s->ttl > TTL_MAX || s->ntxt > TXT_STRINGS_MAX || (s->ntxt && !s->txt))
        return -EINVAL;
    if (strlen(s->type) >= sizeof(n.type) || strlen(s->domain) >= sizeof(n.domain) ||
        !avahi_is_valid_service_type_strict(s->type) || !avahi_is_valid_domain_name(s->domain) ||
        drec_instance_build(s->prefix, s->id, 0, inst) < 0)
        return -EINVAL;
    memset(&n, 0, sizeof(n));
    copy_str(n.prefix, sizeof(n.prefix), s->prefix);
    copy_str(n.id, sizeof(n.id), s->id);
    copy_str(n.type, sizeof(n.type), s->type);
    copy_str(n.domain, sizeof(n.domain), s->domain);
    n.port = s->port;
    n.ttl = s->ttl;
    for (size_t i = 0; i < s->ntxt; i++) {
        if (!s->txt[i] || strlen(s->txt[i]) > DREC_TXT_ITEM_MAX)
            return -EINVAL;
        copy_str(n.txt[i], sizeof(n.txt[i]), s->txt[i]);
    }
    n.ntxt = s->ntxt;
    if (m->want && memcmp(&n, &m->svc, sizeof(n)) == 0 && m->pub != MDNS_PUB_FAILED)
        return 0;
    m->svc = n;
    m->want = true;
    publish_now(m);
    return 0;
}

void mdns_unpublish(struct mdns *m)
{
    if (!m)
        return;
    m->want = false;
    m->in_group = false;
    m->conflict = 0;
    if (m->old_group)
        avahi_s_entry_group_free(m->old_group);
    m->old_group = NULL;
    if (m->group)
        avahi_s_entry_group_free(m->group); /* sends the goodbyes */
    m->group = NULL;
    m->instance[0] = '\0';
    if (m->pub != MDNS_PUB_NONE)
        set_pub(m, MDNS_PUB_NONE, "withdrawn");
}

/* ---- the server --------------------------------------------------------------------------------
 */

static void server_cb(AvahiServer *s, AvahiServerState state, void *data)
{
    struct mdns *m = data;

    /* Called from inside avahi_server_new already: keep the pointer. */
    m->server = s;
    switch (state) {
    case AVAHI_SERVER_RUNNING:
        publish_now(m);
        break;
    case AVAHI_SERVER_COLLISION: {
        char *alt = avahi_alternative_host_name(avahi_server_get_host_name(s));

        log_debug("mdns", "host name '%s' is taken; trying '%s'", avahi_server_get_host_name(s),
                  alt ? alt : "?");
        if (m->group)
            avahi_s_entry_group_reset(m->group);
        m->in_group = false;
        if (alt)
            avahi_server_set_host_name(s, alt);
        avahi_free(alt);
        break;
    }
    case AVAHI_SERVER_REGISTERING:
        if (m->group)
            avahi_s_entry_group_reset(m->group);
        m->in_group = false;
        break;
    case AVAHI_SERVER_FAILURE:
        if (m->want)
            set_pub(m, MDNS_PUB_FAILED, avahi_strerror(avahi_server_errno(s)));
        break;
    case AVAHI_SERVER_INVALID:
        break;
    }
}

static AvahiStringList *names_list(const char *const *names)
{
    AvahiStringList *l = NULL;

    for (size_t i = 0; names && names[i] && i < MDNS_MAX_IFACES; i++)
        l = avahi_string_list_add(l, names[i]);
    return l;
}

int mdns_new(uv_loop_t *loop, const struct mdns_options *o, const struct mdns_callbacks *cb,
             void *data, struct mdns **ret, char *err, size_t errlen)
{
    AvahiServerConfig cfg;
    struct mdns *m;
    int e = 0, r = -ENOMEM;

    if (err && errlen)
        err[0] = '\0';
    if (!loop || !cb || !ret)
        return -EINVAL;
    m = x_calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->loop = loop;
    m->cb = *cb;
    m->data = data;
    m->max_services = o && o->max_services ? o->max_services : MDNS_DEFAULT_MAX_SERVICES;
    if (m->max_services > MDNS_MAX_SERVICES_LIMIT)
        m->max_services = MDNS_MAX_SERVICES_LIMIT;
    m->entries = x_calloc(m->max_services, sizeof(*m->entries));
    if (!m->entries || auv_new(loop, m, &m->poll) < 0)
        goto fail;
    copy_str(m->host, sizeof(m->host), o && o->host_name ? o->host_name : "cliqo");
    for (size_t i = 0; o && o->allow_ifaces && o->allow_ifaces[i] && i < MDNS_MAX_IFACES; i++)
        copy_str(m->allow[m->nallow++], IF_NAMESIZE, o->allow_ifaces[i]);
    for (size_t i = 0; o && o->deny_ifaces && o->deny_ifaces[i] && i < MDNS_MAX_IFACES; i++)
        copy_str(m->deny[m->ndeny++], IF_NAMESIZE, o->deny_ifaces[i]);
    avahi_set_log_function(avahi_log_hook);
    avahi_server_config_init(&cfg);
    avahi_free(cfg.host_name);
    cfg.host_name = avahi_strdup(m->host);
    cfg.use_ipv4 = 1;
    cfg.use_ipv6 = 0;
    cfg.publish_hinfo = 0;
    cfg.publish_workstation = 0;
    cfg.publish_domain = 0;
    cfg.publish_addresses = 0; /* our own A records, without reverse PTR (add_addresses) */
    cfg.disallow_other_stacks = 0;
    cfg.enable_wide_area = 0;
    cfg.n_cache_entries_max =
        o && o->cache_entries_max ? o->cache_entries_max : MDNS_DEFAULT_CACHE_MAX;
    /* An answer storm cannot make us send without bound either (packets per interface). */
    cfg.ratelimit_interval = 1000000;
    cfg.ratelimit_burst = 1000;
    cfg.allow_interfaces = names_list(o ? o->allow_ifaces : NULL);
    cfg.deny_interfaces = names_list(o ? o->deny_ifaces : NULL);
    if (!cfg.host_name) {
        avahi_server_config_free(&cfg);
        goto fail;
    }
    /* server_cb may run inside avahi_server_new and set m->server. */
    *ret = m;
    if (!avahi_server_new(auv_poll(m->poll), &cfg, server_cb, m, &e)) {
        avahi_server_config_free(&cfg);
        if (err && errlen)
            snprintf(err, errlen, "cannot start the mDNS responder: %s", avahi_strerror(e));
        r = e == AVAHI_ERR_NO_MEMORY ? -ENOMEM : -EIO;
        m->server = NULL;
        *ret = NULL;
        goto fail;
    }
    avahi_server_config_free(&cfg);
    return 0;
fail:
    if (m->poll)
        m->poll = auv_free(m->poll);
    x_free(m->entries);
    x_free(m);
    return r;
}

/* ---- browsing --------------------------------------------------------------------------------
 */

static struct entry *entry_find(struct mdns *m, const char *name)
{
    for (size_t i = 0; i < m->nentries; i++)
        if (strcmp(m->entries[i]->name, name) == 0)
            return m->entries[i];
    return NULL;
}

static void entry_drop(struct mdns *m, struct entry *e, bool report)
{
    for (size_t i = 0; i < m->nentries; i++) {
        if (m->entries[i] != e)
            continue;
        m->entries[i] = m->entries[--m->nentries];
        break;
    }
    if (e->res)
        avahi_s_service_resolver_free(e->res);
    if (report && e->resolved && m->cb.removed)
        m->cb.removed(m, e->name, m->data);
    x_free(e);
}

static void resolver_cb(AvahiSServiceResolver *res, AvahiIfIndex iface, AvahiProtocol proto,
                        AvahiResolverEvent ev, const char *name, const char *type,
                        const char *domain, const char *host, const AvahiAddress *addr,
                        uint16_t port, AvahiStringList *txt, AvahiLookupResultFlags flags,
                        void *data)
{
    struct entry *e = data;
    struct mdns *m = e->m;
    struct drec_txt_item items[DREC_TXT_ITEMS_MAX + 1];
    size_t n = 0;

    (void)res, (void)proto, (void)type, (void)domain, (void)addr, (void)flags;
    if (ev != AVAHI_RESOLVER_FOUND) {
        if (!e->resolved && !e->reported_unresolved && m->cb.dropped) {
            e->reported_unresolved = true;
            m->cb.dropped(m, "unresolved", e->name, m->data);
        }
        return;
    }
    /* Avahi keeps TXT strings in reverse wire order; hand them over in wire order (the first
     * occurrence of a key wins). One more than the parser accepts, so that it sees the excess. */
    {
        size_t total = 0, i = 0;

        for (AvahiStringList *l = txt; l; l = l->next)
            total++;
        n = total > DREC_TXT_ITEMS_MAX + 1 ? DREC_TXT_ITEMS_MAX + 1 : total;
        for (AvahiStringList *l = txt; l; l = l->next, i++) {
            size_t pos = total - 1 - i; /* its position in wire order */

            if (pos < n) {
                items[pos].data = l->text;
                items[pos].len = l->size;
            }
        }
    }
    e->resolved = true;
    if (m->cb.found) {
        struct mdns_found f = {.instance = name,
                               .host = host ? host : "",
                               .port = port,
                               .txt = items,
                               .ntxt = n,
                               .ifindex = iface};

        m->cb.found(m, &f, m->data);
    }
}

static void browser_cb(AvahiSServiceBrowser *b, AvahiIfIndex iface, AvahiProtocol proto,
                       AvahiBrowserEvent ev, const char *name, const char *type, const char *domain,
                       AvahiLookupResultFlags flags, void *data)
{
    struct mdns *m = data;
    struct entry *e;

    (void)b, (void)iface, (void)proto;
    switch (ev) {
    case AVAHI_BROWSER_NEW:
        /* Records of this responder's own entries: our announcement, not another cluster. */
        if (flags & (AVAHI_LOOKUP_RESULT_OUR_OWN | AVAHI_LOOKUP_RESULT_LOCAL))
            return;
        if (!name || strlen(name) > DREC_LABEL_MAX)
            return;
        e = entry_find(m, name);
        if (e) {
            e->refs++;
            return;
        }
        if (m->nentries >= m->max_services) {
            if (m->cb.dropped)
                m->cb.dropped(m, "cap", name, m->data);
            return;
        }
        e = x_calloc(1, sizeof(*e));
        if (!e)
            return;
        e->m = m;
        e->refs = 1;
        copy_str(e->name, sizeof(e->name), name);
        e->res = avahi_s_service_resolver_new(
            m->server, AVAHI_IF_UNSPEC, AVAHI_PROTO_INET, name, type, domain, AVAHI_PROTO_INET,
            AVAHI_LOOKUP_USE_MULTICAST | AVAHI_LOOKUP_NO_ADDRESS, resolver_cb, e);
        if (!e->res) {
            x_free(e);
            return;
        }
        m->entries[m->nentries++] = e;
        break;
    case AVAHI_BROWSER_REMOVE:
        e = name ? entry_find(m, name) : NULL;
        if (e && --e->refs == 0)
            entry_drop(m, e, true);
        break;
    case AVAHI_BROWSER_FAILURE:
        if (m->cb.dropped)
            m->cb.dropped(m, "browser", "", m->data);
        break;
    case AVAHI_BROWSER_ALL_FOR_NOW:
    case AVAHI_BROWSER_CACHE_EXHAUSTED:
        break;
    }
}

void mdns_browse_stop(struct mdns *m)
{
    if (!m)
        return;
    if (m->browser)
        avahi_s_service_browser_free(m->browser);
    m->browser = NULL;
    while (m->nentries > 0)
        entry_drop(m, m->entries[m->nentries - 1], true);
}

int mdns_browse(struct mdns *m, const char *type, const char *domain)
{
    if (!m || !type || !domain || strlen(type) >= sizeof(m->btype) ||
        strlen(domain) >= sizeof(m->bdomain) || !avahi_is_valid_service_type_strict(type) ||
        !avahi_is_valid_domain_name(domain))
        return -EINVAL;
    if (m->browser && strcmp(type, m->btype) == 0 && strcmp(domain, m->bdomain) == 0)
        return 0;
    mdns_browse_stop(m);
    copy_str(m->btype, sizeof(m->btype), type);
    copy_str(m->bdomain, sizeof(m->bdomain), domain);
    m->browser = avahi_s_service_browser_new(m->server, AVAHI_IF_UNSPEC, AVAHI_PROTO_INET, type,
                                             domain, AVAHI_LOOKUP_USE_MULTICAST, browser_cb, m);
    if (!m->browser)
        return avahi_server_errno(m->server) == AVAHI_ERR_NO_MEMORY ? -ENOMEM : -EIO;
    return 0;
}

/* ---- state -----------------------------------------------------------------------------------
 */

enum mdns_pub_state mdns_pub_state(const struct mdns *m)
{
    return m ? m->pub : MDNS_PUB_NONE;
}

const char *mdns_instance(const struct mdns *m)
{
    return m && m->in_group ? m->instance : "";
}

const char *mdns_host_name(const struct mdns *m)
{
    return m ? m->host : "";
}

size_t mdns_followed(const struct mdns *m)
{
    return m ? m->nentries : 0;
}

struct mdns *mdns_free(struct mdns *m)
{
    if (!m)
        return NULL;
    m->cb = (struct mdns_callbacks){0};
    mdns_browse_stop(m);
    if (m->old_group)
        avahi_s_entry_group_free(m->old_group);
    m->old_group = NULL;
    if (m->group)
        avahi_s_entry_group_free(m->group);
    m->group = NULL;
    if (m->server)
        avahi_server_free(m->server); /* goodbyes for whatever is left */
    m->poll = auv_free(m->poll);
    x_free(m->entries);
    x_free(m);
    return NULL;
}
