/* kpod: a pod's typed record — the fields that handlers on hot paths read (node, phase, requests
 * and limits per container, init containers with their restartPolicy, overhead, the controller
 * owner, the labels a module asked for), extracted once from the object so that a handler or a
 * lister reads them without walking JSON (kube/informer.h, "Typed records").
 *
 * The record is one position-independent block of bytes: the struct, its arrays and a copy of
 * every string it refers to, addressed by offsets from the record's start, so that the informer
 * can copy it into its store's slabs and it stays valid after the object is gone (one small,
 * contiguous block to read). Every string is the exact bytes of the object's JSON string (NUL
 * bytes included, len says how many) followed by a terminating NUL; kpod_text() is NULL when the
 * member is absent or not a string. So a reader applying a rule to the record sees what it would
 * have seen reading the tree with json_string_value / json_string_length.
 *
 * What the extraction reads, as jansson does (json_object_get / json_array_get): a member that is
 * not of the expected type counts as absent (containers that is not an array: no containers; an
 * element that is not an object: a container with no name, no quantities and no restartPolicy; a
 * quantity map that is not an object: no quantities). A quantity whose value is not a string is
 * kept with its value absent (its name still counts). Quantities are in the object's member order.
 * The owner is the first ownerReference whose controller is true. Limits, the owner and the
 * containers' names are there only when the options ask for them (struct kpod_options.parts).
 *
 * Label keys are the options', borrowed: the options must outlive the record (modules keep them
 * static). Limits: a record is at most KPOD_MAX_SIZE bytes (a larger one is refused, -E2BIG). */
#ifndef CLIQO_KUBE_PODREC_H
#define CLIQO_KUBE_PODREC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define KPOD_MAX_LABELS 8
#define KPOD_MAX_SIZE   ((size_t)16 << 20)

/* A string of the record: off bytes from the record's start (0: absent), len bytes. */
struct kpod_str {
    uint32_t off, len;
};

/* One quantity of a map (requests, limits, overhead): its key and its value. */
struct kpod_qty {
    struct kpod_str name;  /* always present */
    struct kpod_str value; /* absent when the value is not a string */
};

/* A container or an init container: its requests are quantities [req, req + nreq), its limits
 * [lim, lim + nlim). */
struct kpod_ctr {
    struct kpod_str name;           /* KPOD_CTR_NAMES */
    struct kpod_str restart_policy; /* an init container with "Always" is a sidecar */
    uint32_t req, nreq, lim, nlim;
};

/* Optional parts of the record (a record is kept per cached pod: each part costs memory). */
enum {
    KPOD_LIMITS = 1 << 0,    /* the containers' limits (else nlim is 0) */
    KPOD_OWNER = 1 << 1,     /* owner_kind and owner_name (else absent) */
    KPOD_CTR_NAMES = 1 << 2, /* the containers' names (else absent) */
};

/* What a module asks the extraction for. Always there: namespace, name, node, phase, the
 * containers' and init containers' requests and restartPolicy, the overhead. */
struct kpod_options {
    unsigned parts; /* KPOD_* */
    size_t nlabels; /* at most KPOD_MAX_LABELS */
    const char *labels[KPOD_MAX_LABELS];
};

struct kpod {
    const struct kpod_options *opts;
    uint32_t size; /* bytes of the record */
    struct kpod_str ns, name;
    struct kpod_str node;                   /* spec.nodeName */
    struct kpod_str phase;                  /* status.phase */
    struct kpod_str owner_kind, owner_name; /* the controller's ownerReference (KPOD_OWNER) */
    /* containers [0, ncontainers), then the init containers [ncontainers, + ninit) */
    uint32_t ncontainers, ninit;
    /* quantities: the containers' in their order, then spec.overhead's [overhead, + noverhead) */
    uint32_t nqty, overhead, noverhead;
    uint32_t ctr_off, qty_off, labels_off; /* where the arrays start */
};

/* The bytes of string s of record p (NUL-terminated), or NULL when absent. */
static inline const char *kpod_text(const struct kpod *p, struct kpod_str s)
{
    return s.off ? (const char *)p + s.off : NULL;
}

static inline const struct kpod_ctr *kpod_containers(const struct kpod *p)
{
    return (const struct kpod_ctr *)((const char *)p + p->ctr_off);
}

static inline const struct kpod_qty *kpod_qtys(const struct kpod *p)
{
    return (const struct kpod_qty *)((const char *)p + p->qty_off);
}

/* Writes the record of pod (any JSON value: a non-object gives a record with everything absent)
 * into buf (cap bytes, 8-byte aligned) and returns its size; when that is more than cap nothing
 * is written: call again with a buffer that large. -EINVAL (NULL pod or options, more than
 * KPOD_MAX_LABELS labels), -E2BIG (over KPOD_MAX_SIZE). */
long kpod_build(const json_t *pod, const struct kpod_options *o, void *buf, size_t cap);
/* The same into a new allocation (x_free it): 0, -EINVAL, -E2BIG, -ENOMEM. */
int kpod_from_json(const json_t *pod, const struct kpod_options *o, struct kpod **ret);
/* The value of label `key` if the options asked for it (else, and when the pod has no such label
 * or it is not a string: absent). */
struct kpod_str kpod_label(const struct kpod *p, const char *key);

/* For inf_options.extractor (kube/informer.h): data is a const struct kpod_options *. */
long kpod_extract(const json_t *obj, const void *data, void *buf, size_t cap);

#endif
