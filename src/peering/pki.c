#include "peering/pki.h"
#include "common/errbuf.h"
#include "common/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define PKI_BACKDATE_SECONDS 300
#define PKI_CN_MAX           64 /* ub_common_name */

static const char pki_hex[] = "0123456789abcdef";

/* A message for an OpenSSL failure, with OpenSSL's last reason; clears OpenSSL's error queue. */
static int pki_ssl_fail(char *err, size_t errlen, int r, const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char reason[256];

    if (e) {
        ERR_error_string_n(e, reason, sizeof reason);
        errbuf_fmt(err, errlen, 0, "%s: %s", what, reason);
    } else {
        errbuf_fmt(err, errlen, 0, "%s", what);
    }
    ERR_clear_error();
    return r;
}

static int pki_no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

/* Copies a memory BIO's contents into a new NUL-terminated string. */
static int pki_bio_str(BIO *bio, char **ret)
{
    char *data = NULL, *s;
    long n = BIO_get_mem_data(bio, &data);

    if (n <= 0 || !data)
        return -EIO;
    s = x_malloc((size_t)n + 1);
    if (!s)
        return -ENOMEM;
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    *ret = s;
    return 0;
}

int peer_pki_cert_pem(X509 *x, char **ret)
{
    BIO *bio = BIO_new(BIO_s_mem());
    int r = -EIO;

    if (bio && PEM_write_bio_X509(bio, x) == 1)
        r = pki_bio_str(bio, ret);
    BIO_free(bio);
    return r;
}

int peer_pki_key_pem(EVP_PKEY *key, char **ret)
{
    BIO *bio = BIO_new(BIO_s_secmem()); /* wiped when freed */
    int r = -EIO;

    if (bio && PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) == 1)
        r = pki_bio_str(bio, ret);
    BIO_free(bio);
    return r;
}

/* The certificate and its key as PEM into *ret_cert_pem / *ret_key_pem (both or neither); `what`
 * names the pair in the error. */
static int pki_pair_pem(X509 *x, EVP_PKEY *key, char **ret_cert_pem, char **ret_key_pem,
                        const char *what, char *err, size_t errlen)
{
    char *cert_pem = NULL, *key_pem = NULL;
    int r = peer_pki_cert_pem(x, &cert_pem);

    if (r >= 0)
        r = peer_pki_key_pem(key, &key_pem);
    if (r < 0) {
        x_free(cert_pem);
        return pki_ssl_fail(err, errlen, r, what);
    }
    *ret_cert_pem = cert_pem;
    *ret_key_pem = key_pem;
    return 0;
}

static bool pki_cn_valid(const char *cn)
{
    size_t n;

    if (!cn)
        return false;
    n = strnlen(cn, PKI_CN_MAX + 1);
    if (n == 0 || n > PKI_CN_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)cn[i] < 0x20 || cn[i] == 0x7f)
            return false;
    return true;
}

/* A new certificate with a random positive 128-bit serial, subject CN, validity and key. */
static int pki_new_cert(const char *cn, EVP_PKEY *key, long days, X509 **ret)
{
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    X509 *x = X509_new();
    X509_NAME *name;
    int r = -EIO;

    if (!x)
        goto out;
    if (RAND_bytes(serial, sizeof serial) != 1)
        goto out;
    serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40); /* positive, full length */
    bn = BN_bin2bn(serial, sizeof serial, NULL);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
        goto out;
    if (X509_set_version(x, X509_VERSION_3) != 1)
        goto out;
    name = X509_get_subject_name(x);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                   0) != 1)
        goto out;
    if (!X509_gmtime_adj(X509_getm_notBefore(x), -PKI_BACKDATE_SECONDS))
        goto out;
    if (!X509_time_adj_ex(X509_getm_notAfter(x), (int)days, 0, NULL))
        goto out;
    if (X509_set_pubkey(x, key) != 1)
        goto out;
    *ret = x;
    x = NULL;
    r = 0;
out:
    BN_free(bn);
    X509_free(x);
    return r;
}

/* Adds an extension written in OpenSSL's configuration syntax (constant strings only). */
static int pki_add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;
    int ok;

    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return -EIO;
    ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok == 1 ? 0 : -EIO;
}

int peer_pki_ca_create(const char *common_name, unsigned years, char **ret_cert_pem,
                       char **ret_key_pem, char *err, size_t errlen)
{
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    int r;

    errbuf_clear(err, errlen);
    if (!pki_cn_valid(common_name))
        return errbuf_fmt(err, errlen, -EINVAL,
                          "CA common name must be 1 to %d printable characters", PKI_CN_MAX);
    if (years == 0 || years > PEER_PKI_MAX_YEARS)
        return errbuf_fmt(err, errlen, -EINVAL, "CA validity must be 1 to %d years",
                          PEER_PKI_MAX_YEARS);
    key = EVP_EC_gen("P-256");
    if (!key) {
        r = pki_ssl_fail(err, errlen, -EIO, "generating the CA key");
        goto out;
    }
    /* 365.25 days a year, rounded up. */
    r = pki_new_cert(common_name, key, (long)years * 365 + (years + 3) / 4, &x);
    if (r < 0 || X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
        pki_add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
        pki_add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
        pki_add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
        X509_sign(x, key, EVP_sha256()) <= 0) {
        r = pki_ssl_fail(err, errlen, -EIO, "building the CA certificate");
        goto out;
    }
    r = pki_pair_pem(x, key, ret_cert_pem, ret_key_pem, "writing the CA as PEM", err, errlen);
out:
    X509_free(x);
    EVP_PKEY_free(key);
    return r;
}

/* A DNS name for a SAN: labels of [A-Za-z0-9-], no '-' at either end, 1..63 each, 253 in all; an
 * optional leading "*." label. */
static bool pki_dns_valid(const char *s)
{
    size_t n = strnlen(s, 254), label = 0;

    if (n == 0 || n > 253)
        return false;
    if (s[0] == '*') {
        if (n < 3 || s[1] != '.')
            return false;
        s += 2;
        n -= 2;
    }
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? s[i] : '.';

        if (c == '.') {
            if (label == 0 || label > 63 || s[i - 1] == '-')
                return false;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   (c == '-' && label > 0)) {
            label++;
        } else {
            return false;
        }
    }
    return true;
}

static int pki_add_sans(X509 *x, const char *const *sans, size_t nsans, char *err, size_t errlen)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    int r = -EIO;

    if (!gens)
        goto out;
    for (size_t i = 0; i < nsans; i++) {
        unsigned char ip[16];
        GENERAL_NAME *gen;
        const char *s = sans[i];

        if (!s || !*s) {
            errbuf_fmt(err, errlen, 0, "SAN %zu is empty", i);
            r = -EINVAL;
            goto out;
        }
        gen = GENERAL_NAME_new();
        if (!gen)
            goto out;
        if (inet_pton(AF_INET, s, ip) == 1 || inet_pton(AF_INET6, s, ip) == 1) {
            ASN1_OCTET_STRING *o = ASN1_OCTET_STRING_new();
            int iplen = strchr(s, ':') ? 16 : 4;

            if (!o || ASN1_OCTET_STRING_set(o, ip, iplen) != 1) {
                ASN1_OCTET_STRING_free(o);
                GENERAL_NAME_free(gen);
                goto out;
            }
            GENERAL_NAME_set0_value(gen, GEN_IPADD, o);
        } else if (pki_dns_valid(s)) {
            ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();

            if (!ia5 || ASN1_STRING_set(ia5, s, (int)strlen(s)) != 1) {
                ASN1_IA5STRING_free(ia5);
                GENERAL_NAME_free(gen);
                goto out;
            }
            GENERAL_NAME_set0_value(gen, GEN_DNS, ia5);
        } else {
            GENERAL_NAME_free(gen);
            errbuf_fmt(err, errlen, 0, "SAN \"%.80s\" is neither an IP address nor a DNS name", s);
            r = -EINVAL;
            goto out;
        }
        if (!sk_GENERAL_NAME_push(gens, gen)) {
            GENERAL_NAME_free(gen);
            goto out;
        }
    }
    if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) != 1)
        goto out;
    r = 0;
out:
    GENERAL_NAMES_free(gens);
    return r;
}

/* Strictly parses exactly one PEM CERTIFICATE block (see pki.h). */
static int pki_parse_one_cert(const char *pem, size_t len, const char *what, X509 **ret, char *err,
                              size_t errlen)
{
    BIO *bio = NULL;
    char *name = NULL, *header = NULL, *name2 = NULL, *header2 = NULL;
    unsigned char *data = NULL, *data2 = NULL;
    const unsigned char *p;
    long dlen = 0, dlen2 = 0;
    X509 *x = NULL;
    int r = -EINVAL;

    if (!pem)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: missing", what);
    if (len > PEER_PKI_PEM_MAX)
        return errbuf_fmt(err, errlen, -E2BIG, "%s: over %u bytes", what, PEER_PKI_PEM_MAX);
    bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio) {
        r = -ENOMEM;
        goto out;
    }
    if (PEM_read_bio(bio, &name, &header, &data, &dlen) != 1) {
        ERR_clear_error();
        errbuf_fmt(err, errlen, 0, "%s: no PEM certificate found", what);
        goto out;
    }
    if (strcmp(name, "CERTIFICATE") != 0) {
        errbuf_fmt(err, errlen, 0, "%s: PEM block is \"%.40s\", not CERTIFICATE", what, name);
        goto out;
    }
    if (header && header[0]) {
        errbuf_fmt(err, errlen, 0, "%s: PEM block has headers", what);
        goto out;
    }
    p = data;
    x = d2i_X509(NULL, &p, dlen);
    if (!x || p != data + dlen) {
        ERR_clear_error();
        errbuf_fmt(err, errlen, 0, "%s: not a valid X.509 certificate", what);
        goto out;
    }
    if (PEM_read_bio(bio, &name2, &header2, &data2, &dlen2) == 1) {
        errbuf_fmt(err, errlen, 0, "%s: more than one PEM block", what);
        goto out;
    }
    if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE) {
        ERR_clear_error();
        errbuf_fmt(err, errlen, 0, "%s: malformed PEM after the certificate", what);
        goto out;
    }
    ERR_clear_error();
    *ret = x;
    x = NULL;
    r = 0;
out:
    X509_free(x);
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(data);
    OPENSSL_free(name2);
    OPENSSL_free(header2);
    OPENSSL_free(data2);
    BIO_free(bio);
    return r;
}

static int pki_parse_key(const char *pem, size_t len, EVP_PKEY **ret, char *err, size_t errlen)
{
    BIO *bio;
    EVP_PKEY *key;

    if (!pem)
        return errbuf_fmt(err, errlen, -EINVAL, "CA key: missing");
    if (len > PEER_PKI_PEM_MAX)
        return errbuf_fmt(err, errlen, -E2BIG, "CA key: over %u bytes", PEER_PKI_PEM_MAX);
    bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio)
        return -ENOMEM;
    /* No password callback: an encrypted key fails instead of prompting on a terminal. */
    key = PEM_read_bio_PrivateKey(bio, NULL, pki_no_password, NULL);
    BIO_free(bio);
    if (!key)
        return pki_ssl_fail(err, errlen, -EINVAL, "CA key: not a usable unencrypted PEM key");
    *ret = key;
    return 0;
}

int peer_pki_server_issue(const char *ca_cert_pem, size_t ca_cert_len, const char *ca_key_pem,
                          size_t ca_key_len, const char *common_name, const char *const *sans,
                          size_t nsans, unsigned days, char **ret_cert_pem, char **ret_key_pem,
                          char *err, size_t errlen)
{
    X509 *ca = NULL, *x = NULL;
    EVP_PKEY *ca_key = NULL, *key = NULL;
    int r, cmp;

    errbuf_clear(err, errlen);
    if (!pki_cn_valid(common_name))
        return errbuf_fmt(err, errlen, -EINVAL,
                          "server common name must be 1 to %d printable characters", PKI_CN_MAX);
    if (days == 0 || days > PEER_PKI_MAX_DAYS)
        return errbuf_fmt(err, errlen, -EINVAL, "server certificate validity must be 1 to %d days",
                          PEER_PKI_MAX_DAYS);
    if (nsans == 0 || nsans > PEER_PKI_MAX_SANS || !sans)
        return errbuf_fmt(err, errlen, -EINVAL, "a server certificate needs 1 to %d SANs",
                          PEER_PKI_MAX_SANS);
    r = pki_parse_one_cert(ca_cert_pem, ca_cert_len, "CA certificate", &ca, err, errlen);
    if (r < 0)
        goto out;
    r = pki_parse_key(ca_key_pem, ca_key_len, &ca_key, err, errlen);
    if (r < 0)
        goto out;
    if (X509_check_private_key(ca, ca_key) != 1) {
        r = pki_ssl_fail(err, errlen, -EINVAL, "CA key does not match the CA certificate");
        goto out;
    }
    if (X509_check_ca(ca) != 1) {
        ERR_clear_error();
        errbuf_fmt(err, errlen, 0, "CA certificate is not a CA (basicConstraints CA:TRUE)");
        r = -EINVAL;
        goto out;
    }
    key = EVP_EC_gen("P-256");
    if (!key) {
        r = pki_ssl_fail(err, errlen, -EIO, "generating the server key");
        goto out;
    }
    r = pki_new_cert(common_name, key, (long)days, &x);
    if (r < 0) {
        r = pki_ssl_fail(err, errlen, r, "building the server certificate");
        goto out;
    }
    /* Never outlive the CA. */
    cmp = ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(ca));
    if (cmp == -2 || (cmp > 0 && X509_set1_notAfter(x, X509_get0_notAfter(ca)) != 1)) {
        r = pki_ssl_fail(err, errlen, -EIO, "clamping the server certificate's validity");
        goto out;
    }
    r = pki_add_sans(x, sans, nsans, err, errlen);
    if (r == -EINVAL)
        goto out;
    if (r < 0 || X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
        pki_add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        pki_add_ext(x, ca, NID_key_usage, "critical,digitalSignature") < 0 ||
        pki_add_ext(x, ca, NID_ext_key_usage, "serverAuth") < 0 ||
        pki_add_ext(x, ca, NID_subject_key_identifier, "hash") < 0 ||
        pki_add_ext(x, ca, NID_authority_key_identifier, "keyid:always") < 0 ||
        X509_sign(x, ca_key, EVP_sha256()) <= 0) {
        r = pki_ssl_fail(err, errlen, -EIO, "building the server certificate");
        goto out;
    }
    r = pki_pair_pem(x, key, ret_cert_pem, ret_key_pem, "writing the server certificate as PEM",
                     err, errlen);
out:
    X509_free(x);
    X509_free(ca);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ca_key);
    ERR_clear_error();
    return r;
}

static int pki_spki_digest(X509 *x, unsigned char md[32])
{
    unsigned char *der = NULL;
    unsigned int mdlen = 0;
    int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
    int r = -EIO;

    if (n > 0 && EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL) == 1 && mdlen == 32)
        r = 0;
    OPENSSL_free(der);
    return r;
}

int peer_pki_ca_hash(const char *pem, size_t len, char ret[PEER_CA_HASH_LEN + 1], char *err,
                     size_t errlen)
{
    unsigned char md[32];
    char out[PEER_CA_HASH_LEN + 1];
    X509 *x = NULL;
    size_t o;
    int r;

    errbuf_clear(err, errlen);
    r = pki_parse_one_cert(pem, len, "CA certificate", &x, err, errlen);
    if (r < 0)
        return r;
    r = pki_spki_digest(x, md);
    X509_free(x);
    if (r < 0)
        return pki_ssl_fail(err, errlen, r, "hashing the CA public key");
    o = strlen(PEER_CA_HASH_PREFIX);
    memcpy(out, PEER_CA_HASH_PREFIX, o);
    for (size_t i = 0; i < sizeof md; i++) {
        out[o++] = pki_hex[md[i] >> 4];
        out[o++] = pki_hex[md[i] & 0x0f];
    }
    out[o] = '\0';
    memcpy(ret, out, sizeof out);
    return 0;
}

static int pki_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int peer_pki_hash_parse(const char *s, unsigned char ret_digest[32], char *err, size_t errlen)
{
    size_t plen = strlen(PEER_CA_HASH_PREFIX), n;
    unsigned char md[32];
    const char *h;

    errbuf_clear(err, errlen);
    if (!s || strncmp(s, PEER_CA_HASH_PREFIX, plen) != 0)
        return errbuf_fmt(err, errlen, -EINVAL, "CA cert hash must start with \"%s\"",
                          PEER_CA_HASH_PREFIX);
    h = s + plen;
    n = strnlen(h, 65);
    for (size_t i = 0; i < n; i++) {
        if (pki_hexval(h[i]) < 0) {
            unsigned char c = (unsigned char)h[i];

            if (c >= 0x21 && c < 0x7f)
                errbuf_fmt(err, errlen, 0, "CA cert hash: invalid character '%c' at position %zu",
                           c, plen + i + 1);
            else
                errbuf_fmt(err, errlen, 0, "CA cert hash: invalid byte 0x%02x at position %zu", c,
                           plen + i + 1);
            return -EINVAL;
        }
    }
    if (n != 64)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "CA cert hash: expected 64 hex digits after \"%s\", got %s%zu",
                          PEER_CA_HASH_PREFIX, n > 64 ? "more than " : "", n > 64 ? (size_t)64 : n);
    for (size_t i = 0; i < 32; i++)
        md[i] = (unsigned char)(pki_hexval(h[2 * i]) << 4 | pki_hexval(h[2 * i + 1]));
    memcpy(ret_digest, md, sizeof md);
    return 0;
}

int peer_pki_ca_match(const char *pem, size_t len, const char *hash, char *err, size_t errlen)
{
    unsigned char want[32], got[32];
    X509 *x = NULL;
    int r;

    r = peer_pki_hash_parse(hash, want, err, errlen);
    if (r < 0)
        return r;
    r = pki_parse_one_cert(pem, len, "CA certificate", &x, err, errlen);
    if (r < 0)
        return r;
    r = pki_spki_digest(x, got);
    X509_free(x);
    if (r < 0)
        return pki_ssl_fail(err, errlen, r, "hashing the CA public key");
    if (CRYPTO_memcmp(want, got, sizeof want) != 0)
        return errbuf_fmt(err, errlen, -EACCES, "CA certificate does not match the CA cert hash");
    return 0;
}
