/* drec: cliqo's DNS-SD record content (see record.h). */
#include "discovery/record.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const reason_names[_DREC_REASON_MAX] = {
    [DREC_OK] = "ok",
    [DREC_TOO_LARGE] = "too-large",
    [DREC_BAD_ITEM] = "bad-item",
    [DREC_BAD_VERSION] = "bad-version",
    [DREC_MISSING_ID] = "missing-id",
    [DREC_BAD_ID] = "bad-id",
    [DREC_BAD_NAME] = "bad-name",
    [DREC_MISSING_URL] = "missing-url",
    [DREC_BAD_URL] = "bad-url",
    [DREC_BAD_HASH] = "bad-hash",
    [DREC_BAD_INSTANCE] = "bad-instance",
    [DREC_ID_MISMATCH] = "id-mismatch",
    [DREC_BAD_SRV] = "bad-srv",
    [DREC_MULTIPLE_TXT] = "multiple-txt",
};

const char *drec_reason_name(enum drec_reason r)
{
    if ((int)r < 0 || r >= _DREC_REASON_MAX || !reason_names[r])
        return "invalid";
    return reason_names[r];
}

static int fail(enum drec_reason *ret_reason, enum drec_reason r)
{
    if (ret_reason)
        *ret_reason = r;
    return -EINVAL;
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static bool is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_alnum(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* ---- URLs and host names ---------------------------------------------------------------------
 */

/* A DNS name of `len` bytes: labels of [A-Za-z0-9-] (and '_', which SRV targets of some zones
 * carry), not starting or ending with '-', 1..63 each, 253 in all, no trailing dot. */
static bool dns_name_valid(const char *s, size_t len)
{
    size_t label = 0;

    if (len == 0 || len > DREC_HOST_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];

        if (c == '.') {
            if (label == 0 || s[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!is_alnum(c) && c != '-' && c != '_')
            return false;
        if (c == '-' && label == 0)
            return false;
        if (++label > DREC_LABEL_MAX)
            return false;
    }
    return label > 0 && s[len - 1] != '-';
}

static bool parse_port(const char *s, size_t len, unsigned *ret)
{
    unsigned v = 0;

    if (len == 0 || len > 5)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(s[i]))
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535)
        return false;
    *ret = v;
    return true;
}

/* Validates the URL and returns its port through ret_port (443 by default). */
static bool url_check(const char *url, unsigned *ret_port)
{
    const char *h, *end, *hend;
    size_t n;
    unsigned port = 443;

    if (!url)
        return false;
    n = strnlen(url, DREC_URL_MAX + 1);
    if (n > DREC_URL_MAX || strncmp(url, "https://", 8) != 0)
        return false;
    h = url + 8;
    end = url + n;
    if (end > h && end[-1] == '/')
        end--;
    if (h >= end)
        return false;
    if (*h == '[') {
        char addr[INET6_ADDRSTRLEN + 1];
        struct in6_addr a6;
        const char *close = memchr(h, ']', (size_t)(end - h));

        if (!close || (size_t)(close - h - 1) >= sizeof(addr) || close == h + 1)
            return false;
        memcpy(addr, h + 1, (size_t)(close - h - 1));
        addr[close - h - 1] = '\0';
        if (inet_pton(AF_INET6, addr, &a6) != 1)
            return false;
        hend = close + 1;
    } else {
        bool numeric = true;

        hend = h;
        while (hend < end && *hend != ':')
            hend++;
        for (const char *p = h; p < hend; p++)
            if (!is_digit(*p) && *p != '.')
                numeric = false;
        if (numeric) {
            char addr[INET_ADDRSTRLEN + 1];
            struct in_addr a4;

            if ((size_t)(hend - h) >= sizeof(addr))
                return false;
            memcpy(addr, h, (size_t)(hend - h));
            addr[hend - h] = '\0';
            if (inet_pton(AF_INET, addr, &a4) != 1)
                return false;
        } else if (!dns_name_valid(h, (size_t)(hend - h))) {
            return false;
        }
    }
    if (hend < end) {
        if (*hend != ':' || !parse_port(hend + 1, (size_t)(end - hend - 1), &port))
            return false;
    }
    /* Nothing but printable, non-space ASCII anywhere (the checks above cover host and port; the
     * only other byte allowed is the trailing '/'). */
    for (const char *p = url; p < url + n; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return false;
    if (ret_port)
        *ret_port = port;
    return true;
}

bool drec_url_valid(const char *url)
{
    return url_check(url, NULL);
}

unsigned drec_url_port(const char *url)
{
    unsigned port = 0;

    return url_check(url, &port) ? port : 0;
}

int drec_url_from_srv(const char *target, unsigned port, char ret[DREC_URL_MAX + 1])
{
    char url[DREC_URL_MAX + 1];
    size_t n;

    if (!target || port == 0 || port > 65535)
        return -EINVAL;
    n = strnlen(target, DREC_HOST_MAX + 2);
    if (n > 0 && target[n - 1] == '.')
        n--;
    if (!dns_name_valid(target, n))
        return -EINVAL;
    if (snprintf(url, sizeof(url), "https://%.*s:%u", (int)n, target, port) >= (int)sizeof(url))
        return -EINVAL;
    if (!drec_url_valid(url))
        return -EINVAL;
    memcpy(ret, url, strlen(url) + 1);
    return 0;
}

int drec_hash_normalize(const char *s, size_t len, char ret[PEER_CA_HASH_LEN + 1])
{
    static const char prefix[] = PEER_CA_HASH_PREFIX;
    const size_t plen = sizeof(prefix) - 1;
    char out[PEER_CA_HASH_LEN + 1];

    if (!s || len != PEER_CA_HASH_LEN || strncmp(s, prefix, plen) != 0)
        return -EINVAL;
    memcpy(out, prefix, plen);
    for (size_t i = plen; i < len; i++) {
        char c = s[i];

        if (!is_hex(c))
            return -EINVAL;
        out[i] = (char)(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
    }
    out[len] = '\0';
    memcpy(ret, out, sizeof(out));
    return 0;
}

/* ---- TXT -------------------------------------------------------------------------------------
 */

enum txt_key { K_TXTVERS, K_ID, K_NAME, K_URL, K_CAHASH, K_MAX };
static const char *const txt_keys[K_MAX] = {"txtvers", "id", "name", "url", "cahash"};

/* A value of one of our keys: printable ASCII without spaces, NUL-terminated into out. */
static bool copy_value(const unsigned char *v, size_t len, char *out, size_t size)
{
    if (len >= size)
        return false;
    for (size_t i = 0; i < len; i++)
        if (v[i] <= ' ' || v[i] >= 0x7f)
            return false;
    memcpy(out, v, len);
    out[len] = '\0';
    return true;
}

int drec_txt_parse(const struct drec_txt_item *items, size_t n, unsigned flags,
                   struct drec_announce *ret, enum drec_reason *ret_reason)
{
    struct drec_announce a;
    bool seen[K_MAX] = {false};
    char buf[DREC_URL_MAX + 1];
    size_t total = 0;

    memset(&a, 0, sizeof(a));
    if (n > DREC_TXT_ITEMS_MAX || (n > 0 && !items))
        return fail(ret_reason, DREC_TOO_LARGE);
    for (size_t i = 0; i < n; i++) {
        if (items[i].len > DREC_TXT_ITEM_MAX || (items[i].len > 0 && !items[i].data))
            return fail(ret_reason, DREC_TOO_LARGE);
        total += items[i].len + 1;
        if (total > DREC_TXT_TOTAL_MAX)
            return fail(ret_reason, DREC_TOO_LARGE);
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned char *d = items[i].data;
        size_t len = items[i].len, klen = 0, vlen;
        const unsigned char *v;
        bool has_value;
        int k;

        if (len == 0)
            continue; /* an empty string: "no data" (RFC 6763 6.1) */
        while (klen < len && d[klen] != '=')
            klen++;
        if (klen == 0)
            return fail(ret_reason, DREC_BAD_ITEM);
        for (size_t j = 0; j < klen; j++)
            if (d[j] < 0x20 || d[j] > 0x7e)
                return fail(ret_reason, DREC_BAD_ITEM);
        has_value = klen < len;
        v = has_value ? d + klen + 1 : NULL;
        vlen = has_value ? len - klen - 1 : 0;
        for (k = 0; k < K_MAX; k++)
            if (strlen(txt_keys[k]) == klen && strncasecmp((const char *)d, txt_keys[k], klen) == 0)
                break;
        if (k == K_MAX || seen[k])
            continue; /* unknown key, or not the first occurrence (RFC 6763 6.4) */
        seen[k] = true;
        switch (k) {
        case K_TXTVERS:
            if (!has_value || vlen != 1 || v[0] != '1')
                return fail(ret_reason, DREC_BAD_VERSION);
            break;
        case K_ID:
            if (!has_value || !copy_value(v, vlen, a.id, sizeof(a.id)) ||
                !peer_cluster_id_valid(a.id))
                return fail(ret_reason, DREC_BAD_ID);
            break;
        case K_NAME:
            if (!has_value || !copy_value(v, vlen, a.name, sizeof(a.name)) ||
                !peer_cluster_name_valid(a.name))
                return fail(ret_reason, DREC_BAD_NAME);
            break;
        case K_URL:
            if (!has_value || !copy_value(v, vlen, a.url, sizeof(a.url)) || !drec_url_valid(a.url))
                return fail(ret_reason, DREC_BAD_URL);
            break;
        case K_CAHASH:
            if (!has_value || !copy_value(v, vlen, buf, sizeof(buf)) ||
                drec_hash_normalize(buf, strlen(buf), a.ca_hash) < 0)
                return fail(ret_reason, DREC_BAD_HASH);
            break;
        default:
            break;
        }
    }
    if (!a.id[0])
        return fail(ret_reason, DREC_MISSING_ID);
    if ((flags & DREC_REQUIRE_URL) && !a.url[0])
        return fail(ret_reason, DREC_MISSING_URL);
    *ret = a;
    if (ret_reason)
        *ret_reason = DREC_OK;
    return 0;
}

static bool invalid(enum drec_reason *ret_reason, enum drec_reason r)
{
    (void)fail(ret_reason, r);
    return false;
}

bool drec_announce_valid(const struct drec_announce *a, enum drec_reason *ret_reason)
{
    char h[PEER_CA_HASH_LEN + 1];

    if (!a || !a->id[0])
        return invalid(ret_reason, DREC_MISSING_ID);
    if (!peer_cluster_id_valid(a->id))
        return invalid(ret_reason, DREC_BAD_ID);
    if (a->name[0] && !peer_cluster_name_valid(a->name))
        return invalid(ret_reason, DREC_BAD_NAME);
    if (a->url[0] && !drec_url_valid(a->url))
        return invalid(ret_reason, DREC_BAD_URL);
    if (a->ca_hash[0] &&
        drec_hash_normalize(a->ca_hash, strnlen(a->ca_hash, sizeof(a->ca_hash)), h) < 0)
        return invalid(ret_reason, DREC_BAD_HASH);
    if (ret_reason)
        *ret_reason = DREC_OK;
    return true;
}

int drec_txt_build(const struct drec_announce *a,
                   char items[DREC_TXT_BUILD_MAX][DREC_TXT_ITEM_MAX + 1], size_t *ret_n)
{
    const char *keys[DREC_TXT_BUILD_MAX], *vals[DREC_TXT_BUILD_MAX];
    size_t n = 0;

    if (!drec_announce_valid(a, NULL))
        return -EINVAL;
    keys[n] = "txtvers", vals[n++] = DREC_TXT_VERSION;
    keys[n] = "id", vals[n++] = a->id;
    if (a->name[0])
        keys[n] = "name", vals[n++] = a->name;
    if (a->url[0])
        keys[n] = "url", vals[n++] = a->url;
    if (a->ca_hash[0])
        keys[n] = "cahash", vals[n++] = a->ca_hash;
    for (size_t i = 0; i < n; i++)
        if (strlen(keys[i]) + 1 + strlen(vals[i]) > DREC_TXT_ITEM_MAX)
            return -ENAMETOOLONG;
    for (size_t i = 0; i < n; i++)
        snprintf(items[i], DREC_TXT_ITEM_MAX + 1, "%s=%s", keys[i], vals[i]);
    *ret_n = n;
    return 0;
}

/* ---- instance names --------------------------------------------------------------------------
 */

#define CONFLICT_ROOM 6 /* " #9999" */

int drec_instance_build(const char *prefix, const char *id, unsigned conflict,
                        char ret[DREC_LABEL_MAX + 1])
{
    char out[DREC_LABEL_MAX + 1], suffix[16] = "";
    size_t idlen, plen = 0, room, o = 0;

    if (!peer_cluster_id_valid(id) || conflict > DREC_CONFLICT_MAX)
        return -EINVAL;
    if (conflict > 1)
        snprintf(suffix, sizeof(suffix), " #%u", conflict);
    idlen = strlen(id);
    if (idlen + strlen(suffix) > DREC_LABEL_MAX)
        return -ENAMETOOLONG;
    /* Room for "<prefix>_" with the largest suffix reserved, so that renames after conflicts keep
     * the same prefix. */
    room =
        DREC_LABEL_MAX > idlen + CONFLICT_ROOM + 1 ? DREC_LABEL_MAX - idlen - CONFLICT_ROOM - 1 : 0;
    if (prefix)
        plen = strlen(prefix);
    if (plen > room) {
        plen = room;
        /* Never cut a UTF-8 sequence: back off to the start of the character at the cut. */
        while (plen > 0 && ((unsigned char)prefix[plen] & 0xc0) == 0x80)
            plen--;
    }
    for (size_t i = 0; i < plen; i++) {
        unsigned char c = (unsigned char)prefix[i];

        out[o++] = (char)(c < 0x20 || c == 0x7f ? '-' : c);
    }
    if (o > 0)
        out[o++] = '_';
    memcpy(out + o, id, idlen);
    o += idlen;
    memcpy(out + o, suffix, strlen(suffix));
    o += strlen(suffix);
    out[o] = '\0';
    memcpy(ret, out, o + 1);
    return 0;
}

int drec_instance_parse(const char *instance, size_t len, char ret_id[PEER_NAME_MAX + 1],
                        unsigned *ret_conflict, enum drec_reason *ret_reason)
{
    char id[PEER_NAME_MAX + 1];
    unsigned conflict = 0;
    size_t end = len, start;

    if (!instance || len == 0 || len > DREC_LABEL_MAX)
        return fail(ret_reason, DREC_BAD_INSTANCE);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)instance[i] < 0x20 || instance[i] == 0x7f)
            return fail(ret_reason, DREC_BAD_INSTANCE);
    /* An optional " #<n>" at the end: n from 2 to DREC_CONFLICT_MAX, no leading zero. */
    {
        size_t d = len;

        while (d > 0 && is_digit(instance[d - 1]))
            d--;
        if (d < len && d >= 2 && instance[d - 1] == '#' && instance[d - 2] == ' ') {
            unsigned v = 0;

            if (len - d > 4 || instance[d] == '0')
                return fail(ret_reason, DREC_BAD_INSTANCE);
            for (size_t i = d; i < len; i++)
                v = v * 10 + (unsigned)(instance[i] - '0');
            if (v < 2)
                return fail(ret_reason, DREC_BAD_INSTANCE);
            conflict = v;
            end = d - 2;
        }
    }
    start = end;
    while (start > 0 && instance[start - 1] != '_')
        start--;
    if (end - start == 0 || end - start > PEER_NAME_MAX)
        return fail(ret_reason, DREC_BAD_INSTANCE);
    memcpy(id, instance + start, end - start);
    id[end - start] = '\0';
    if (!peer_cluster_id_valid(id))
        return fail(ret_reason, DREC_BAD_INSTANCE);
    memcpy(ret_id, id, end - start + 1);
    *ret_conflict = conflict;
    if (ret_reason)
        *ret_reason = DREC_OK;
    return 0;
}

/* ---- full names ------------------------------------------------------------------------------
 */

int drec_fullname_split(const char *full, const char *service_domain,
                        char ret_label[DREC_LABEL_MAX + 1], size_t *ret_len)
{
    char label[DREC_LABEL_MAX + 1];
    size_t n = 0, rlen, slen;
    const char *p;

    if (!full || !service_domain)
        return -EINVAL;
    for (p = full; *p && *p != '.'; p++) {
        unsigned char c = (unsigned char)*p;

        if (c == '\\') {
            if (is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3])) {
                unsigned v = (unsigned)(p[1] - '0') * 100 + (unsigned)(p[2] - '0') * 10 +
                             (unsigned)(p[3] - '0');

                if (v == 0 || v > 255)
                    return -EINVAL;
                c = (unsigned char)v;
                p += 3;
            } else if (p[1]) {
                c = (unsigned char)p[1];
                p++;
            } else {
                return -EINVAL;
            }
        }
        if (n >= DREC_LABEL_MAX)
            return -EINVAL;
        label[n++] = (char)c;
    }
    if (*p != '.' || n == 0)
        return -EINVAL;
    p++;
    rlen = strnlen(p, DREC_HOST_MAX + 2);
    if (rlen > 0 && p[rlen - 1] == '.')
        rlen--;
    slen = strnlen(service_domain, DREC_HOST_MAX + 2);
    if (slen > 0 && service_domain[slen - 1] == '.')
        slen--;
    if (rlen != slen || rlen == 0 || strncasecmp(p, service_domain, rlen) != 0)
        return -EINVAL;
    label[n] = '\0';
    memcpy(ret_label, label, n + 1);
    *ret_len = n;
    return 0;
}
