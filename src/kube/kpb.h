/* kpb: Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf) of built-in kinds,
 * turned into the JSON text the API server would have sent for the same object.
 *
 * Why: an informer's first list is mostly the API server's time to encode it. Protobuf costs the
 * server a fraction of JSON's, and the bytes are fewer. The informer still caches JSON (store.h)
 * and hands handlers jansson trees, so this module writes JSON text from the protobuf bytes, which
 * the informer then decodes as it would the server's own text (jsonfast.h): one path after it.
 *
 * The schema: the wire carries field numbers, not names, and does not say which of Go's rules
 * encoding/json applied (omitempty, pointers, inline structs, types with their own encoding). So
 * the tables (struct kpb_schema) are generated at build time from the Go types of the Kubernetes
 * source the control plane is built from (src/kube/kpbgen, scripts/build-kube.sh --kpbgen). A build
 * without them has an empty schema (kpb_schema.nroots == 0) and every informer reads JSON. The
 * informer uses protobuf only with a server of the schema's own minor version (kpb_schema.minor):
 * a newer server has fields the tables do not know, which its JSON would carry and protobuf would
 * lose (the informer's owners copy objects, e.g. a pod's spec to a peer).
 *
 * What the writer reproduces, by field kind, from what gogo-protobuf wrote:
 *   - present non-pointer scalars, dropped when omitempty and zero; absent ones as the zero value
 *     (or dropped when omitempty); present pointers always, absent ones dropped (omitempty) or
 * null;
 *   - structs always (encoding/json never omits one), absent ones as their own defaults; inline
 *     (embedded) structs' members in the parent object;
 *   - repeated fields and maps as arrays and objects, dropped (omitempty) or null when absent;
 *     []byte as base64; strings with invalid UTF-8 with U+FFFD as Go writes them;
 *   - Time (seconds, RFC 3339, null when zero), MicroTime (microseconds), Quantity (its string),
 *     IntOrString (number or string);
 *   - metadata.managedFields skipped (informers drop it).
 *
 * Hostile input: every length is checked against what is left, nesting is bounded (KPB_MAX_DEPTH),
 * and so is the text written (max_out), since a few bytes of absent fields expand into their
 * defaults. A repeated field split by another field, a singular field given twice, a wire type
 * that is not the field's, groups, and unknown enum values of IntOrString are refused (-EBADMSG):
 * the API server never writes them. Unknown field numbers are skipped, as Go does. */
#ifndef CLIQO_KUBE_KPB_H
#define CLIQO_KUBE_KPB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kpb_kind {
    KPB_STRING = 1,
    KPB_BYTES,
    KPB_BOOL,
    KPB_INT32,
    KPB_INT64,
    KPB_MSG,
    KPB_TIME,
    KPB_MICROTIME,
    KPB_QUANTITY,
    KPB_INTORSTR,
    KPB_MAP,  /* map<string, vkind> */
    KPB_SKIP, /* not written */
};

#define KPB_F_OMITEMPTY 0x1u
#define KPB_F_PTR       0x2u
#define KPB_F_REPEATED  0x4u
#define KPB_F_INLINE    0x8u /* an embedded struct: its members go in the parent's object */

#define KPB_MAX_FIELDS 128 /* per message */
#define KPB_MAX_DEPTH  48

struct kpb_field {
    uint32_t num;
    const char *json; /* NULL or "" for inline fields */
    uint8_t kind;
    uint8_t flags;
    uint8_t vkind; /* KPB_MAP: the values' kind */
    int16_t msg;   /* KPB_MSG: the message's index */
    int16_t vmsg;  /* KPB_MAP of KPB_MSG: the values' message */
};

struct kpb_msg {
    const char *name;
    const struct kpb_field *fields; /* sorted by num */
    uint16_t nfields;
};

struct kpb_root {
    const char *group, *version, *kind;
    int msg;
};

struct kpb_schema {
    const struct kpb_msg *msgs;
    size_t nmsgs;
    const struct kpb_root *roots;
    size_t nroots;
    int major, minor; /* the Kubernetes version the tables were generated from (0: none) */
};

/* The build's schema (generated, or empty). */
extern const struct kpb_schema kpb_schema;

#define KPB_MAGIC     "k8s\0"
#define KPB_MAGIC_LEN 4

/* The message index of a kind, or -ENOENT. */
int kpb_root(const struct kpb_schema *s, const char *group, const char *version, const char *kind);

/* Writes the JSON text of message `msg` encoded in [p, p + n) to *out (grown with x_realloc up to
 * max_out bytes, NUL-terminated; *len its length; the caller frees *out with x_free). 0, -EBADMSG,
 * -E2BIG (the text would be longer than max_out), -ENOMEM, -EINVAL (no such message). */
int kpb_to_json(const struct kpb_schema *s, int msg, const uint8_t *p, size_t n, char **out,
                size_t *cap, size_t *len, size_t max_out);

/* kpb_to_json, then the text decoded (jsonb, with the Kubernetes budget) into *obj (a new
 * reference): the text stays in *out (*len bytes), for owners that keep it. 0, -EBADMSG (not the
 * message, or text jansson refuses), -E2BIG, -ENOMEM, -EINVAL (no such message). */
int kpb_to_tree(const struct kpb_schema *s, int msg, const uint8_t *p, size_t n, char **out,
                size_t *cap, size_t *len, size_t max_out, json_t **obj);

/* The envelope of a whole response (one object, or a Status): "k8s\0" then runtime.Unknown. On 0,
 * [*raw, *raw + *raw_len) is the encoded object and kind (when not NULL, of kind_size bytes) its
 * kind from the envelope's TypeMeta (truncated). -EBADMSG when it is not one. */
int kpb_unwrap(const uint8_t *p, size_t n, const uint8_t **raw, size_t *raw_len, char *kind,
               size_t kind_size);

/* One event of a watch answered in protobuf (Content-Type application/vnd.kubernetes.protobuf;
 * stream=watch): the stream is frames of a 4-byte big-endian length and that many bytes, each a
 * metav1.WatchEvent: its type (1: "ADDED", "MODIFIED", "DELETED", "BOOKMARK" or "ERROR") and its
 * object (2: a runtime.RawExtension whose raw bytes, 1, are the object's envelope, for
 * kpb_unwrap). Given a frame's bytes, sets the type's text and the envelope's range (both inside
 * [p, p + n), borrowed). 0, or -EBADMSG (no type, no object, or not a WatchEvent). */
int kpb_watch_event(const uint8_t *p, size_t n, const uint8_t **type, size_t *type_len,
                    const uint8_t **obj, size_t *obj_len);

/* A list response split into its items while it arrives, as kube/liststream.h does for JSON:
 * "k8s\0", a runtime.Unknown whose raw field holds the XList message: field 1 ListMeta, field 2
 * the items. The item callback gets each item's bytes (borrowed) as soon as they are all there;
 * an item over max_item, or a ListMeta over max_rest, is -E2BIG. Memory: at most max_item +
 * max_rest bytes whatever the list's length. After an error every later call returns it. */
typedef int (*kpb_item_fn)(const uint8_t *item, size_t len, void *data);

struct kpb_list {
    kpb_item_fn fn;
    void *data;
    size_t max_item, max_rest;
    uint8_t *buf; /* the item or ListMeta being collected */
    size_t buf_len, buf_cap;
    char *rv, *cont; /* from the ListMeta */
    uint64_t want;   /* bytes of the current field's value still to come */
    uint64_t raw_left;
    uint64_t vi; /* varint being read */
    unsigned vi_shift;
    unsigned state; /* internal */
    unsigned field; /* the current field's number */
    size_t magic;   /* magic bytes seen */
    size_t items;
    int err;
    bool in_raw, raw_seen, raw_done;
};

void kpb_list_init(struct kpb_list *l, size_t max_item, size_t max_rest, kpb_item_fn fn,
                   void *data);
void kpb_list_done(struct kpb_list *l);
/* Feeds the next n bytes: 0, the callback's error, -EBADMSG, -E2BIG, -ENOMEM. */
int kpb_list_feed(struct kpb_list *l, const uint8_t *p, size_t n);
/* The body is complete: 0 with *envelope a new reference to {"metadata":{"resourceVersion":...,
 * "continue":...}} (what kube/liststream.h gives for JSON), or -EBADMSG (truncated, not a list),
 * -ENOMEM. */
int kpb_list_finish(struct kpb_list *l, json_t **envelope);

#endif
