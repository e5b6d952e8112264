#include "peering/idkey.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "common/errbuf.h"
#include "common/xalloc.h"
#include "peering/identity.h"
#include "peering/pki.h"

/* True when key is an EC key on P-256. */
static bool idk_is_p256(EVP_PKEY *key)
{
    char group[32];
    size_t len = 0;

    if (!EVP_PKEY_is_a(key, "EC"))
        return false;
    if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                       &len) != 1)
        return false;
    return strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0;
}

int peer_idkey_generate(char **ret_pem)
{
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    int r;

    if (!key)
        return -EIO;
    r = peer_pki_key_pem(key, ret_pem);
    EVP_PKEY_free(key);
    return r;
}

int peer_idkey_load(const char *pem, size_t len, EVP_PKEY **ret, char *err, size_t errlen)
{
    EVP_PKEY *key = NULL;
    BIO *bio;

    errbuf_clear(err, errlen);
    if (!pem || !ret)
        return errbuf_fmt(err, errlen, -EINVAL, "no key");
    if (len > PEER_IDKEY_PEM_MAX)
        return errbuf_fmt(err, errlen, -E2BIG, "the key is over %u bytes", PEER_IDKEY_PEM_MAX);
    bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio)
        return -ENOMEM;
    key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!key)
        return errbuf_fmt(err, errlen, -EINVAL, "not a PEM private key");
    if (!idk_is_p256(key)) {
        EVP_PKEY_free(key);
        return errbuf_fmt(err, errlen, -EINVAL, "not an EC P-256 key");
    }
    *ret = key;
    return 0;
}

int peer_idkey_spki(EVP_PKEY *key, unsigned char *buf, size_t max, size_t *ret_len)
{
    unsigned char *der = NULL;
    int n;

    if (!key || !buf || !ret_len)
        return -EINVAL;
    n = i2d_PUBKEY(key, &der);
    if (n <= 0)
        return -EIO;
    if ((size_t)n > max) {
        OPENSSL_free(der);
        return -E2BIG;
    }
    memcpy(buf, der, (size_t)n);
    OPENSSL_free(der);
    *ret_len = (size_t)n;
    return 0;
}

int peer_idkey_id(const unsigned char *spki, size_t len, char ret[PEER_KEY_ID_LEN + 1])
{
    unsigned char md[SHA256_DIGEST_LENGTH];

    if (!spki || len == 0)
        return -EINVAL;
    if (!EVP_Digest(spki, len, md, NULL, EVP_sha256(), NULL))
        return -EIO;
    for (size_t i = 0; i < sizeof md; i++)
        snprintf(ret + 2 * i, 3, "%02x", md[i]);
    return 0;
}

bool peer_idkey_id_valid(const char *s)
{
    if (!s || strnlen(s, PEER_KEY_ID_LEN + 1) != PEER_KEY_ID_LEN)
        return false;
    return strspn(s, "0123456789abcdef") == PEER_KEY_ID_LEN;
}

int peer_idkey_message(const char *provider_id, const char *cluster_id, const char *cluster_name,
                       int64_t timestamp, const char *key_id, char *buf, size_t size)
{
    int n;

    if (!peer_cluster_id_valid(provider_id) || !peer_cluster_id_valid(cluster_id) ||
        !peer_cluster_name_valid(cluster_name) || !peer_idkey_id_valid(key_id) || timestamp < 0 ||
        timestamp > PEER_WIRE_TS_MAX || !buf)
        return -EINVAL;
    n = snprintf(buf, size, "%s\n%s\n%s\n%s\n%" PRId64 "\n%s\n", PEER_IDKEY_CONTEXT, provider_id,
                 cluster_id, cluster_name, timestamp, key_id);
    if (n < 0 || (size_t)n >= size)
        return -EINVAL;
    return n;
}

/* The public key of a request: P-256, and its DER exactly what i2d gives back (no trailing bytes,
 * no alternative encodings: the key ID is then a function of the key). */
static int idk_parse_public(const unsigned char *der, size_t len, EVP_PKEY **ret)
{
    const unsigned char *p = der;
    unsigned char *back = NULL;
    EVP_PKEY *key;
    int n, r = -EBADMSG;

    if (!der || len == 0 || len > PEER_WIRE_KEY_MAX)
        return -EBADMSG;
    key = d2i_PUBKEY(NULL, &p, (long)len);
    if (!key)
        return -EBADMSG;
    if (p != der + len || !idk_is_p256(key))
        goto out;
    n = i2d_PUBKEY(key, &back);
    if (n <= 0 || (size_t)n != len || memcmp(back, der, len) != 0)
        goto out;
    *ret = key;
    key = NULL;
    r = 0;
out:
    OPENSSL_free(back);
    EVP_PKEY_free(key);
    return r;
}

int peer_idkey_sign_request(EVP_PKEY *key, const char *provider_id, int64_t now,
                            struct peer_identity_request *req)
{
    unsigned char spki[PEER_WIRE_KEY_MAX], sig[PEER_WIRE_SIG_MAX + 64];
    char key_id[PEER_KEY_ID_LEN + 1], msg[PEER_IDKEY_MSG_MAX];
    size_t spki_len = 0, sig_len = sizeof sig;
    EVP_MD_CTX *ctx = NULL;
    int n, r;

    if (!key || !req)
        return -EINVAL;
    r = peer_idkey_spki(key, spki, sizeof spki, &spki_len);
    if (r < 0)
        return r;
    r = peer_idkey_id(spki, spki_len, key_id);
    if (r < 0)
        return r;
    n = peer_idkey_message(provider_id, req->cluster_id, req->cluster_name, now, key_id, msg,
                           sizeof msg);
    if (n < 0)
        return n;
    ctx = EVP_MD_CTX_new();
    if (!ctx)
        return -ENOMEM;
    r = -EIO;
    if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
        EVP_DigestSign(ctx, sig, &sig_len, (const unsigned char *)msg, (size_t)n) != 1 ||
        sig_len > PEER_WIRE_SIG_MAX)
        goto out;
    memcpy(req->public_key, spki, spki_len);
    req->public_key_len = spki_len;
    memcpy(req->signature, sig, sig_len);
    req->signature_len = sig_len;
    req->timestamp = now;
    r = 0;
out:
    EVP_MD_CTX_free(ctx);
    return r;
}

int peer_idkey_verify_request(const struct peer_identity_request *req, const char *provider_id,
                              int64_t now, int64_t window, char ret_key_id[PEER_KEY_ID_LEN + 1],
                              char *err, size_t errlen)
{
    char key_id[PEER_KEY_ID_LEN + 1], msg[PEER_IDKEY_MSG_MAX];
    EVP_MD_CTX *ctx = NULL;
    EVP_PKEY *key = NULL;
    int n, r;

    errbuf_clear(err, errlen);
    if (!req || !provider_id || window < 0)
        return errbuf_fmt(err, errlen, -EINVAL, "bad argument");
    r = idk_parse_public(req->public_key, req->public_key_len, &key);
    if (r < 0)
        return errbuf_fmt(err, errlen, r,
                          "field \"publicKey\" is not an EC P-256 public key (DER "
                          "SubjectPublicKeyInfo)");
    if (req->timestamp < now - window || req->timestamp > now + window) {
        int64_t d = req->timestamp - now;

        r = errbuf_fmt(err, errlen, -ETIME,
                       "field \"timestamp\" is %" PRId64
                       " s %s this cluster's clock (at most %" PRId64
                       " s allowed; are the clocks synchronised?)",
                       d < 0 ? -d : d, d < 0 ? "behind" : "ahead of", window);
        goto out;
    }
    r = peer_idkey_id(req->public_key, req->public_key_len, key_id);
    if (r < 0)
        goto out;
    n = peer_idkey_message(provider_id, req->cluster_id, req->cluster_name, req->timestamp, key_id,
                           msg, sizeof msg);
    if (n < 0) {
        r = errbuf_fmt(err, errlen, -EINVAL, "the request's fields are not valid");
        goto out;
    }
    ctx = EVP_MD_CTX_new();
    if (!ctx) {
        r = -ENOMEM;
        goto out;
    }
    if (EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) != 1) {
        r = errbuf_fmt(err, errlen, -EIO, "cannot verify");
        goto out;
    }
    if (req->signature_len == 0 || EVP_DigestVerify(ctx, req->signature, req->signature_len,
                                                    (const unsigned char *)msg, (size_t)n) != 1) {
        r = errbuf_fmt(err, errlen, -EBADMSG,
                       "field \"signature\" does not verify with the key sent, for this provider, "
                       "cluster ID, name and timestamp");
        goto out;
    }
    memcpy(ret_key_id, key_id, sizeof key_id);
    r = 0;
out:
    ERR_clear_error();
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    return r;
}
