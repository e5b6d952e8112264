/* peering/idkey: the canonical string, signing and verifying POST /identity proofs, and the
 * single-use token Secrets (peering/objects.h peer_token_secret_check). A fixed key and a
 * signature made by the openssl command line check interoperability (tests/e2e/security signs
 * with openssl too). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/xalloc.h"
#include "peering/idkey.h"
#include "peering/objects.h"
#include "peering/token.h"

#define KEY_PEM                                                                                    \
    "-----BEGIN PRIVATE KEY-----\n"                                                                \
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgv1nafx+5I2DLoq72\n"                           \
    "dV2Hc+6SkNl0lt4V++K18szx/x+hRANCAAQVb7BWYt2i+scugaS8F9saQS3sky4K\n"                           \
    "ddITCyQxuN1CkXPOd62MIz5Un0dETmRtT1h/fuFuisncrDV34lm3ok+B\n"                                   \
    "-----END PRIVATE KEY-----\n"
/* openssl pkey -pubout -outform der | sha256sum */
#define KEY_ID "4bcf14e486f4ceec9d48b4a6ba7f03d217baa8ab3c0d4ecd793f9b82fd2c8a4f"
#define KEY_SPKI_HEX                                                                               \
    "3059301306072a8648ce3d020106082a8648ce3d03010703420004156fb05662dda2fac72e81a4bc17db1a412d"   \
    "ec932e0a75d2130b2431b8dd429173ce77ad8c233e549f47444e646d4f587f7ee16e8ac9dcac3577e259b7a24f81"
/* openssl dgst -sha256 -sign over the canonical string of prov-1, cons-1, cluster-a, 1700000000 */
#define OPENSSL_SIG_HEX                                                                            \
    "3046022100e50d759771908f8c4a31703e03317d2f95f8d6d1ae3b52fccd87ba111bd14dcd022100c76df3c198"   \
    "35096bff785571f822a76c52b6aee6a02bdc4a3162699f83554fef"
#define P384_PEM                                                                                   \
    "-----BEGIN PRIVATE KEY-----\n"                                                                \
    "MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDuxC279WERYpfAsXEc\n"                           \
    "kCXv4CRa52QAyVxjbt9Ew3xl+s7j2LK8XjQ0Fay4MwSRCcahZANiAAQYTOJqL/vW\n"                           \
    "uk819FhWRfplg0kpA7Z3TsFU5HtwJmcSWIStbGZmgMqaCKWnVMliM8Jc9H9hT4yU\n"                           \
    "tiBn5oQOa80zfgA+xqR43KzGyqsKt//Gi1Rl+IdjTNGUl1rtWa0w8zk=\n"                                   \
    "-----END PRIVATE KEY-----\n"
#define T0 1700000000

static size_t unhex(const char *h, unsigned char *out)
{
    size_t n = strlen(h) / 2;

    for (size_t i = 0; i < n; i++) {
        unsigned v;

        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
    return n;
}

static EVP_PKEY *load(const char *pem)
{
    EVP_PKEY *k = NULL;
    char err[128];

    assert_int_equal(peer_idkey_load(pem, strlen(pem), &k, err, sizeof err), 0);
    assert_string_equal(err, "");
    return k;
}

static void test_message(void **state)
{
    static const struct {
        const char *prov, *cid, *cname;
        int64_t ts;
        const char *key_id, *want; /* NULL: -EINVAL */
    } cases[] = {
        {"prov-1", "cons-1", "cluster-a", T0, KEY_ID,
         "cliqo-identity-v1\nprov-1\ncons-1\ncluster-a\n1700000000\n" KEY_ID "\n"},
        {"p", "c", "n", 0, KEY_ID, "cliqo-identity-v1\np\nc\nn\n0\n" KEY_ID "\n"},
        {"p", "c", "n", PEER_WIRE_TS_MAX, KEY_ID,
         "cliqo-identity-v1\np\nc\nn\n253402300799\n" KEY_ID "\n"},
        {"p", "c", "n", -1, KEY_ID, NULL},
        {"p", "c", "n", PEER_WIRE_TS_MAX + 1, KEY_ID, NULL},
        {"p\nx", "c", "n", T0, KEY_ID, NULL}, /* a newline would make the string ambiguous */
        {"p", "c\n", "n", T0, KEY_ID, NULL},
        {"p", "c", "n\nx", T0, KEY_ID, NULL},
        {"p", "c", "N", T0, KEY_ID, NULL},
        {"", "c", "n", T0, KEY_ID, NULL},
        {NULL, "c", "n", T0, KEY_ID, NULL},
        {"p", "c", "n", T0, "ABC", NULL},
        {"p", "c", "n", T0, KEY_ID "0", NULL},
        {"p", "c", "n", T0, NULL, NULL},
    };
    char buf[PEER_IDKEY_MSG_MAX];

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = peer_idkey_message(cases[i].prov, cases[i].cid, cases[i].cname, cases[i].ts,
                                   cases[i].key_id, buf, sizeof buf);

        if (!cases[i].want) {
            if (n != -EINVAL)
                fail_msg("case %zu: %d", i, n);
            continue;
        }
        if (n < 0)
            fail_msg("case %zu: %d", i, n);
        assert_int_equal((size_t)n, strlen(cases[i].want));
        assert_string_equal(buf, cases[i].want);
    }
    /* Too small a buffer. */
    assert_int_equal(peer_idkey_message("p", "c", "n", 1, KEY_ID, buf, 20), -EINVAL);
}

static void test_key(void **state)
{
    unsigned char spki[PEER_WIRE_KEY_MAX], want[PEER_WIRE_KEY_MAX];
    char id[PEER_KEY_ID_LEN + 1], err[128], *pem = NULL;
    size_t len = 0;
    EVP_PKEY *k = load(KEY_PEM), *k2 = NULL;

    (void)state;
    assert_int_equal(peer_idkey_spki(k, spki, sizeof spki, &len), 0);
    assert_int_equal(len, unhex(KEY_SPKI_HEX, want));
    assert_memory_equal(spki, want, len);
    assert_int_equal(peer_idkey_id(spki, len, id), 0);
    assert_string_equal(id, KEY_ID);
    assert_true(peer_idkey_id_valid(id));
    assert_false(peer_idkey_id_valid("4BCF"));
    assert_false(peer_idkey_id_valid(NULL));
    assert_int_equal(peer_idkey_spki(k, spki, 10, &len), -E2BIG);
    EVP_PKEY_free(k);

    /* A new key loads back; other curves and garbage do not. */
    assert_int_equal(peer_idkey_generate(&pem), 0);
    k = load(pem);
    x_free(pem);
    EVP_PKEY_free(k);
    assert_int_equal(peer_idkey_load(P384_PEM, strlen(P384_PEM), &k2, err, sizeof err), -EINVAL);
    assert_string_equal(err, "not an EC P-256 key");
    assert_int_equal(peer_idkey_load("junk", 4, &k2, err, sizeof err), -EINVAL);
    assert_int_equal(peer_idkey_load(KEY_PEM, 40, &k2, err, sizeof err), -EINVAL);
    assert_null(k2);
}

/* A request signed with KEY_PEM for prov-1 at T0. */
static void signed_request(struct peer_identity_request *req)
{
    EVP_PKEY *k = load(KEY_PEM);

    memset(req, 0, sizeof *req);
    snprintf(req->cluster_id, sizeof req->cluster_id, "cons-1");
    snprintf(req->cluster_name, sizeof req->cluster_name, "cluster-a");
    assert_int_equal(peer_idkey_sign_request(k, "prov-1", T0, req), 0);
    EVP_PKEY_free(k);
}

enum mutation {
    M_NONE,
    M_PROVIDER,    /* verified as another provider */
    M_OTHER_KEY,   /* the public key replaced by another P-256 key */
    M_SIGNED_BY_2, /* signed by another key, sent with the first key */
    M_P384,        /* signed with a P-384 key, its key sent */
    M_CLUSTER_ID,
    M_CLUSTER_NAME,
    M_TIMESTAMP, /* changed within the window */
    M_SIG_TRUNC,
    M_SIG_EMPTY,
    M_SIG_BITFLIP,
    M_KEY_TRUNC,
    M_KEY_TRAILING,
    M_KEY_EMPTY,
};

static void test_verify(void **state)
{
    static const struct {
        const char *name;
        enum mutation m;
        int64_t now;
        int want;
        const char *err_part;
    } cases[] = {
        {"good", M_NONE, T0, 0, NULL},
        {"good, clock 300 s ahead", M_NONE, T0 + 300, 0, NULL},
        {"good, clock 300 s behind", M_NONE, T0 - 300, 0, NULL},
        {"stale", M_NONE, T0 + 301, -ETIME, "301 s behind this cluster's clock"},
        {"future", M_NONE, T0 - 301, -ETIME, "301 s ahead of"},
        {"another provider", M_PROVIDER, T0, -EBADMSG, "does not verify"},
        {"another key sent", M_OTHER_KEY, T0, -EBADMSG, "does not verify"},
        {"signed by another key", M_SIGNED_BY_2, T0, -EBADMSG, "does not verify"},
        {"P-384 key", M_P384, T0, -EBADMSG, "not an EC P-256 public key"},
        {"cluster ID changed", M_CLUSTER_ID, T0, -EBADMSG, "does not verify"},
        {"cluster name changed", M_CLUSTER_NAME, T0, -EBADMSG, "does not verify"},
        {"timestamp changed", M_TIMESTAMP, T0, -EBADMSG, "does not verify"},
        {"signature truncated", M_SIG_TRUNC, T0, -EBADMSG, "does not verify"},
        {"signature empty", M_SIG_EMPTY, T0, -EBADMSG, "does not verify"},
        {"signature bit flipped", M_SIG_BITFLIP, T0, -EBADMSG, "does not verify"},
        {"key truncated", M_KEY_TRUNC, T0, -EBADMSG, "not an EC P-256 public key"},
        {"key with a trailing byte", M_KEY_TRAILING, T0, -EBADMSG, "not an EC P-256 public key"},
        {"key empty", M_KEY_EMPTY, T0, -EBADMSG, "not an EC P-256 public key"},
    };
    char id[PEER_KEY_ID_LEN + 1], err[PEER_WIRE_MESSAGE_MAX + 1];

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct peer_identity_request req, other;
        const char *prov = "prov-1";
        EVP_PKEY *k2 = NULL;
        char *pem = NULL;
        int r;

        signed_request(&req);
        switch (cases[i].m) {
        case M_NONE:
            break;
        case M_PROVIDER:
            prov = "prov-2";
            break;
        case M_OTHER_KEY:
        case M_SIGNED_BY_2:
            assert_int_equal(peer_idkey_generate(&pem), 0);
            k2 = load(pem);
            other = req;
            assert_int_equal(peer_idkey_sign_request(k2, "prov-1", T0, &other), 0);
            if (cases[i].m == M_OTHER_KEY) {
                memcpy(req.public_key, other.public_key, other.public_key_len);
                req.public_key_len = other.public_key_len;
            } else {
                memcpy(req.signature, other.signature, other.signature_len);
                req.signature_len = other.signature_len;
            }
            break;
        case M_P384: {
            EVP_PKEY *k3 = NULL;
            EVP_MD_CTX *ctx = EVP_MD_CTX_new();
            unsigned char *der = NULL;
            unsigned char sig[256];
            size_t sl = sizeof sig;
            int n;

            assert_int_equal(peer_idkey_load(P384_PEM, strlen(P384_PEM), &k3, err, sizeof err),
                             -EINVAL);
            /* Sign by hand: the module refuses to load such a key. */
            {
                BIO *b = BIO_new_mem_buf(P384_PEM, -1);
                k3 = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
                BIO_free(b);
            }
            assert_non_null(k3);
            n = i2d_PUBKEY(k3, &der);
            assert_true(n > 0 && n <= PEER_WIRE_KEY_MAX);
            memcpy(req.public_key, der, (size_t)n);
            req.public_key_len = (size_t)n;
            OPENSSL_free(der);
            assert_int_equal(EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k3), 1);
            assert_int_equal(EVP_DigestSign(ctx, sig, &sl, (const unsigned char *)"x", 1), 1);
            /* Its signatures may be longer than the wire allows: the key is refused first. */
            req.signature_len = sl < sizeof req.signature ? sl : sizeof req.signature;
            memcpy(req.signature, sig, req.signature_len);
            EVP_MD_CTX_free(ctx);
            EVP_PKEY_free(k3);
            break;
        }
        case M_CLUSTER_ID:
            snprintf(req.cluster_id, sizeof req.cluster_id, "cons-2");
            break;
        case M_CLUSTER_NAME:
            snprintf(req.cluster_name, sizeof req.cluster_name, "cluster-b");
            break;
        case M_TIMESTAMP:
            req.timestamp = T0 + 1;
            break;
        case M_SIG_TRUNC:
            req.signature_len--;
            break;
        case M_SIG_EMPTY:
            req.signature_len = 0;
            break;
        case M_SIG_BITFLIP:
            req.signature[req.signature_len / 2] ^= 1;
            break;
        case M_KEY_TRUNC:
            req.public_key_len -= 1;
            break;
        case M_KEY_TRAILING:
            req.public_key[req.public_key_len++] = 0;
            break;
        case M_KEY_EMPTY:
            req.public_key_len = 0;
            break;
        }
        memset(id, 'x', sizeof id);
        r = peer_idkey_verify_request(&req, prov, cases[i].now, PEER_IDKEY_WINDOW, id, err,
                                      sizeof err);
        if (r != cases[i].want)
            fail_msg("%s: got %d, want %d (%s)", cases[i].name, r, cases[i].want, err);
        if (r == 0) {
            assert_string_equal(id, KEY_ID);
            assert_string_equal(err, "");
        } else {
            assert_int_equal(id[0], 'x'); /* not written */
            if (!strstr(err, cases[i].err_part))
                fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].name, err, cases[i].err_part);
        }
        EVP_PKEY_free(k2);
        x_free(pem);
    }
}

/* A signature made by the openssl command line over the documented string verifies. */
static void test_openssl_interop(void **state)
{
    struct peer_identity_request req;
    char id[PEER_KEY_ID_LEN + 1], err[256];

    (void)state;
    memset(&req, 0, sizeof req);
    snprintf(req.cluster_id, sizeof req.cluster_id, "cons-1");
    snprintf(req.cluster_name, sizeof req.cluster_name, "cluster-a");
    req.public_key_len = unhex(KEY_SPKI_HEX, req.public_key);
    req.signature_len = unhex(OPENSSL_SIG_HEX, req.signature);
    req.timestamp = T0;
    assert_int_equal(
        peer_idkey_verify_request(&req, "prov-1", T0 + 5, PEER_IDKEY_WINDOW, id, err, sizeof err),
        0);
    assert_string_equal(id, KEY_ID);
    assert_int_equal(
        peer_idkey_verify_request(&req, "prov-2", T0, PEER_IDKEY_WINDOW, id, err, sizeof err),
        -EBADMSG);
}

static json_t *token_secret(const char *label, const char *sha, const char *expires)
{
    json_t *o =
        json_pack("{s:{s:s, s:{}}, s:{}}", "metadata", "name", "peering-token-x", "labels", "data");
    char *b = NULL;

    if (label)
        json_object_set_new(json_object_get(json_object_get(o, "metadata"), "labels"),
                            "cliqo.io/peering-token", json_string(label));
    if (sha) {
        assert_int_equal(peer_base64_encode(sha, strlen(sha), &b), 0);
        json_object_set_new(json_object_get(o, "data"), "sha256", json_string(b));
        x_free(b);
    }
    if (expires) {
        assert_int_equal(peer_base64_encode(expires, strlen(expires), &b), 0);
        json_object_set_new(json_object_get(o, "data"), "expires", json_string(b));
        x_free(b);
    }
    return o;
}

#define TOK    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TOKSHA "a8ae6e6ee929abea3afcfc5258c8ccd6f85273e0d4626d26c7279f3250f77c8e"

static void test_token_secret(void **state)
{
    /* 2023-11-14T22:13:20Z is T0. */
    static const struct {
        const char *name, *label, *sha, *expires, *digest;
        int64_t now;
        int want;
    } cases[] = {
        {"valid", "single-use", TOKSHA, "2023-11-14T23:13:20Z", TOKSHA, T0, 0},
        {"valid, any token", "single-use", TOKSHA, "2023-11-14T23:13:20Z", NULL, T0, 0},
        {"expires this second", "single-use", TOKSHA, "2023-11-14T22:13:20Z", TOKSHA, T0,
         -EKEYEXPIRED},
        {"expired", "single-use", TOKSHA, "2023-11-14T22:13:19Z", TOKSHA, T0, -EKEYEXPIRED},
        {"expired, any token", "single-use", TOKSHA, "2020-01-01T00:00:00Z", NULL, T0,
         -EKEYEXPIRED},
        {"no expiry", "single-use", TOKSHA, NULL, TOKSHA, T0, -EKEYEXPIRED},
        {"bad expiry", "single-use", TOKSHA, "tomorrow", TOKSHA, T0, -EKEYEXPIRED},
        {"another token", "single-use", TOKSHA, "2023-11-14T23:13:20Z",
         "b8ae6e6ee929abea3afcfc5258c8ccd6f85273e0d4626d26c7279f3250f77c8e", T0, -ENOENT},
        {"no digest stored", "single-use", NULL, "2023-11-14T23:13:20Z", TOKSHA, T0, -ENOENT},
        {"a prefix of the digest", "single-use", "a8ae6e", "2023-11-14T23:13:20Z", TOKSHA, T0,
         -ENOENT},
        {"no label", NULL, TOKSHA, "2023-11-14T23:13:20Z", TOKSHA, T0, -ENOENT},
        {"other label", "shared", TOKSHA, "2023-11-14T23:13:20Z", TOKSHA, T0, -ENOENT},
    };
    char digest[PEER_TOKEN_DIGEST_LEN + 1];

    (void)state;
    assert_int_equal(peer_token_digest(TOK, digest), 0);
    assert_string_equal(digest, TOKSHA);
    assert_int_equal(peer_token_digest("abc", digest), -EINVAL);
    assert_true(peer_token_digest_equal(TOKSHA, TOKSHA));
    assert_false(peer_token_digest_equal(TOKSHA, "a8ae"));
    assert_false(peer_token_digest_equal("", ""));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *o = token_secret(cases[i].label, cases[i].sha, cases[i].expires);
        int64_t exp = -1;
        int r = peer_token_secret_check(o, cases[i].digest, cases[i].now, &exp);

        if (r != cases[i].want)
            fail_msg("%s: got %d, want %d", cases[i].name, r, cases[i].want);
        if (r == 0)
            assert_int_equal(exp, T0 + 3600);
        else
            assert_int_equal(exp, -1);
        json_decref(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message),      cmocka_unit_test(test_key),
        cmocka_unit_test(test_verify),       cmocka_unit_test(test_openssl_interop),
        cmocka_unit_test(test_token_secret),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
