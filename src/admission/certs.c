#include "admission/certs.h"
#include "admission/review.h"
#include "common/xalloc.h"
#include "peering/pki.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static int asn1_unix(const ASN1_TIME *t, int64_t *ret)
{
    struct tm tm;

    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return -EINVAL;
    *ret = (int64_t)timegm(&tm);
    return 0;
}

static int info_of(const X509 *x, struct adm_cert_info *ret)
{
    struct adm_cert_info i;

    if (asn1_unix(X509_get0_notBefore(x), &i.not_before) < 0 ||
        asn1_unix(X509_get0_notAfter(x), &i.not_after) < 0 || i.not_after <= i.not_before)
        return -EINVAL;
    *ret = i;
    return 0;
}

static X509 *read_cert(const char *pem, size_t len)
{
    BIO *bio;
    X509 *x;

    if (!pem || len == 0 || len > PEER_PKI_PEM_MAX)
        return NULL;
    bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio)
        return NULL;
    x = PEM_read_bio_X509(bio, NULL, no_password, NULL);
    BIO_free(bio);
    ERR_clear_error();
    return x;
}

static EVP_PKEY *read_key(const char *pem, size_t len)
{
    BIO *bio;
    EVP_PKEY *k;

    if (!pem || len == 0 || len > PEER_PKI_PEM_MAX)
        return NULL;
    bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio)
        return NULL;
    k = PEM_read_bio_PrivateKey(bio, NULL, no_password, NULL);
    BIO_free(bio);
    ERR_clear_error();
    return k;
}

int adm_cert_parse(const char *pem, size_t len, struct adm_cert_info *ret)
{
    X509 *x;
    int rc;

    if (len > PEER_PKI_PEM_MAX)
        return -E2BIG;
    x = read_cert(pem, len);
    if (!x)
        return -EINVAL;
    rc = info_of(x, ret);
    X509_free(x);
    return rc;
}

int adm_cert_ca_ok(const char *cert, size_t cert_len, const char *key, size_t key_len, int64_t now,
                   struct adm_cert_info *ret)
{
    X509 *x = read_cert(cert, cert_len);
    EVP_PKEY *k = read_key(key, key_len);
    struct adm_cert_info i;
    int rc = -EINVAL;

    if (!x || !k || info_of(x, &i) < 0)
        goto out;
    if (X509_check_ca(x) < 1 || X509_check_private_key(x, k) != 1)
        goto out;
    if (now < i.not_before || now >= i.not_after)
        goto out;
    *ret = i;
    rc = 0;
out:
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    return rc;
}

int adm_cert_list(const char *pem, size_t len, int64_t *not_after, char **ret_pems, size_t max)
{
    BIO *bio;
    int n = 0, rc = -EINVAL;

    if (len == 0)
        return 0;
    if (!pem || len > PEER_PKI_PEM_MAX * (ADM_MAX_PREVIOUS + 1))
        return -E2BIG;
    bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio)
        return -ENOMEM;
    for (;;) {
        char *name = NULL, *header = NULL;
        unsigned char *data = NULL;
        long dlen = 0;
        const unsigned char *p;
        X509 *x;
        struct adm_cert_info i;
        bool ok;

        if (PEM_read_bio(bio, &name, &header, &data, &dlen) != 1) {
            rc = ERR_GET_REASON(ERR_peek_last_error()) == PEM_R_NO_START_LINE ? n : -EINVAL;
            break;
        }
        p = data;
        x = strcmp(name, "CERTIFICATE") == 0 && (!header || !header[0]) ? d2i_X509(NULL, &p, dlen)
                                                                        : NULL;
        ok = x && p == data + dlen && info_of(x, &i) == 0;
        OPENSSL_free(name);
        OPENSSL_free(header);
        OPENSSL_free(data);
        if (ok && (size_t)n >= max) {
            X509_free(x);
            rc = -E2BIG;
            break;
        }
        if (ok && ret_pems) {
            int e = peer_pki_cert_pem(x, &ret_pems[n]);

            if (e < 0) {
                X509_free(x);
                rc = e;
                break;
            }
        }
        X509_free(x);
        if (!ok)
            break;
        if (not_after)
            not_after[n] = i.not_after;
        n++;
    }
    ERR_clear_error();
    BIO_free(bio);
    if (rc < 0 && ret_pems)
        for (int i = 0; i < n; i++) {
            x_free(ret_pems[i]);
            ret_pems[i] = NULL;
        }
    return rc;
}

/* The SANs of x as text ("10.0.0.1", "::1", "name.example"), at most max. */
static int sans_of(X509 *x, char out[][256], size_t max, size_t *ret_n)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    size_t n = 0;
    int rc = 0;

    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);

        if (n >= max) {
            rc = -E2BIG;
            break;
        }
        if (g->type == GEN_DNS) {
            const ASN1_STRING *s = g->d.dNSName;
            int l = ASN1_STRING_length(s);

            if (l <= 0 || l >= 256) {
                rc = -EINVAL;
                break;
            }
            memcpy(out[n], ASN1_STRING_get0_data(s), (size_t)l);
            out[n++][l] = '\0';
        } else if (g->type == GEN_IPADD) {
            const ASN1_OCTET_STRING *s = g->d.iPAddress;
            int l = ASN1_STRING_length(s);

            if ((l != 4 && l != 16) ||
                !inet_ntop(l == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(s), out[n], 256)) {
                rc = -EINVAL;
                break;
            }
            n++;
        } else {
            rc = -EINVAL;
            break;
        }
    }
    GENERAL_NAMES_free(gens);
    *ret_n = n;
    return rc;
}

/* An address in canonical text (as inet_ntop writes it), or the string itself. */
static void canonical(const char *s, char *buf, size_t size)
{
    unsigned char ip[16];

    if (inet_pton(AF_INET, s, ip) == 1)
        inet_ntop(AF_INET, ip, buf, (socklen_t)size);
    else if (inet_pton(AF_INET6, s, ip) == 1)
        inet_ntop(AF_INET6, ip, buf, (socklen_t)size);
    else
        snprintf(buf, size, "%s", s);
}

int adm_cert_serving_ok(const char *cert, size_t cert_len, const char *key, size_t key_len,
                        const char *ca, size_t ca_len, const char *const *sans, size_t nsans,
                        int64_t now, struct adm_cert_info *ret, char *err, size_t errlen)
{
    X509 *x = read_cert(cert, cert_len), *cx = read_cert(ca, ca_len);
    EVP_PKEY *k = read_key(key, key_len), *cak = NULL;
    struct adm_cert_info i;
    char have[ADM_MAX_SANS + 1][256];
    size_t nhave = 0;
    const char *why = NULL;
    int rc = -EINVAL;

    if (!x)
        why = "the serving certificate does not parse";
    else if (!k)
        why = "the serving key does not parse";
    else if (!cx)
        why = "the CA does not parse";
    else if (info_of(x, &i) < 0)
        why = "the serving certificate has no usable validity";
    else if (X509_check_private_key(x, k) != 1)
        why = "the serving certificate does not match its key";
    else if (!(cak = X509_get_pubkey(cx)) || X509_verify(x, cak) != 1 ||
             X509_check_issued(cx, x) != X509_V_OK)
        why = "the serving certificate is not signed by the current CA";
    else if (now < i.not_before || now >= i.not_after)
        why = "the serving certificate is not valid now";
    else if (sans_of(x, have, ADM_MAX_SANS + 1, &nhave) < 0 || nhave != nsans)
        why = "the serving certificate names other hosts";
    if (!why) {
        for (size_t w = 0; w < nsans && !why; w++) {
            char want[256];
            bool found = false;

            canonical(sans[w], want, sizeof(want));
            for (size_t h = 0; h < nhave && !found; h++)
                found = strcasecmp(have[h], want) == 0;
            if (!found)
                why = "the serving certificate names other hosts";
        }
    }
    if (why) {
        if (err && errlen)
            snprintf(err, errlen, "%s", why);
        goto out;
    }
    *ret = i;
    rc = 0;
out:
    ERR_clear_error();
    X509_free(x);
    X509_free(cx);
    EVP_PKEY_free(k);
    EVP_PKEY_free(cak);
    return rc;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The moment at 2/3 of a validity. */
static int64_t two_thirds(const struct adm_cert_info *i)
{
    return i->not_before + (i->not_after - i->not_before) / 3 * 2;
}

unsigned adm_cert_plan(const struct adm_cert_facts *f, int64_t *ret_next)
{
    unsigned acts = 0;
    int64_t next = INT64_MAX;

    if (!f->ca_ok) {
        if (ret_next)
            *ret_next = f->now;
        return ADM_CERT_NEW_CA | ADM_CERT_NEW_SERVING;
    }
    if (!f->next_ok) {
        if (f->force_ca || f->now >= two_thirds(&f->ca))
            acts |= ADM_CERT_START_ROTATION;
        else
            next = min64(next, two_thirds(&f->ca));
    } else if (f->next_published_s >= ADM_SETTLE_S) {
        acts |= ADM_CERT_PROMOTE | ADM_CERT_NEW_SERVING;
    } else if (f->next_published_s >= 0) {
        next = min64(next, f->now + ADM_SETTLE_S - f->next_published_s);
    }
    if (!(acts & ADM_CERT_PROMOTE)) {
        if (!f->serving_ok || f->force_serving || f->now >= two_thirds(&f->serving))
            acts |= ADM_CERT_NEW_SERVING;
        else
            next = min64(next, two_thirds(&f->serving));
    }
    for (size_t i = 0; i < f->nprevious && i < ADM_MAX_PREVIOUS; i++) {
        if (f->previous_not_after[i] <= f->now)
            acts |= ADM_CERT_PRUNE;
        else
            next = min64(next, f->previous_not_after[i]);
    }
    if (ret_next)
        *ret_next = acts ? f->now : next;
    return acts;
}
