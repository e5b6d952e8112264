/* mdns: cliqo's mDNS / DNS-SD responder and browser, on Avahi's embeddable stack (libavahi-core)
 * driven by the caller's libuv loop (avahi_uv.h). No daemon and no D-Bus: the process owns its
 * multicast sockets (port 5353, shared with any other stack on the host through SO_REUSEPORT).
 *
 * Announcing (mdns_publish): one service instance "<prefix>_<id>" (record.h) of a DNS-SD type in
 * a domain, with PTR, SRV (our mDNS host name and the port) and TXT records carrying the given TTL,
 * plus the DNS-SD service enumeration PTR. Avahi probes before announcing (RFC 6762 section 8),
 * answers queries, defends the names, and sends goodbye packets (TTL 0) when the service is
 * withdrawn or the responder is freed. On a name conflict the instance is renamed
 * "<prefix>_<id> #2", "#3"... (the ID is kept whole) and probed again; a host name conflict picks
 * Avahi's alternative host name. A change of TXT or port is sent as an update of the same records;
 * a change of name, type, domain or TTL withdraws the old service (goodbye) and announces anew.
 *
 * Browsing (mdns_browse): instances of a type are followed on every allowed interface, each
 * resolved (SRV and TXT; no address lookup: the TXT names the auth URL) and reported through
 * found() when first resolved and whenever their records change, and through removed() when the
 * last copy is gone (goodbye, or the record's TTL expired without a refresh: Avahi re-queries at
 * 80-95 % of the TTL, RFC 6762 section 5.2). Services this responder announces itself are skipped.
 *
 * Limits (hostile LAN): at most max_services instances are followed at once; further ones are
 * dropped (dropped("cap")) until room frees. Avahi keeps at most cache_entries_max records per
 * interface. Packets Avahi rejects as malformed are counted per responder (mdns_rejected_packets).
 * Nothing received is interpreted here beyond the DNS layer: TXT strings are handed over as bytes.
 *
 * Interfaces: an allow-list (names) or, without one, every up, multicast-capable interface; a deny
 * list is removed from either. Avahi takes them at creation: to change them, free and create again.
 * IPv4 only.
 *
 * Ownership: the loop is borrowed; strings passed in are copied; everything handed to callbacks is
 * borrowed for the call. Callbacks run on the loop, never inside mdns_* calls' own stack frames
 * except mdns_new/mdns_publish, which may report a state at once. mdns_free must not be called
 * from a callback. */
#ifndef CLIQO_DISCOVERY_MDNS_H
#define CLIQO_DISCOVERY_MDNS_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "discovery/record.h"

#define MDNS_DEFAULT_MAX_SERVICES 256
#define MDNS_MAX_SERVICES_LIMIT   4096
#define MDNS_DEFAULT_CACHE_MAX    4096
#define MDNS_MAX_IFACES           32

struct mdns;

struct mdns_found {
    const char *instance;            /* unescaped instance label */
    const char *host;                /* SRV target */
    unsigned port;                   /* SRV port */
    const struct drec_txt_item *txt; /* TXT strings in wire order */
    size_t ntxt;
    int ifindex; /* interface it was resolved on */
};

enum mdns_pub_state {
    MDNS_PUB_NONE,        /* nothing announced */
    MDNS_PUB_PROBING,     /* probing / registering */
    MDNS_PUB_ESTABLISHED, /* announced and defended */
    MDNS_PUB_RENAMED,     /* a conflict: probing again under a new instance name */
    MDNS_PUB_FAILED,      /* cannot announce (message says why); retried on the next publish */
};
const char *mdns_pub_state_name(enum mdns_pub_state s);

struct mdns_callbacks {
    void (*found)(struct mdns *m, const struct mdns_found *f, void *data);
    void (*removed)(struct mdns *m, const char *instance, void *data);
    void (*published)(struct mdns *m, enum mdns_pub_state st, const char *instance,
                      const char *message, void *data);
    /* A browse result that was not used: "cap" (max_services reached), "unresolved" (no SRV/TXT
     * within Avahi's 5 s), "browser" (the browser failed). */
    void (*dropped)(struct mdns *m, const char *reason, const char *instance, void *data);
};

struct mdns_options {
    const char *host_name;           /* mDNS host label; NULL: "cliqo" */
    const char *const *allow_ifaces; /* NULL-terminated names; NULL: every multicast interface */
    const char *const *deny_ifaces;  /* NULL-terminated names; NULL: none */
    size_t max_services;             /* 0: MDNS_DEFAULT_MAX_SERVICES */
    unsigned cache_entries_max;      /* 0: MDNS_DEFAULT_CACHE_MAX */
};

struct mdns_service {
    const char *prefix;     /* instance prefix (cluster name); may be NULL */
    const char *id;         /* cluster ID: the instance suffix */
    const char *type;       /* e.g. "_liqo_auth._tcp" */
    const char *domain;     /* e.g. "local" */
    unsigned port;          /* 1..65535 */
    unsigned ttl;           /* seconds, 1..86400 */
    const char *const *txt; /* "k=v" strings */
    size_t ntxt;
};

/* Creates the responder (its sockets and interface monitor). Returns 0, -EINVAL, -ENOMEM, or
 * -EIO with the reason in err (e.g. no permission to bind port 5353). */
int mdns_new(uv_loop_t *loop, const struct mdns_options *o, const struct mdns_callbacks *cb,
             void *data, struct mdns **ret, char *err, size_t errlen);
/* Withdraws everything (goodbye packets are sent now) and frees. NULL-safe; returns NULL. */
struct mdns *mdns_free(struct mdns *m);

/* Announces (or updates) our one service. Returns 0, -EINVAL (bad field), -ENOMEM. The outcome is
 * reported through published(). */
int mdns_publish(struct mdns *m, const struct mdns_service *s);
/* Withdraws the service (goodbye). */
void mdns_unpublish(struct mdns *m);
/* Starts browsing type in domain (replacing an earlier browse; its instances are reported
 * removed). Returns 0, -EINVAL, -ENOMEM or -EIO. */
int mdns_browse(struct mdns *m, const char *type, const char *domain);
void mdns_browse_stop(struct mdns *m);

enum mdns_pub_state mdns_pub_state(const struct mdns *m);
/* The current instance name ("" when none), our host name ("" before Avahi chose one). */
const char *mdns_instance(const struct mdns *m);
const char *mdns_host_name(const struct mdns *m);
/* Instances followed by the browser now. */
size_t mdns_followed(const struct mdns *m);

/* Packets this responder's Avahi rejected (malformed, wrong port, non-local, bad TTL); 0 for
 * NULL. */
unsigned long mdns_rejected_packets(const struct mdns *m);

#endif
