/* brk orchestrator (docs/broker.md, "Orchestrator"): every namespace made in the broker's cluster
 * for a consumer's offloading (label virtualkubelet.liqo.io/origin=<consumer>) gets the
 * NamespaceOffloading `offloading`: EnforceSameName (the consumer's remote namespace name is kept
 * on the providers), Remote, and a clusterSelector of one term: virtual nodes, never the origin's,
 * only the selected providers' (none selected: a value no node carries, a valid selector that
 * selects nothing). Every namespace follows the selection: a change queues them all. Moving a
 * provider out lets its pods drain by the offloading path; the orchestrator deletes no pod. Writes
 * by server-side apply (field manager cliqo-broker), only when the spec differs. Leader only. */
#ifndef CLIQO_BROKER_ORCHESTRATOR_H
#define CLIQO_BROKER_ORCHESTRATOR_H

#include <jansson.h>
#include <stddef.h>

#include "agent/agent.h"

#define BRK_MODULE_ORCHESTRATOR "orchestrator"

/* The NamespaceOffloading spec for a namespace of consumer origin and the selected providers
 * (origin already left out), a new object or NULL when out of memory (pure, for the unit tests). */
json_t *brk_orch_spec(const char *origin, const char *const *selected, size_t n);

int brk_orch_init(struct agent *a);
#define BRK_MODULE_ORCH                                                                            \
    {                                                                                              \
        BRK_MODULE_ORCHESTRATOR, brk_orch_init, NULL, NULL, NULL, NULL, true                       \
    }

#endif
