/* brk catalog: the body of GET /api/clusters (docs/broker.md, "Catalog"): the ForeignClusters the
 * broker knows, filtered and paginated, each with what the broker adds. Pure: the caller passes the
 * objects and a callback for the additions; the HTTP handler, the ETag and the cache are the API's.
 *
 * Query parameters, each validated (a bad one is -EINVAL with a reason naming it, a 400):
 *   labelSelector  the API server's syntax ("k=v,k!=v,k in (a,b),k notin (a),k,!k"), parsed and
 *                  matched by the code `cliqoctl offload --selector` uses
 *   fieldSelector  metadata.name=N, metadata.name==N or metadata.name!=N (no other field)
 *   limit          1..BRK_CATALOG_MAX_LIMIT; absent: everything
 *   continue       the token of the previous page: opaque, HMAC-signed with the broker's key,
 *                  random per process. A malformed token is -EINVAL; one whose signature does not
 *                  hold (altered, forged, or made before the broker restarted: the two cannot be
 *                  told apart) is -ESTALE, a 410 Gone, as the API server answers an expired
 *                  continue: the client lists again from the start
 * Items come in name order; a page ends after `limit` items and then carries a token that goes on
 * after the last one. */
#ifndef CLIQO_BROKER_CATALOG_H
#define CLIQO_BROKER_CATALOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define BRK_CATALOG_MAX_LIMIT 1000
#define BRK_TOKEN_KEY_LEN     32
#define BRK_TOKEN_MAX         (32 + 1 + 253 + 1) /* hex MAC, '_', a name, NUL */

struct brk_catalog_query {
    json_t *labels;    /* a node selector (nsof_selector_from_text); NULL: every cluster */
    char name[254];    /* fieldSelector's name; "" for none */
    bool name_negated; /* metadata.name!=N */
    size_t limit;      /* 0: no limit */
    char after[254];   /* from the continue token: items after this name; "" from the start */
};

/* Parses the query's parameters (each NULL when absent). key signs and checks the continue
 * tokens. Returns 0, or -EINVAL / -ESTALE with a reason; brk_catalog_query_free in both cases. */
int brk_catalog_query_parse(struct brk_catalog_query *q, const char *label_selector,
                            const char *field_selector, const char *limit, const char *cont,
                            const unsigned char key[BRK_TOKEN_KEY_LEN], char *err, size_t errlen);
void brk_catalog_query_free(struct brk_catalog_query *q);

/* The page for q over fcs (ForeignCluster objects, sorted by metadata.name, borrowed): a new array
 * of copies, each given the member "broker" that extra returns for it (a new reference; NULL leaves
 * it out). When more items match after the page, *next (BRK_TOKEN_MAX bytes) receives the continue
 * token, else "". NULL when out of memory. */
json_t *brk_catalog_page(const json_t *const *fcs, size_t n, const struct brk_catalog_query *q,
                         json_t *(*extra)(const json_t *fc, void *data), void *data,
                         const unsigned char key[BRK_TOKEN_KEY_LEN], char *next);

/* The continue token for "after name" (exposed for the tests). Returns 0 or -EINVAL. */
int brk_token_make(const unsigned char key[BRK_TOKEN_KEY_LEN], const char *name,
                   char out[BRK_TOKEN_MAX]);

#endif
