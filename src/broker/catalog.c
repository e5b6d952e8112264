/* brk catalog: see catalog.h. */
#include "broker/catalog.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json.h"
#include "common/strutil.h"
#include "kube/names.h"
#include "offloading/nsof.h"

#define MAC_HEX 32 /* the first 16 bytes of HMAC-SHA256, in hex */

/* The MAC of name, MAC_HEX hex digits and a NUL. */
static int mac_hex(const unsigned char key[BRK_TOKEN_KEY_LEN], const char *name,
                   char out[MAC_HEX + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;

    if (!HMAC(EVP_sha256(), key, BRK_TOKEN_KEY_LEN, (const unsigned char *)name, strlen(name), md,
              &len) ||
        len < MAC_HEX / 2)
        return -EIO;
    str_hex(md, MAC_HEX / 2, out);
    return 0;
}

int brk_token_make(const unsigned char key[BRK_TOKEN_KEY_LEN], const char *name,
                   char out[BRK_TOKEN_MAX])
{
    char mac[MAC_HEX + 1];
    int e;

    if (!kname_dns_subdomain(name))
        return -EINVAL;
    if ((e = mac_hex(key, name, mac)) < 0)
        return e;
    snprintf(out, BRK_TOKEN_MAX, "%s_%s", mac, name);
    return 0;
}

/* The name a continue token goes on after. */
static int token_read(const unsigned char key[BRK_TOKEN_KEY_LEN], const char *tok, char *name,
                      size_t size, char *err, size_t errlen)
{
    char want[MAC_HEX + 1];
    const char *n = tok + MAC_HEX + 1;

    if (strlen(tok) < MAC_HEX + 2 || tok[MAC_HEX] != '_' ||
        strspn(tok, "0123456789abcdef") < MAC_HEX || !kname_dns_subdomain(n) || strlen(n) >= size)
        return errbuf_fmt(err, errlen, -EINVAL, "continue: not a continue token of this API");
    if (mac_hex(key, n, want) < 0 || CRYPTO_memcmp(want, tok, MAC_HEX) != 0)
        return errbuf_fmt(err, errlen, -ESTALE,
                          "continue: the token is not valid for this broker (it may have "
                          "restarted): list again from the start");
    snprintf(name, size, "%s", n);
    return 0;
}

int brk_catalog_query_parse(struct brk_catalog_query *q, const char *label_selector,
                            const char *field_selector, const char *limit, const char *cont,
                            const unsigned char key[BRK_TOKEN_KEY_LEN], char *err, size_t errlen)
{
    char why[256];
    int e;

    memset(q, 0, sizeof(*q));
    if (label_selector && nsof_selector_from_text(label_selector, &q->labels, why, sizeof(why)) < 0)
        return errbuf_fmt(err, errlen, -EINVAL, "labelSelector: %s", why);
    if (field_selector && *field_selector) {
        static const char *const ops[] = {"metadata.name==", "metadata.name!=", "metadata.name="};
        const char *v = NULL;
        size_t i;

        for (i = 0; i < sizeof(ops) / sizeof(ops[0]) && !v; i++)
            if (strncmp(field_selector, ops[i], strlen(ops[i])) == 0)
                v = field_selector + strlen(ops[i]);
        if (!v)
            return errbuf_fmt(err, errlen, -EINVAL,
                              "fieldSelector: only metadata.name=, == or != is supported");
        if (!kname_dns_subdomain(v))
            return errbuf_fmt(err, errlen, -EINVAL, "fieldSelector: \"%.64s\" is not a name", v);
        snprintf(q->name, sizeof(q->name), "%s", v);
        q->name_negated = i == 2;
    }
    if (limit) {
        uint64_t l;

        if (parse_u64(limit, BRK_CATALOG_MAX_LIMIT, &l) < 0 || l < 1)
            return errbuf_fmt(err, errlen, -EINVAL, "limit: expected an integer from 1 to %d",
                              BRK_CATALOG_MAX_LIMIT);
        q->limit = (size_t)l;
    }
    if (cont && *cont && (e = token_read(key, cont, q->after, sizeof(q->after), err, errlen)) < 0)
        return e;
    return 0;
}

void brk_catalog_query_free(struct brk_catalog_query *q)
{
    json_decref(q->labels);
    q->labels = NULL;
}

static bool matches(const json_t *fc, const struct brk_catalog_query *q)
{
    const char *name = jsn_str_at(fc, "metadata", "name", NULL);

    if (!name || (q->after[0] && strcmp(name, q->after) <= 0))
        return false;
    if (q->name[0] && (strcmp(name, q->name) == 0) == q->name_negated)
        return false;
    return !q->labels ||
           nsof_selector_match(q->labels, name,
                               json_object_get(json_object_get(fc, "metadata"), "labels"));
}

json_t *brk_catalog_page(const json_t *const *fcs, size_t n, const struct brk_catalog_query *q,
                         json_t *(*extra)(const json_t *fc, void *data), void *data,
                         const unsigned char key[BRK_TOKEN_KEY_LEN], char *next)
{
    json_t *out = json_array();
    const char *last = NULL;

    next[0] = '\0';
    for (size_t i = 0; out && i < n; i++) {
        json_t *item, *add;

        if (!matches(fcs[i], q))
            continue;
        if (q->limit && json_array_size(out) == q->limit) {
            if (brk_token_make(key, last, next) < 0)
                next[0] = '\0';
            break;
        }
        item = json_deep_copy(fcs[i]);
        if (!item || json_array_append_new(out, item) < 0) {
            json_decref(out);
            return NULL;
        }
        if (extra && (add = extra(fcs[i], data)))
            json_object_set_new(item, "broker", add);
        last = jsn_str_at(fcs[i], "metadata", "name", NULL);
    }
    return out;
}
