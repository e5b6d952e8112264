/* advsrc: where the broadcaster's offer to a consumer comes from (ClusterConfig
 * advertisementConfig.outgoingConfig.offerSource; docs/advertisement.md "Offer source",
 * docs/broker.md "Aggregator").
 *
 *   Cluster  the share of this cluster's own nodes (offer/share.h), as always;
 *   Broker   for consumer C, what ConfigMap cliqo-broker-offer-<C> in the agent's namespace says in
 *            data.resources, a JSON object resource name -> quantity, written by the broker's
 *            aggregator and labelled cliqo.io/broker-offer=true (the broadcaster's informer
 *            selects that label: a ConfigMap without it is not seen at all).
 *
 * The broker's map is validated as a peer's quantities are (an Advertisement's
 * resourceQuota.hard): a JSON object of at most SHR_MAX_RESOURCES entries, each a resource name
 * (a qualified name, shorter than SHR_NAME_MAX) and a quantity (a string, or an integer, that
 * kq_parse takes and that is neither negative nor beyond an int64 in the resource's smallest unit:
 * shr_parse_quantity), duplicate names refused, at most ADVSRC_MAX_BYTES bytes of text (the most
 * SHR_MAX_RESOURCES such entries can take). One bad entry makes the whole map invalid. An invalid
 * or absent map offers nothing, never everything: cpu, memory and pods at 0 (ADVSRC_NOTHING), so
 * that the Advertisement stays valid (an empty resourceQuota.hard is refused) and the consumer's
 * virtual node reports NoResources.
 *
 * C is the consumer's cluster ID, the same string the broadcaster's other per-consumer names use
 * (vk-<C>): the broadcaster serves only IDs that are DNS labels (peer_cluster_id_valid), so the
 * name is always a valid ConfigMap name and nothing needs sanitising; any other ID has no name.
 *
 * Pure functions, no loop, no state. Objects are borrowed. */
#ifndef CLIQO_ADVERTISEMENT_OFFERSOURCE_H
#define CLIQO_ADVERTISEMENT_OFFERSOURCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "advertisement/config.h"
#include "kube/quantity.h"
#include "offer/share.h"

#define ADVSRC_LABEL          "cliqo.io/broker-offer"
#define ADVSRC_LABEL_SELECTOR ADVSRC_LABEL "=true"
#define ADVSRC_PREFIX         "cliqo-broker-offer-"
#define ADVSRC_KEY            "resources" /* the key of data */
/* Per entry: a name, a quantity, and 16 bytes of quotes, colon, comma and spaces. */
#define ADVSRC_MAX_BYTES (SHR_MAX_RESOURCES * (SHR_NAME_MAX + KQ_PARSE_MAX + 16))

/* Where an offer came from. */
enum advsrc_from {
    ADVSRC_FROM_CLUSTER,        /* this cluster's share */
    ADVSRC_FROM_BROKER,         /* the broker's ConfigMap */
    ADVSRC_FROM_BROKER_ABSENT,  /* Broker, but no ConfigMap (yet): nothing */
    ADVSRC_FROM_BROKER_INVALID, /* Broker, but the ConfigMap is invalid: nothing */
    ADVSRC_FROM_INVALID_SOURCE, /* offerSource is invalid (adv_config.error): nothing */
};

/* What the broadcaster sends a consumer, decided by advsrc_choose. */
struct advsrc_offer {
    enum advsrc_from from;
    struct shr_list amounts; /* sorted by name */
    /* The move of an amount that re-sends at once: the configured threshold for this cluster's
     * share (it moves with every pod), 0 (any change) for the broker's (it changes only when the
     * providers' offers do, and must reach the consumer as it is). */
    unsigned threshold;
    /* Whether the Advertisement describes this cluster's nodes (their shared labels, images, and
     * the largest node as the pods' limit). Only for this cluster's share: the broker's offer runs
     * on other clusters, so its limit is the offer itself and it carries no labels or images. */
    bool node_details;
};

/* The ConfigMap's name for consumer id into buf. Returns 0, -EINVAL (id is not a cluster ID) or
 * -ENOSPC. */
int advsrc_name(const char *id, char *buf, size_t size);

/* The consumer a ConfigMap name is for (borrowed from name: the part after ADVSRC_PREFIX), or NULL
 * when name is not ADVSRC_PREFIX followed by a cluster ID. */
const char *advsrc_consumer_of(const char *name);

/* Reads data.resources of ConfigMap cm into *ret, sorted by name. Returns 0, or -EINVAL with the
 * reason in err (one line naming the entry; ret untouched). */
int advsrc_parse(const json_t *cm, struct shr_list *ret, char *err, size_t errlen);

/* Nothing: cpu, memory and pods at 0. */
void advsrc_nothing(struct shr_list *ret);

/* The choice. With source Cluster: *computed (this cluster's share for the consumer, required);
 * with Broker: what cm (the consumer's ConfigMap, NULL when there is none) says, or nothing (also
 * for a valid but empty map); with an invalid source: nothing. threshold is the configured
 * updateThresholdPercentage. err receives the reason of ADVSRC_FROM_BROKER_INVALID (else "").
 * Returns 0, or -EINVAL (source Cluster without computed, ret NULL). */
int advsrc_choose(enum advcfg_offer_source source, unsigned threshold,
                  const struct shr_list *computed, const json_t *cm, struct advsrc_offer *ret,
                  char *err, size_t errlen);

/* "cluster", "broker", "broker:absent", "broker:invalid", "source:invalid". */
const char *advsrc_from_name(enum advsrc_from f);

/* An informer transform (inf_options.transform) for the broker's ConfigMaps: keeps
 * metadata.name, namespace and resourceVersion and data.resources, drops the rest; a
 * data.resources longer than ADVSRC_MAX_BYTES is replaced by its length as a JSON integer (a
 * ConfigMap's data holds only strings: advsrc_parse reports the length), so that the cache holds at
 * most ADVSRC_MAX_BYTES of text per ConfigMap. data is unused. */
void advsrc_transform(json_t *cm, void *data);

#endif
