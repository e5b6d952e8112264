#include "peering/token.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

static const char tok_hex[] = "0123456789abcdef";

int peer_token_generate(char ret[PEER_TOKEN_LEN + 1])
{
    unsigned char b[PEER_TOKEN_BYTES];
    char out[PEER_TOKEN_LEN + 1];

    if (RAND_bytes(b, sizeof b) != 1)
        return -EIO;
    for (size_t i = 0; i < sizeof b; i++) {
        out[2 * i] = tok_hex[b[i] >> 4];
        out[2 * i + 1] = tok_hex[b[i] & 0x0f];
    }
    out[PEER_TOKEN_LEN] = '\0';
    memcpy(ret, out, sizeof out);
    OPENSSL_cleanse(b, sizeof b);
    OPENSSL_cleanse(out, sizeof out);
    return 0;
}

bool peer_token_valid(const char *s)
{
    if (!s || strnlen(s, PEER_TOKEN_LEN + 1) != PEER_TOKEN_LEN)
        return false;
    for (size_t i = 0; i < PEER_TOKEN_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

bool peer_token_equal(const char *a, const char *b)
{
    unsigned char da[32], db[32];
    unsigned int la = 0, lb = 0;
    bool eq;

    if (!a || !b)
        return false;
    if (EVP_Digest(a, strlen(a), da, &la, EVP_sha256(), NULL) != 1 ||
        EVP_Digest(b, strlen(b), db, &lb, EVP_sha256(), NULL) != 1 || la != 32 || lb != 32)
        return false;
    eq = CRYPTO_memcmp(da, db, sizeof da) == 0;
    OPENSSL_cleanse(da, sizeof da);
    OPENSSL_cleanse(db, sizeof db);
    return eq;
}

int peer_token_digest(const char *token, char ret_hex[PEER_TOKEN_DIGEST_LEN + 1])
{
    unsigned char d[32];
    unsigned int l = 0;

    if (!peer_token_valid(token))
        return -EINVAL;
    if (EVP_Digest(token, PEER_TOKEN_LEN, d, &l, EVP_sha256(), NULL) != 1 || l != sizeof d)
        return -EIO;
    for (size_t i = 0; i < sizeof d; i++)
        snprintf(ret_hex + 2 * i, 3, "%02x", d[i]);
    OPENSSL_cleanse(d, sizeof d);
    return 0;
}

bool peer_token_digest_equal(const char *a, const char *b)
{
    size_t n;

    if (!a || !b || (n = strlen(a)) != strlen(b) || n == 0)
        return false;
    return CRYPTO_memcmp(a, b, n) == 0;
}

/* One address: a ring of its last max_failures failure times (oldest at `head`). */
struct lim_entry {
    char addr[PEER_LIMITER_ADDR_MAX + 1];
    unsigned count; /* failures recorded in the ring, <= max */
    unsigned head;
    uint64_t last; /* time of the newest failure, for eviction */
    uint64_t times[PEER_LIMITER_MAX_FAILURES];
};

struct peer_limiter {
    unsigned max;
    uint64_t window;
    size_t cap;
    size_t n; /* entries in use: entries[0..n) */
    struct lim_entry *entries;
};

int peer_limiter_new(unsigned max_failures, uint64_t window_ms, size_t capacity,
                     struct peer_limiter **ret)
{
    struct peer_limiter *l;

    if (max_failures == 0)
        max_failures = PEER_LIMITER_DEFAULT_MAX;
    if (window_ms == 0)
        window_ms = PEER_LIMITER_DEFAULT_WINDOW;
    if (capacity == 0)
        capacity = PEER_LIMITER_DEFAULT_CAPACITY;
    if (max_failures > PEER_LIMITER_MAX_FAILURES || capacity > PEER_LIMITER_MAX_CAPACITY)
        return -EINVAL;
    l = x_calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    l->entries = x_calloc(capacity, sizeof *l->entries);
    if (!l->entries) {
        x_free(l);
        return -ENOMEM;
    }
    l->max = max_failures;
    l->window = window_ms;
    l->cap = capacity;
    *ret = l;
    return 0;
}

struct peer_limiter *peer_limiter_free(struct peer_limiter *l)
{
    if (l) {
        x_free(l->entries);
        x_free(l);
    }
    return NULL;
}

static bool lim_addr_valid(const char *addr)
{
    size_t n;

    if (!addr)
        return false;
    n = strnlen(addr, PEER_LIMITER_ADDR_MAX + 1);
    return n > 0 && n <= PEER_LIMITER_ADDR_MAX;
}

static struct lim_entry *lim_find(const struct peer_limiter *l, const char *addr)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->entries[i].addr, addr) == 0)
            return &l->entries[i];
    return NULL;
}

/* A failure at time t still counts at `now`. A time in the future (the clock went back) counts. */
static bool lim_counts(const struct peer_limiter *l, uint64_t t, uint64_t now)
{
    return t >= now || now - t < l->window;
}

/* Drops the failures that left the window; they are the oldest, at the head of the ring. */
static void lim_expire(const struct peer_limiter *l, struct lim_entry *e, uint64_t now)
{
    while (e->count > 0 && !lim_counts(l, e->times[e->head], now)) {
        e->head = (e->head + 1) % l->max;
        e->count--;
    }
}

static void lim_remove(struct peer_limiter *l, struct lim_entry *e)
{
    size_t i = (size_t)(e - l->entries);

    if (i != l->n - 1)
        l->entries[i] = l->entries[l->n - 1];
    l->n--;
}

bool peer_limiter_check(const struct peer_limiter *l, const char *addr, uint64_t now_ms,
                        uint64_t *ret_retry_ms)
{
    const struct lim_entry *e;
    unsigned counted = 0, first = 0;

    if (!lim_addr_valid(addr))
        return false;
    e = lim_find(l, addr);
    if (!e)
        return false;
    for (unsigned k = 0; k < e->count; k++) {
        unsigned i = (e->head + k) % l->max;

        if (lim_counts(l, e->times[i], now_ms)) {
            if (counted++ == 0)
                first = i;
        }
    }
    if (counted < l->max)
        return false;
    if (ret_retry_ms) {
        uint64_t t = e->times[first], retry;

        retry = t >= now_ms ? l->window : t + l->window - now_ms;
        *ret_retry_ms = retry ? retry : 1;
    }
    return true;
}

int peer_limiter_fail(struct peer_limiter *l, const char *addr, uint64_t now_ms)
{
    struct lim_entry *e;

    if (!lim_addr_valid(addr))
        return -EINVAL;
    e = lim_find(l, addr);
    if (!e) {
        if (l->n == l->cap) {
            /* Full: first drop every entry with nothing left in its window, else the stalest. */
            struct lim_entry *oldest = &l->entries[0];

            for (size_t i = 0; i < l->n;) {
                lim_expire(l, &l->entries[i], now_ms);
                if (l->entries[i].count == 0) {
                    lim_remove(l, &l->entries[i]);
                    continue;
                }
                i++;
            }
            if (l->n == l->cap) {
                for (size_t i = 1; i < l->n; i++)
                    if (l->entries[i].last < oldest->last)
                        oldest = &l->entries[i];
                lim_remove(l, oldest);
            }
        }
        e = &l->entries[l->n++];
        memset(e, 0, sizeof *e);
        memcpy(e->addr, addr, strlen(addr) + 1);
    }
    lim_expire(l, e, now_ms);
    if (e->count == l->max) {
        /* Ring full: the new failure replaces the oldest. */
        e->head = (e->head + 1) % l->max;
        e->count--;
    }
    e->times[(e->head + e->count) % l->max] = now_ms;
    e->count++;
    e->last = now_ms;
    return 0;
}

void peer_limiter_reset(struct peer_limiter *l, const char *addr)
{
    struct lim_entry *e;

    if (!lim_addr_valid(addr))
        return;
    e = lim_find(l, addr);
    if (e)
        lim_remove(l, e);
}

size_t peer_limiter_size(const struct peer_limiter *l)
{
    return l->n;
}

enum peer_verdict peer_token_verdict(struct peer_limiter *l, const char *addr, const char *expected,
                                     const char *given, uint64_t now_ms, uint64_t *ret_retry_ms)
{
    /* The comparison comes first, in constant time, whether or not the address is blocked. A
     * blocked client can still tell a right token (201) from a wrong one (429): with 256 bits
     * that is no help to a guesser, and the limiter's job is to bound what wrong ones cost. */
    bool ok = expected && expected[0] && peer_token_equal(given, expected);

    if (ok)
        return PEER_VERDICT_OK;
    if (peer_limiter_check(l, addr, now_ms, ret_retry_ms))
        return PEER_VERDICT_LIMITED;
    (void)peer_limiter_fail(l, addr, now_ms);
    return PEER_VERDICT_WRONG;
}
