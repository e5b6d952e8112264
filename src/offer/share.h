/* share: what a provider cluster can share, kept incrementally from its nodes and pods (the
 * broadcaster's computation, docs/advertisement.md "Computation").
 *
 *   SharedResources(consumer X) = (TotalAvailability - TotalUsageByPods(excluding X's pods)) * P
 *
 *   TotalAvailability  sum of status.allocatable of the COUNTED nodes: Ready (condition Ready is
 *                      "True"), schedulable (spec.unschedulable is not true) and physical (label
 *                      liqo.io/type != virtual-node and label type != virtual-node).
 *   TotalUsageByPods   sum of the effective requests of the COUNTED pods: phase not Succeeded nor
 *                      Failed, and either not scheduled yet (spec.nodeName empty) or bound to a
 *                      counted node. A pod bound to a node that is not counted (NotReady, cordoned,
 *                      virtual, or unknown to the state) does not count. The pods of consumer X
 *                      (label virtualkubelet.liqo.io/origin=X) are left out of X's own offer, so
 *                      that X's offer does not shrink as X uses it; they still count for others.
 *   effective request  for each resource: max(sum over containers, max over init containers) +
 *                      spec.overhead (the scheduler's rule); every counted pod also uses one
 *                      `pods` (a `pods` request in the object is ignored).
 *   P                  a percentage 0..100 (or fixed amounts, see struct shr_policy).
 *
 * Every resource name is treated (cpu, memory, pods, ephemeral-storage, hugepages-*, extended
 * resources such as nvidia.com/gpu), each in its smallest unit: cpu in millicores, everything else
 * in whole units (bytes for memory and storage). Quantities from objects are converted with the
 * Kubernetes rules (kq_milli_value for cpu, kq_value for the rest: fractions round up). A result is
 * floor((avail - used) * P / 100), computed exactly (128-bit intermediate), and 0 when negative.
 * Overflow: a pod's effective request of one resource saturates at INT64_MAX (and is removed as
 * stored, so removals stay exact); sums are kept in 128 bits, so they are exact and cannot
 * overflow; amounts returned (shr_totals, shr_offer) saturate at INT64_MAX. A quantity that is not
 * a JSON string, is negative, or does not fit an int64 in its unit is malformed.
 *
 * State: per node its allocatable (when counted) and the usage of the pods bound to it (so a node
 * that stops or starts counting moves its pods' usage at once); per pod its last contribution (so
 * an update or a delete never needs the old object). Each event costs O(resources of the object),
 * never a pass over the collection.
 *
 * Limits: at most SHR_MAX_RESOURCES distinct resource names (a further name is ignored and counted
 * in shr_stats.dropped_resources), names of at most SHR_NAME_MAX bytes, at most SHR_MAX_ORIGINS
 * distinct consumers (pods of further origins count as ordinary pods, counted in
 * dropped_origins; so do origins longer than a label value, 63 bytes). The limits bound the names
 * in use at once: when a table is full, the names no stored amount refers to and the origins with
 * no pods are recycled. Objects are validated: a missing or malformed field makes the object
 * contribute nothing for that field (a malformed quantity is ignored and counted in
 * shr_stats.bad_quantities); it never fails the whole state. Names (of nodes, pods, namespaces)
 * longer than 253 bytes make an upsert or a delete fail with -EINVAL.
 *
 * Ownership: objects passed in are borrowed for the call. Single-threaded (the agent's loop). */
#ifndef CLIQO_OFFER_SHARE_H
#define CLIQO_OFFER_SHARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHR_MAX_RESOURCES 64
#define SHR_NAME_MAX      128 /* bytes of a resource name, NUL included */
#define SHR_MAX_ORIGINS   1024

#define SHR_LABEL_ORIGIN "virtualkubelet.liqo.io/origin"

struct shr_state;
struct kpod;
struct kpod_options;

/* The record options of the pods the state reads (the origin label): for the pod informer's
 * extractor (kube/podrec.h, kpod_extract). */
extern const struct kpod_options shr_pod_record_options;

/* A list of amounts, one per resource name, in the resource's smallest unit (see above). Names are
 * unique within a list; order is unspecified unless a function says otherwise. */
struct shr_amount {
    char name[SHR_NAME_MAX];
    int64_t value;
};
struct shr_list {
    size_t n;
    struct shr_amount items[SHR_MAX_RESOURCES];
};

/* How consumer X is served: `percent` of the free resources, or, when `fixed` is non-NULL, exactly
 * the amounts of `fixed` (independent of free capacity: liqo#1478), and nothing else. */
struct shr_policy {
    unsigned percent; /* 0..100 */
    const struct shr_list *fixed;
};

struct shr_stats {
    size_t nodes, counted_nodes;
    size_t pods, counted_pods;
    size_t origins;
    size_t resources; /* distinct names interned */
    size_t dropped_resources, dropped_origins, bad_quantities;
    size_t memory_bytes; /* what the state allocated (tables, records, names) */
};

/* Returns 0 or -ENOMEM. */
int shr_new(struct shr_state **ret);
/* NULL-safe; returns NULL. */
struct shr_state *shr_free(struct shr_state *s);

/* The informers' handlers feed these. An upsert adds or replaces (by metadata.name, and for pods
 * metadata.namespace + metadata.name). A delete of an unknown object is a no-op. Returns 0,
 * -EINVAL (no name, or a name too long), or -ENOMEM (the state is unchanged: every total, offer
 * and object count is as before; only shr_stats' resources, dropped_*, bad_quantities and
 * memory_bytes may differ). */
int shr_node_upsert(struct shr_state *s, const json_t *node);
int shr_node_delete(struct shr_state *s, const char *name);
int shr_pod_upsert(struct shr_state *s, const json_t *pod);
/* The same from the pod's typed record (kube/podrec.h), extracted with options that ask for the
 * SHR_LABEL_ORIGIN label (shr_pod_record_options does; else -EINVAL): what the broadcaster's
 * pod informer hands over, so that no handler walks JSON. shr_pod_upsert(pod) is exactly
 * shr_pod_upsert_record(the record of pod). */
int shr_pod_upsert_record(struct shr_state *s, const struct kpod *pod);
int shr_pod_delete(struct shr_state *s, const char *ns, const char *name);

/* Staging. A fresh state does not apply pod upserts one by one: it reads each object (its key,
 * node, origin and contribution, as an upsert does) and appends the result to a stage, a log in
 * mapped memory, without touching the pod and node tables; shr_flush applies the stage in order
 * (so a pod staged twice ends as an upsert of both would leave it) and ends staging for good: from
 * then on every upsert is applied at once. This is for the initial list, where the informer hands
 * over 150,000 pods in a row with megabytes of JSON decoded between two of them: applied one by
 * one, each pod's random accesses to the tables (the node's slot, record and usage vector, the
 * pod's slot) missed the caches every time; applied in one pass they mostly hit (bench/README.md).
 * The broadcaster calls shr_flush when its pod informer has synced. Every query (shr_totals,
 * shr_offer, shr_get_stats) and every pod delete flushes first, so no caller ever sees a staged
 * pod missing; node upserts and deletes need no flush (a staged pod is bound to its node, known
 * or not, when it is applied, as if it had come after them: the result is the same). A stage that
 * reaches 64 MiB is flushed. While staged, a pod holds references on its resource slots so that
 * they are not recycled. Returns 0, or -ENOMEM: the pods applied so far stay applied, the rest
 * stays staged for the next flush. NULL: -EINVAL. */
int shr_flush(struct shr_state *s);
/* shr_flush in slices: applies staged pods until budget_ns has passed (checked every 256 pods), so
 * that the 150,000 pods of a first list (25-45 ms in one go) do not hold a loop iteration. 1 when
 * the stage is all applied and staging has ended (also when it had already ended), 0 when pods are
 * left (call again: upserts meanwhile are staged after them, so the order holds), or -ENOMEM as
 * shr_flush. NULL: -EINVAL. */
int shr_flush_some(struct shr_state *s, uint64_t budget_ns);
/* Whether pod upserts are still staged (no flush has completed yet). */
bool shr_staging(const struct shr_state *s);

/* Totals over the counted objects, sorted by name: availability (every resource a counted node
 * lists, even at 0) and usage by all counted pods (every resource in use, i.e. not 0). Either
 * pointer may be NULL. */
void shr_totals(struct shr_state *s, struct shr_list *ret_avail, struct shr_list *ret_used);

/* The offer for consumer `origin` (NULL: a consumer with no pods here). With a percentage: one
 * entry per resource name present in the availability (a resource only requested, never
 * allocatable, is not offered), sorted by name. With fixed amounts: a copy of them, sorted by
 * name (percent is then ignored). Returns 0, -ENOMEM (the stage could not be flushed) or -EINVAL
 * (percent > 100, more than SHR_MAX_RESOURCES fixed amounts, a NULL argument other than origin). */
int shr_offer(struct shr_state *s, const char *origin, const struct shr_policy *p,
              struct shr_list *ret);

/* The amount of `name` in list l, or 0 when absent (ret_found false). */
int64_t shr_list_get(const struct shr_list *l, const char *name, bool *ret_found);

/* Writes `value` of resource `name` as a canonical Kubernetes quantity string (cpu: millicores,
 * e.g. 1500 -> "1500m", 2000 -> "2"; memory, ephemeral-storage and hugepages-*: binary-SI bytes,
 * e.g. "1536Mi"; anything else: a plain integer). Returns the length, or -ENOSPC / -EINVAL. */
int shr_format_quantity(const char *name, int64_t value, char *buf, size_t size);
/* Parses a quantity string of resource `name` into its smallest unit (the inverse; cpu rounds up
 * to millicores, others up to units). Returns 0, -EINVAL or -ERANGE (also for a negative value). */
int shr_parse_quantity(const char *name, const char *text, int64_t *ret);

/* Moved: true when any resource of `now` differs from `before` by more than `threshold_percent`
 * of the value in `before` (a resource that appears or disappears, or goes from or to 0, always
 * counts as a move; threshold 0 means any difference). A NULL list is an empty one. */
bool shr_list_moved(const struct shr_list *before, const struct shr_list *now,
                    unsigned threshold_percent);

/* Whether a node label may be advertised to consumers: its key's prefix (the part before '/', if
 * any) is not kubernetes.io, k8s.io, liqo.io or cliqo.io, nor a subdomain of them (e.g.
 * node.kubernetes.io, x.k8s.io), and the key is a valid Kubernetes label key. A provider must
 * not be able to attract pods by impersonating well-known labels. */
bool shr_label_shareable(const char *key);

void shr_get_stats(struct shr_state *s, struct shr_stats *ret);

/* An informer transform (inf_options.transform) for pods: keeps only what the computation reads
 * (metadata with the origin label only, spec.nodeName, the containers' and init containers'
 * requests, spec.overhead, status.phase, and status.podIPs for the admission module's
 * EndpointSlice check) and drops the rest in place, so that the broadcaster's pod
 * cache stays small; the computation's result is the same for the trimmed object. data is unused.
 */
void shr_pod_transform(json_t *pod, void *data);

#endif
