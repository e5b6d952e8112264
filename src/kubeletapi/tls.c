/* TLS material of the kubelet API: server and client contexts, the client CA store, and the
 * authentication of client certificates (as the API server's x509 authenticator: chain to a CA of
 * the bundle, usable for client authentication, user = CN, groups = O). */
#include "kubeletapi/internal.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

static void ssl_err(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char buf[160] = "";

    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    if (err && errlen)
        snprintf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
    ERR_clear_error();
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    for (unsigned int i = 0; i < inlen;) {
        unsigned int n = in[i];

        if (i + 1 + n > inlen)
            break;
        if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = (unsigned char)n;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_NOACK; /* no ALPN: HTTP/1.1 all the same */
}

int kla__tls_server_ctx(const char *cert_pem, const char *key_pem, X509_STORE *ca_store,
                        STACK_OF(X509_NAME) * ca_names, SSL_CTX **ret, char *err, size_t errlen)
{
    SSL_CTX *ctx = NULL;
    BIO *b = NULL;
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    int r = -EINVAL;

    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        ssl_err(err, errlen, "cannot create a TLS context");
        return -ENOMEM;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    b = BIO_new_mem_buf(cert_pem, -1);
    if (!b || !(x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        ssl_err(err, errlen, "serving certificate: not a PEM certificate");
        goto out;
    }
    if (SSL_CTX_use_certificate(ctx, x) != 1) {
        ssl_err(err, errlen, "serving certificate");
        goto out;
    }
    X509_free(x);
    /* The rest of the chain, if any. */
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
            ssl_err(err, errlen, "serving certificate chain");
            goto out;
        }
        x = NULL;
    }
    ERR_clear_error();
    BIO_free(b);
    b = BIO_new_mem_buf(key_pem, -1);
    if (!b || !(key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL))) {
        ssl_err(err, errlen, "serving key: not a PEM private key");
        goto out;
    }
    if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        ssl_err(err, errlen, "serving key does not match the certificate");
        goto out;
    }
    /* A client certificate is optional (/healthz needs none, and a request without one is
     * answered 401), but one that is sent is verified in the handshake: chained to the client CA
     * bundle, valid now, usable for client authentication. A client with another CA's
     * certificate never gets to send a request head. */
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
    if (ca_store && SSL_CTX_set1_verify_cert_store(ctx, ca_store) != 1) {
        ssl_err(err, errlen, "client CA bundle");
        goto out;
    }
    if (ca_names) {
        STACK_OF(X509_NAME) *dup = SSL_dup_CA_list(ca_names);

        if (dup)
            SSL_CTX_set_client_CA_list(ctx, dup);
    }
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
    *ret = ctx;
    ctx = NULL;
    r = 0;
out:
    X509_free(x);
    EVP_PKEY_free(key);
    BIO_free(b);
    SSL_CTX_free(ctx);
    return r;
}

int kla__tls_ca_store(const char *pem, X509_STORE **ret_store, STACK_OF(X509_NAME) * *ret_names,
                      char *err, size_t errlen)
{
    X509_STORE *store = X509_STORE_new();
    STACK_OF(X509_NAME) *names = sk_X509_NAME_new_null();
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x;
    int n = 0, r = -EINVAL;

    ERR_clear_error();
    if (!store || !names || !b) {
        r = -ENOMEM;
        goto out;
    }
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        X509_NAME *nm = X509_NAME_dup(X509_get_subject_name(x));

        if (X509_STORE_add_cert(store, x) != 1 || !nm || !sk_X509_NAME_push(names, nm)) {
            X509_NAME_free(nm);
            X509_free(x);
            ssl_err(err, errlen, "client CA bundle");
            goto out;
        }
        X509_free(x);
        n++;
    }
    ERR_clear_error();
    if (n == 0) {
        if (err && errlen)
            snprintf(err, errlen, "client CA bundle: no PEM certificate in it");
        goto out;
    }
    *ret_store = store;
    *ret_names = names;
    store = NULL;
    names = NULL;
    r = 0;
out:
    BIO_free(b);
    X509_STORE_free(store);
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    return r;
}

int kla__tls_client_ctx(const unsigned char *ca_pem, size_t ca_len, const unsigned char *cert_pem,
                        size_t cert_len, const unsigned char *key_pem, size_t key_len,
                        SSL_CTX **ret, char *err, size_t errlen)
{
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    BIO *b = NULL;
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    int r = -EINVAL, n = 0;

    ERR_clear_error();
    if (!ctx)
        return -ENOMEM;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1);
    if (ca_pem && ca_len) {
        X509_STORE *st = SSL_CTX_get_cert_store(ctx);

        b = BIO_new_mem_buf(ca_pem, (int)ca_len);
        while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
            if (X509_STORE_add_cert(st, x) != 1) {
                ssl_err(err, errlen, "certificate authority");
                goto out;
            }
            X509_free(x);
            x = NULL;
            n++;
        }
        ERR_clear_error();
        BIO_free(b);
        b = NULL;
        if (n == 0) {
            if (err && errlen)
                snprintf(err, errlen, "certificate authority: no PEM certificate in it");
            goto out;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        ssl_err(err, errlen, "system trust store");
        goto out;
    }
    if (cert_pem && cert_len) {
        b = BIO_new_mem_buf(cert_pem, (int)cert_len);
        if (!b || !(x = PEM_read_bio_X509(b, NULL, NULL, NULL)) ||
            SSL_CTX_use_certificate(ctx, x) != 1) {
            ssl_err(err, errlen, "client certificate");
            goto out;
        }
        X509_free(x);
        x = NULL;
        while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
            if (SSL_CTX_add0_chain_cert(ctx, x) != 1)
                goto out;
            x = NULL;
        }
        ERR_clear_error();
        BIO_free(b);
        b = BIO_new_mem_buf(key_pem, (int)key_len);
        if (!b || !(key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) ||
            SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
            ssl_err(err, errlen, "client key");
            goto out;
        }
    }
    *ret = ctx;
    ctx = NULL;
    r = 0;
out:
    X509_free(x);
    EVP_PKEY_free(key);
    BIO_free(b);
    SSL_CTX_free(ctx);
    return r;
}

/* Copies an X509_NAME entry (UTF-8) into out; -E2BIG when too long, -EINVAL when it holds NUL. */
static int entry_text(X509_NAME_ENTRY *e, char *out, size_t size)
{
    unsigned char *utf8 = NULL;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(e)), r = 0;

    if (n < 0)
        return -EINVAL;
    if ((size_t)n >= size)
        r = -E2BIG;
    else if (memchr(utf8, '\0', (size_t)n))
        r = -EINVAL;
    else {
        memcpy(out, utf8, (size_t)n);
        out[n] = '\0';
    }
    OPENSSL_free(utf8);
    return r;
}

int kla__authenticate(X509_STORE *store, X509 *leaf, STACK_OF(X509) * chain, struct kla_user *u,
                      char *err, size_t errlen)
{
    X509_STORE_CTX *ctx;
    X509_NAME *subj;
    struct kla_user user;
    int i, ok, r;

    if (!leaf || !store) {
        if (err && errlen)
            snprintf(err, errlen, "no client certificate");
        return -EACCES;
    }
    ctx = X509_STORE_CTX_new();
    if (!ctx)
        return -ENOMEM;
    if (X509_STORE_CTX_init(ctx, store, leaf, chain) != 1) {
        X509_STORE_CTX_free(ctx);
        return -ENOMEM;
    }
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
    ok = X509_verify_cert(ctx);
    if (ok != 1) {
        if (err && errlen)
            snprintf(err, errlen, "client certificate: %s",
                     X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
        X509_STORE_CTX_free(ctx);
        ERR_clear_error();
        return -EACCES;
    }
    X509_STORE_CTX_free(ctx);
    memset(&user, 0, sizeof(user));
    subj = X509_get_subject_name(leaf);
    /* The last CN wins, as Go fills pkix.Name.CommonName. */
    for (i = -1; (i = X509_NAME_get_index_by_NID(subj, NID_commonName, i)) >= 0;) {
        r = entry_text(X509_NAME_get_entry(subj, i), user.name, sizeof(user.name));
        if (r < 0)
            goto bad;
    }
    if (!user.name[0]) {
        if (err && errlen)
            snprintf(err, errlen, "client certificate without a common name");
        return -EACCES;
    }
    for (i = -1; (i = X509_NAME_get_index_by_NID(subj, NID_organizationName, i)) >= 0;) {
        if (user.ngroups >= KLA_MAX_GROUPS) {
            r = -E2BIG;
            goto bad;
        }
        r = entry_text(X509_NAME_get_entry(subj, i), user.groups[user.ngroups],
                       sizeof(user.groups[0]));
        if (r < 0)
            goto bad;
        user.ngroups++;
    }
    *u = user;
    return 0;
bad:
    if (err && errlen)
        snprintf(err, errlen, "client certificate: unusable subject (%s)",
                 r == -E2BIG ? "too many or too long names" : "not UTF-8 text");
    return -EACCES;
}
