/* brk state: what the broker keeps in its cluster so that a restart loses nothing (docs/broker.md,
 * "Objects the broker owns"): the ConfigMap cliqo-broker-state, whose data holds
 *   toggles  {"<cluster ID>": true|false, ...}: the providers enabled or disabled by hand
 *   policy   the selection policy (brk_policy_parse)
 * Anyone with write access to the broker's namespace can edit it, so it is read as input: a value
 * that does not parse is refused as a whole with a reason, and the broker keeps the last good
 * state. Bounded: BRK_MAX_TOGGLES entries, each key a cluster ID (a DNS label). */
#ifndef CLIQO_BROKER_STATE_H
#define CLIQO_BROKER_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "broker/select.h"

#define BRK_STATE_CONFIGMAP "cliqo-broker-state"
#define BRK_MAX_TOGGLES     4096

struct brk_state {
    json_t *toggles; /* cluster ID -> true/false (owned) */
    struct brk_policy policy;
};

/* Reads the ConfigMap's data object (NULL or absent keys: no toggles, the default policy) into s.
 * Returns 0, or -EINVAL with a reason naming the key (s untouched). */
int brk_state_read(const json_t *data, struct brk_state *s, char *err, size_t errlen);
void brk_state_free(struct brk_state *s);
/* The toggle of a provider; dflt when it has none. */
bool brk_state_enabled(const struct brk_state *s, const char *id, bool dflt);
/* The ConfigMap's data for s, with the toggle of toggle_id set to enable when toggle_id is not NULL
 * (s itself unchanged): a new object {"toggles": "<json>", "policy": "<json>"}, which
 * brk_state_read reads back to the same state. NULL when toggle_id is not a cluster ID or the table
 * is full (err says which), or out of memory (err empty). */
json_t *brk_state_data(const struct brk_state *s, const char *toggle_id, bool enable, char *err,
                       size_t errlen);

#endif
