/* advcfg: the parts of ClusterConfig `configuration` that the advertisement protocol reads
 * (docs/advertisement.md, "Configuration"), parsed once per change into plain values.
 *
 * The CRD's schema validates and defaults the object, but the agent does not trust that: a missing
 * or out-of-range field takes the documented default, so a ClusterConfig written before an upgrade
 * (or with validation off) still gives a sane configuration. Unknown fields are ignored.
 *
 * One exception: outgoingConfig.offerSource. Its default (Cluster: offer a share of this cluster's
 * own nodes) is exactly what a cluster set to Broker must not do, so a value that is neither
 * Cluster nor Broker is not defaulted but reported (adv_config.error) and gives
 * ADVCFG_OFFER_INVALID, with which the broadcaster offers nothing until it is fixed.
 *
 * Ownership: struct adv_config keeps references to the object's lists (perCluster, prices,
 * allowList, denyList); release them with advcfg_done. Pure functions, no loop. */
#ifndef CLIQO_ADVERTISEMENT_CONFIG_H
#define CLIQO_ADVERTISEMENT_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "offer/share.h"

enum advcfg_accept {
    ADVCFG_AUTO_ACCEPT_MAX,
    ADVCFG_MANUAL,
};

enum advcfg_vk_mode {
    ADVCFG_VK_EMBEDDED,
    ADVCFG_VK_DEPLOYMENT,
};

/* outgoingConfig.offerSource: what the broadcaster advertises (docs/advertisement.md). */
enum advcfg_offer_source {
    ADVCFG_OFFER_CLUSTER, /* default: a share of this cluster's nodes (offer/share.h) */
    ADVCFG_OFFER_BROKER,  /* per consumer, what the broker's ConfigMap says (offersource.h) */
    ADVCFG_OFFER_INVALID, /* neither (see above): nothing */
};

struct adv_config {
    /* outgoing (the broadcaster) */
    enum advcfg_offer_source offer_source;
    unsigned percent; /* 0..100, default 30 */
    bool enabled;     /* enableBroadcaster, default true */
    unsigned refresh_s, ttl_s, threshold;
    json_t *per_cluster; /* array or NULL */
    json_t *prices;      /* object or NULL */
    /* ingoing (the operator) */
    enum advcfg_accept accept;
    unsigned max_accept;  /* default 5 */
    json_t *allow, *deny; /* arrays or NULL */
    enum advcfg_vk_mode vk_mode;
    char vk_image[513];
    unsigned keepalive_retry_s, keepalive_threshold;
    /* The first field refused rather than defaulted (only offerSource, see above), as one line
     * naming the field and the values it takes; "" when none. */
    char error[160];
};

/* Fills ret from a ClusterConfig object (NULL: all defaults). Never fails: bad values take their
 * defaults, but for offerSource (ADVCFG_OFFER_INVALID and ret->error). Call advcfg_done
 * afterwards. */
void advcfg_read(const json_t *cc, struct adv_config *ret);
void advcfg_done(struct adv_config *c);

/* "Cluster", "Broker" or "invalid". */
const char *advcfg_offer_source_name(enum advcfg_offer_source s);

/* True when id is an element of the string array list. */
bool advcfg_list_has(const json_t *list, const char *id);

/* The sharing policy for consumer id: its perCluster entry (a percentage, or fixed amounts parsed
 * into *fixed and pointed to by ret->fixed), else the global percentage. Writes into *sig a short
 * text that changes whenever the policy does (to notice changes). Returns 0, or -EINVAL when the
 * entry's fixed amounts do not parse (the entry is then ignored: the global percentage applies). */
int advcfg_policy_for(const struct adv_config *c, const char *id, struct shr_policy *ret,
                      struct shr_list *fixed, char *sig, size_t sigsize);

#endif
