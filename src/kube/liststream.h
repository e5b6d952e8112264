/* kls: a Kubernetes list response ({"kind":"PodList","metadata":{...},"items":[{...},...]}) split
 * into its items while it arrives, so that a list of any length is decoded one object at a time.
 *
 * kls_feed() takes the body in chunks of any size and calls the item callback with the exact text
 * of each element of the top-level "items" array as soon as its closing brace arrives (pointing
 * into the chunk when the element lies in one chunk, else into a buffer that grows to the element's
 * size and no further than max_item). Everything else of the body is kept in a second buffer,
 * bounded by max_rest, with the items array left empty: kls_finish() decodes it (jsonb_load) into
 * the list's envelope, whose metadata carries resourceVersion and continue.
 *
 * The splitter is a string-aware bracket counter: it does not validate the items (their decoder
 * does), but it refuses what cannot be a list: a body that does not start with an object, an items
 * value that is not an array of objects, elements without a comma between them, text after the
 * top-level object, nesting deeper than KLS_MAX_DEPTH, an element over max_item or an envelope
 * over max_rest (-EBADMSG, or -E2BIG for the sizes). After an error every later call returns it.
 * Memory: at most max_item + max_rest bytes, whatever the body's length. */
#ifndef CLIQO_KUBE_LISTSTREAM_H
#define CLIQO_KUBE_LISTSTREAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define KLS_MAX_DEPTH 64

/* Called with one element's text (borrowed: valid during the call). Return 0 to go on, or a
 * negative errno that kls_feed() then returns. */
typedef int (*kls_item_fn)(const char *item, size_t len, void *data);

struct kls {
    kls_item_fn fn;
    void *data;
    size_t max_item, max_rest;
    char *item; /* an element that began in an earlier chunk */
    size_t item_len, item_cap;
    char *rest; /* the envelope */
    size_t rest_len, rest_cap;
    size_t items; /* elements seen */
    unsigned depth;
    int err;
    bool started, ended;
    bool in_str, esc;
    bool key_expected;     /* at depth 1: the next string is a member's name */
    bool key_capture;      /* reading a depth-1 member name */
    bool items_next;       /* the member being read is "items" */
    bool in_items;         /* inside the items array */
    bool in_elem;          /* inside one of its elements */
    bool need_comma;       /* an element ended: a comma must come before the next */
    unsigned char key_len; /* bytes of the member name read so far (saturating) */
    char key[8];
};

void kls_init(struct kls *s, size_t max_item, size_t max_rest, kls_item_fn fn, void *data);
/* Frees the buffers; s can be initialised again. */
void kls_done(struct kls *s);
/* Feeds the next n bytes. 0, the item callback's error, -EBADMSG or -E2BIG. */
int kls_feed(struct kls *s, const char *p, size_t n);
/* The body is complete: 0 with *envelope a new reference (json_decref), or -EBADMSG (truncated or
 * not a list), -E2BIG, -ENOMEM. */
int kls_finish(struct kls *s, json_t **envelope);

/* Where metadata.managedFields lies in one object's text: on 1, [*from, *to) is the member (its
 * name, value and one comma) whose removal leaves the object without it; 0 when the text has no
 * such member (or is not an object). The scan is string-aware but does not validate: it is meant
 * for text that is decoded right after (cutting the member first saves decoding what the informer
 * drops; a second managedFields member, when the text has duplicates, is left in place). */
int kls_find_managed_fields(const char *text, size_t len, size_t *from, size_t *to);
/* The same for any member: path[n - 1], a member of the object path[n - 2] of ... of the object
 * path[0] of the top object (kls_find_managed_fields is {"metadata", "managedFields"}; a watch
 * event's is {"object", "metadata", "managedFields"}). Only the first member of each name on the
 * path is followed. */
int kls_find_member(const char *text, size_t len, const char *const *path, unsigned n, size_t *from,
                    size_t *to);

/* The text without the member kls_find_member finds on path: on 1, *out and *out_len are the text
 * without it, in *buf (grown to that size as needed; the caller frees it with x_free); on 0 (no
 * such member), the input itself. -ENOMEM (*out is then the input). */
int kls_cut_member(const char *text, size_t len, const char *const *path, unsigned n, char **buf,
                   size_t *cap, const char **out, size_t *out_len);

/* Decodes one listed object as the informer caches it: metadata.managedFields cut from the text
 * first, the rest decoded by jsonb_load() (JSONB_RATIO_KUBE budget). On 0, *obj is a new reference
 * and *text, *text_len the text it was decoded from (in *buf, a buffer the function grows up to
 * len bytes and the caller frees with x_free, or the input itself). -EBADMSG for text that does
 * not decode, -E2BIG over budget, -ENOMEM. */
int kls_decode_object(const char *item, size_t len, char **buf, size_t *cap, json_t **obj,
                      const char **text, size_t *text_len);

#endif
