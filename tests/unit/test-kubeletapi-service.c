/* Unit tests of kla_service (src/kubeletapi/service.c), the kubelet API as the agent and the
 * standalone virtual kubelet run it:
 *  - its pure parts, table-driven: kla_service_label, kla_service_renew_ms, kla_service_check;
 *  - the whole service against a fake API server (src/httpd, plain HTTP on loopback) that plays
 *    the certificates API with a CA of the test's own, the client CA ConfigMap (list and watch)
 *    and SubjectAccessReviews: the CertificateSigningRequest it sends (signer, usages, subject,
 *    SAN, our key), its approval, the wait for the certificate, then a TLS client (a thread with
 *    blocking OpenSSL) checks that the listener serves exactly the issued certificate and
 *    authenticates callers with the ConfigMap's CA, and again after the ConfigMap changed; a
 *    denied request is retried with a new one; closing with a request in flight is clean. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "httpd/httpd.h"
#include "kube/api.h"
#include "kubeletapi/service.h"
#include "peering/pki.h"

/* ---- pure parts ---------------------------------------------------------------------------- */

static void test_label(void **state)
{
    static const struct {
        const char *in;
        size_t size;
        const char *want;
    } cases[] = {
        {"agent-1", 64, "agent-1"},
        {"Host_123", 64, "host-123"},
        {"cliqo-agent-7d9f8b-xk2p", 64, "cliqo-agent-7d9f8b-xk2p"},
        {"--a..b--", 64, "a-b"},
        {"a__B", 64, "a-b"},
        {"", 64, "cliqo"},
        {"___", 64, "cliqo"},
        {"ÄÖ", 64, "cliqo"},
        {"x.y.z", 64, "x-y-z"},
        {"abcdefgh", 5, "abcd"},
        {"abc-defgh", 5, "abc"}, /* cut on a '-': no trailing '-' */
        {"a", 2, "a"},
        {"", 3, "cl"},
        /* never more than 63 characters, whatever the buffer */
        {"0123456789012345678901234567890123456789012345678901234567890123456789", 128,
         "012345678901234567890123456789012345678901234567890123456789012"},
        {"cliqo-my-agent-identity-that-is-long-enough-to-be-cut", 41,
         "cliqo-my-agent-identity-that-is-long-eno"},
    };
    char buf[128];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(buf, 'X', sizeof(buf));
        kla_service_label(cases[i].in, buf, cases[i].size);
        assert_string_equal(buf, cases[i].want);
        assert_true(strlen(buf) < cases[i].size);
        assert_true(strlen(buf) <= 63);
    }
    memset(buf, 'X', sizeof(buf));
    kla_service_label("abc", buf, 0); /* nothing written */
    assert_int_equal(buf[0], 'X');
}

static void test_renew(void **state)
{
    static const struct {
        int64_t nb, na, now;
        uint64_t want;
    } cases[] = {
        /* one year from the controller-manager's signer, backdated 5 minutes: 2/3 of the life */
        {1000000 - 300, 1000000 - 300 + 31536000, 1000000, (21024000 - 300) * UINT64_C(1000)},
        {0, 3000, 0, 2000000},      /* 2/3 of 3000 s */
        {0, 3000, 1000, 1000000},   /* a third of the life gone */
        {0, 3000, 1939, 61000},     /* just above the minimum */
        {0, 3000, 1940, 60000},     /* exactly a minute: the minimum */
        {0, 3000, 1990, 60000},     /* less than a minute to the renewal point */
        {0, 3000, 2500, 60000},     /* past it */
        {0, 3000, 3000, 60000},     /* expired */
        {0, 3000, 9999, 60000},     /* long expired */
        {3000, 3000, 0, 60000},     /* empty validity */
        {3000, 1000, 0, 60000},     /* inverted */
        {-3000, 0, -3000, 2000000}, /* before the epoch */
        {0, 90, 0, 60000},          /* a life of 90 s: renewed after a minute anyway */
        {0, INT64_C(100) * 365 * 86400, 0, INT64_C(400) * 86400 * 1000}, /* capped at 400 days */
        {INT64_MIN, INT64_MAX, 0, INT64_C(400) * 86400 * 1000},          /* no overflow */
        {INT64_MIN, INT64_MAX, INT64_MAX - 1, 60000},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t got = kla_service_renew_ms(cases[i].nb, cases[i].na, cases[i].now);

        if (got != cases[i].want)
            fail_msg("case %zu: %llu ms, want %llu", i, (unsigned long long)got,
                     (unsigned long long)cases[i].want);
    }
}

static void test_check(void **state)
{
    static char big[(256u << 10) + 2];
    static const struct {
        struct kla_service_options o;
        const char *err; /* NULL: valid; else a part of the message */
    } cases[] = {
        {{"127.0.0.1:10250", "127.0.0.1", "cliqo-a", NULL, NULL}, NULL},
        {{":10250", "10.0.0.7", "cliqo-a", NULL, NULL}, NULL},
        {{"[::1]:10250", "fd00::7", "cliqo-a", NULL, NULL}, NULL},
        {{"0.0.0.0:0", "node-1.example.org", "n", NULL, NULL}, NULL},
        {{"127.0.0.1:10250", "127.0.0.1",
          "a23456789012345678901234567890123456789012345678901234567890123", NULL, NULL},
         NULL},
        {{"127.0.0.1:10250", "127.0.0.1", "cliqo-a", "CERT", "KEY"}, NULL},
        {{NULL, "127.0.0.1", "cliqo-a", NULL, NULL}, "listen address ''"},
        {{"127.0.0.1", "127.0.0.1", "cliqo-a", NULL, NULL}, "listen address '127.0.0.1'"},
        {{"127.0.0.1:99999", "127.0.0.1", "cliqo-a", NULL, NULL}, "listen address"},
        {{"nohost:1", "127.0.0.1", "cliqo-a", NULL, NULL}, "listen address"},
        {{":10250", NULL, "cliqo-a", NULL, NULL}, "node address ''"},
        {{":10250", "", "cliqo-a", NULL, NULL}, "node address"},
        {{":10250", "a,b", "cliqo-a", NULL, NULL}, "node address 'a,b'"},
        {{":10250", "host:1", "cliqo-a", NULL, NULL}, "node address"},
        {{":10250", "-a.b", "cliqo-a", NULL, NULL}, "node address"},
        {{":10250", "a-.b", "cliqo-a", NULL, NULL}, "node address"},
        {{":10250", "a..b", "cliqo-a", NULL, NULL}, "node address"},
        {{":10250", "a.b.", "cliqo-a", NULL, NULL}, "node address"},
        {{":10250", "IP:1.2.3.4", "cliqo-a", NULL, NULL}, "node address"},
        {{":10250", "1.2.3.4/24", "cliqo-a", NULL, NULL}, "node address"},
        {{":10250", "127.0.0.1", NULL, NULL, NULL}, "name ''"},
        {{":10250", "127.0.0.1", "", NULL, NULL}, "name ''"},
        {{":10250", "127.0.0.1", "Cliqo", NULL, NULL}, "name 'Cliqo'"},
        {{":10250", "127.0.0.1", "a.b", NULL, NULL}, "name"},
        {{":10250", "127.0.0.1", "a234567890123456789012345678901234567890123456789012345678901234",
          NULL, NULL},
         "name 'a2345"},
        {{":10250", "127.0.0.1", "cliqo-a", "CERT", NULL}, "both or neither"},
        {{":10250", "127.0.0.1", "cliqo-a", NULL, "KEY"}, "both or neither"},
        {{":10250", "127.0.0.1", "cliqo-a", big, "KEY"}, "larger than 262144"},
    };
    char err[256];
    char label[300];

    (void)state;
    memset(big, 'A', sizeof(big) - 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int r;

        err[0] = '\0';
        r = kla_service_check(&cases[i].o, err, sizeof(err));
        if (!cases[i].err) {
            if (r != 0)
                fail_msg("case %zu: refused: %s", i, err);
        } else if (r != -EINVAL || !strstr(err, cases[i].err)) {
            fail_msg("case %zu: %d '%s', want -EINVAL with '%s'", i, r, err, cases[i].err);
        }
    }
    assert_int_equal(kla_service_check(NULL, err, sizeof(err)), -EINVAL);
    /* a DNS name of 253 characters is a SAN; 254 is not; a label of 64 never */
    memset(label, 'a', sizeof(label));
    for (size_t i = 63; i < 253; i += 64)
        label[i] = '.';
    label[253] = '\0';
    {
        struct kla_service_options o = {":1", label, "n", NULL, NULL};

        assert_int_equal(kla_service_check(&o, err, sizeof(err)), 0);
        label[253] = 'a';
        label[254] = '\0';
        assert_int_equal(kla_service_check(&o, err, sizeof(err)), -EINVAL);
        memset(label, 'a', 64);
        label[64] = '\0';
        assert_int_equal(kla_service_check(&o, err, sizeof(err)), -EINVAL);
        label[63] = '\0';
        assert_int_equal(kla_service_check(&o, err, sizeof(err)), 0);
    }
}

/* ---- a CA of the test's own ---------------------------------------------------------------- */

static X509 *make_ca(EVP_PKEY *key, const char *cn)
{
    X509 *x = X509_new();
    X509_NAME *n = X509_NAME_new();
    X509V3_CTX ctx;
    X509_EXTENSION *e;

    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    X509_set_subject_name(x, n);
    X509_set_issuer_name(x, n);
    X509_set_pubkey(x, key);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    e = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    X509_sign(x, key, EVP_sha256());
    X509_NAME_free(n);
    return x;
}

static char *pem_x509(X509 *x)
{
    char *s = NULL;

    assert_int_equal(peer_pki_cert_pem(x, &s), 0);
    return s;
}

static char *pem_pkey(EVP_PKEY *k)
{
    char *s = NULL;

    assert_int_equal(peer_pki_key_pem(k, &s), 0);
    return s;
}

/* Signs a certificate for subject/key (from a request, or a fresh client one) with the CA. */
static X509 *sign_with(X509 *ca, EVP_PKEY *ca_key, X509_NAME *subject, EVP_PKEY *key,
                       STACK_OF(X509_EXTENSION) * exts, const char *eku, long life)
{
    X509 *x = X509_new();
    X509V3_CTX ctx;
    X509_EXTENSION *e;
    static long serial = 100;

    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -300);
    X509_gmtime_adj(X509_getm_notAfter(x), life);
    X509_set_subject_name(x, subject);
    X509_set_issuer_name(x, X509_get_subject_name(ca));
    X509_set_pubkey(x, key);
    for (int i = 0; exts && i < sk_X509_EXTENSION_num(exts); i++)
        X509_add_ext(x, sk_X509_EXTENSION_value(exts, i), -1);
    X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
    e = X509V3_EXT_conf_nid(NULL, &ctx, NID_ext_key_usage, eku);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    X509_sign(x, ca_key, EVP_sha256());
    return x;
}

/* ---- the fake API server ------------------------------------------------------------------- */

#define MAX_CSRS 4

static struct {
    uv_loop_t loop;
    struct httpd_server *h;
    EVP_PKEY *ca_key, *other_key;
    X509 *ca, *other;
    char *ca_pem, *other_pem;
    /* CertificateSigningRequests */
    int created, approvals, gets, reviews;
    json_t *csr[MAX_CSRS]; /* as created */
    bool approved[MAX_CSRS];
    char *issued[MAX_CSRS]; /* PEM */
    int deny_first;         /* deny the first N requests */
    int pending_gets;       /* answer the first N GETs without a certificate */
    bool hold_gets;         /* never answer GETs (closing with a request in flight) */
    struct httpd_request *held_get;
    /* the ConfigMap */
    const char *cm_ca;
    struct httpd_request *watch;
    int lists, watches;
    char rv[16];
} api;

static int csr_index(const char *path)
{
    const char *p = strrchr(path, '-');

    /* .../certificatesigningrequests/cliqo-kubelet-test-node-<i>[/approval] */
    return p && p[1] >= '0' && p[1] < '0' + MAX_CSRS ? p[1] - '0' : -1;
}

static void respond_json(struct httpd_request *req, unsigned status, json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);

    httpd_respond(req, status, "application/json", s, strlen(s));
    free(s);
}

static json_t *csr_object(int i)
{
    json_t *o = json_deep_copy(api.csr[i]), *conds = json_array(), *st = json_object();

    if (i < api.deny_first)
        json_array_append_new(conds, json_pack("{s:s,s:s,s:s}", "type", "Denied", "status", "True",
                                               "message", "not today"));
    else if (api.approved[i])
        json_array_append_new(conds, json_pack("{s:s,s:s}", "type", "Approved", "status", "True"));
    json_object_set_new(st, "conditions", conds);
    if (api.issued[i]) {
        char *b64 = malloc(4 * strlen(api.issued[i]) / 3 + 8);

        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)api.issued[i],
                        (int)strlen(api.issued[i]));
        json_object_set_new(st, "certificate", json_string(b64));
        free(b64);
    }
    json_object_set_new(o, "status", st);
    return o;
}

static void on_csr_create(struct httpd_request *req, void *data)
{
    size_t len;
    const char *body = httpd_req_body(req, &len);
    json_t *o = json_loadb(body, len, 0, NULL), *resp;
    char name[64];
    int i = api.created;

    (void)data;
    assert_non_null(o);
    assert_true(i < MAX_CSRS);
    api.created++;
    snprintf(name, sizeof(name), "%s%d",
             json_string_value(json_object_get(json_object_get(o, "metadata"), "generateName")), i);
    json_object_set_new(json_object_get(o, "metadata"), "name", json_string(name));
    api.csr[i] = o;
    resp = csr_object(i);
    respond_json(req, 201, resp);
    json_decref(resp);
}

static void on_csr_approve(struct httpd_request *req, void *data)
{
    size_t len;
    const char *body = httpd_req_body(req, &len);
    json_t *o = json_loadb(body, len, 0, NULL), *c;
    int i = csr_index(httpd_req_path(req));

    (void)data;
    assert_true(i >= 0 && i < api.created);
    assert_string_equal(httpd_req_method(req), "PUT");
    /* the approval names the request and carries the Approved condition */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(o, "metadata"), "name")),
        json_string_value(json_object_get(json_object_get(api.csr[i], "metadata"), "name")));
    c = json_array_get(json_object_get(json_object_get(o, "status"), "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "type")), "Approved");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "CliqoKubeletServing");
    api.approvals++;
    api.approved[i] = true;
    json_decref(o);
    o = csr_object(i);
    respond_json(req, 200, o);
    json_decref(o);
}

/* What the signer checks (kubernetes.io/kubelet-serving), and the certificate it issues. */
static void sign_request(int i)
{
    json_t *spec = json_object_get(api.csr[i], "spec"), *u;
    const char *b64 = json_string_value(json_object_get(spec, "request"));
    unsigned char *pem = malloc(strlen(b64));
    int n = EVP_DecodeBlock(pem, (const unsigned char *)b64, (int)strlen(b64));
    BIO *b;
    X509_REQ *req;
    EVP_PKEY *key;
    STACK_OF(X509_EXTENSION) * exts;
    GENERAL_NAMES *san;
    const GENERAL_NAME *g;
    X509_NAME *subj;
    char buf[256];
    X509 *x;
    size_t k;

    assert_true(n > 0);
    b = BIO_new_mem_buf(pem, n);
    req = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
    BIO_free(b);
    free(pem);
    assert_non_null(req);
    key = X509_REQ_get_pubkey(req);
    assert_int_equal(X509_REQ_verify(req, key), 1); /* signed with its key */
    assert_string_equal(json_string_value(json_object_get(spec, "signerName")),
                        "kubernetes.io/kubelet-serving");
    json_array_foreach(json_object_get(spec, "usages"), k, u)
    {
        static const char *want[] = {"digital signature", "key encipherment", "server auth"};

        assert_true(k < 3);
        assert_string_equal(json_string_value(u), want[k]);
    }
    assert_int_equal(json_array_size(json_object_get(spec, "usages")), 3);
    subj = X509_REQ_get_subject_name(req);
    assert_int_equal(X509_NAME_get_text_by_NID(subj, NID_commonName, buf, sizeof(buf)) > 0, 1);
    assert_string_equal(buf, "system:node:test-node");
    assert_int_equal(X509_NAME_get_text_by_NID(subj, NID_organizationName, buf, sizeof(buf)) > 0,
                     1);
    assert_string_equal(buf, "system:nodes");
    assert_int_equal(X509_NAME_entry_count(subj), 2);
    exts = X509_REQ_get_extensions(req);
    san = X509V3_get_d2i(exts, NID_subject_alt_name, NULL, NULL);
    assert_non_null(san);
    assert_int_equal(sk_GENERAL_NAME_num(san), 1);
    g = sk_GENERAL_NAME_value(san, 0);
    assert_int_equal(g->type, GEN_IPADD);
    assert_int_equal(ASN1_STRING_length(g->d.iPAddress), 4);
    assert_memory_equal(ASN1_STRING_get0_data(g->d.iPAddress), "\x7f\x00\x00\x01", 4);
    GENERAL_NAMES_free(san);
    x = sign_with(api.ca, api.ca_key, subj, key, exts, "serverAuth", 3600);
    api.issued[i] = pem_x509(x);
    X509_free(x);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    EVP_PKEY_free(key);
    X509_REQ_free(req);
}

static void on_held_get_abort(struct httpd_request *req, void *data)
{
    (void)req;
    (void)data;
    api.held_get = NULL;
}

static void on_csr_get(struct httpd_request *req, void *data)
{
    int i = csr_index(httpd_req_path(req));
    json_t *o;

    (void)data;
    assert_true(i >= 0 && i < api.created);
    api.gets++;
    if (api.hold_gets) {
        api.held_get = req;
        httpd_req_on_abort(req, on_held_get_abort, NULL);
        return;
    }
    if (api.approved[i] && i >= api.deny_first && !api.issued[i] && api.gets > api.pending_gets)
        sign_request(i);
    o = csr_object(i);
    respond_json(req, 200, o);
    json_decref(o);
}

static json_t *configmap(void)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "name", "extension-apiserver-authentication", "namespace",
                     "kube-system", "resourceVersion", api.rv, "data", "client-ca-file", api.cm_ca);
}

static void on_watch_abort(struct httpd_request *req, void *data)
{
    (void)req;
    (void)data;
    api.watch = NULL;
}

static void on_configmaps(struct httpd_request *req, void *data)
{
    const char *fs = httpd_req_query(req, "fieldSelector");
    json_t *o;

    (void)data;
    assert_non_null(fs);
    assert_string_equal(fs, "metadata.name=extension-apiserver-authentication");
    if (httpd_req_query(req, "watch")) {
        api.watches++;
        api.watch = req; /* answered when the ConfigMap changes */
        httpd_req_on_abort(req, on_watch_abort, NULL);
        return;
    }
    api.lists++;
    o = json_pack("{s:s,s:s,s:{s:s},s:[o]}", "apiVersion", "v1", "kind", "ConfigMapList",
                  "metadata", "resourceVersion", api.rv, "items", configmap());
    respond_json(req, 200, o);
    json_decref(o);
}

/* The ConfigMap changes: the held watch gets the event (and ends; the informer watches again). */
static void change_configmap(const char *ca)
{
    json_t *ev;
    char *s, *line;

    api.cm_ca = ca;
    snprintf(api.rv, sizeof(api.rv), "%d", atoi(api.rv) + 1);
    ev = json_pack("{s:s,s:o}", "type", "MODIFIED", "object", configmap());
    s = json_dumps(ev, JSON_COMPACT);
    line = malloc(strlen(s) + 2);
    sprintf(line, "%s\n", s);
    httpd_respond(api.watch, 200, "application/json", line, strlen(line));
    api.watch = NULL;
    free(line);
    free(s);
    json_decref(ev);
}

/* SubjectAccessReviews: users named "ok-..." may, others may not. */
static void on_review(struct httpd_request *req, void *data)
{
    size_t len;
    const char *body = httpd_req_body(req, &len);
    json_t *o = json_loadb(body, len, 0, NULL);
    const char *user = json_string_value(json_object_get(json_object_get(o, "spec"), "user"));
    bool ok = user && strncmp(user, "ok-", 3) == 0;
    char out[200];

    (void)data;
    api.reviews++;
    snprintf(out, sizeof(out),
             "{\"kind\":\"SubjectAccessReview\",\"status\":{\"allowed\":%s,\"reason\":\"test\"}}",
             ok ? "true" : "false");
    httpd_respond(req, 201, "application/json", out, strlen(out));
    json_decref(o);
}

static int fake_start(char *server, size_t size)
{
    static const char csrs[] = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    struct httpd_options ho = {.addr = "127.0.0.1:0", .handler_timeout_ms = 600000};
    char path[200], err[128];

    assert_int_equal(httpd_new(&api.loop, &ho, &api.h), 0);
    assert_int_equal(httpd_route(api.h, "POST", csrs, 65536, on_csr_create, NULL), 0);
    for (int i = 0; i < MAX_CSRS; i++) {
        snprintf(path, sizeof(path), "%s/cliqo-kubelet-test-node-%d", csrs, i);
        assert_int_equal(httpd_route(api.h, "GET", path, 0, on_csr_get, NULL), 0);
        snprintf(path, sizeof(path), "%s/cliqo-kubelet-test-node-%d/approval", csrs, i);
        assert_int_equal(httpd_route(api.h, "PUT", path, 65536, on_csr_approve, NULL), 0);
    }
    assert_int_equal(httpd_route(api.h, "GET", "/api/v1/namespaces/kube-system/configmaps", 0,
                                 on_configmaps, NULL),
                     0);
    assert_int_equal(httpd_route(api.h, "POST",
                                 "/apis/authorization.k8s.io/v1/subjectaccessreviews", 65536,
                                 on_review, NULL),
                     0);
    assert_int_equal(httpd_start(api.h, err, sizeof(err)), 0);
    snprintf(server, size, "http://127.0.0.1:%u", httpd_port(api.h));
    return 0;
}

/* ---- a blocking TLS client in a thread (the loop keeps serving meanwhile) ------------------- */

struct call {
    uint16_t port;
    const char *path;
    const char *cert, *key; /* PEM or NULL */
    /* results */
    int status;     /* HTTP status, -1 when TLS or the connection failed */
    char *peer_pem; /* the served certificate */
    long verify;    /* X509_V_OK when the served chain verified against the test CA for IP */
    char body[512];
    uv_async_t done;
    atomic_bool finished;
};

static void use_pem(SSL_CTX *ctx, const char *cert, const char *key)
{
    BIO *b = BIO_new_mem_buf(cert, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    EVP_PKEY *k;

    BIO_free(b);
    b = BIO_new_mem_buf(key, -1);
    k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    BIO_free(b);
    SSL_CTX_use_certificate(ctx, x);
    SSL_CTX_use_PrivateKey(ctx, k);
    X509_free(x);
    EVP_PKEY_free(k);
}

static void *client_thread(void *arg)
{
    struct call *c = arg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(c->port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char buf[4096], req[512];
    size_t got = 0;
    SSL *ssl = NULL;
    X509 *peer;
    int n;

    c->status = -1;
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), api.ca);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* checked below, to report it */
    X509_VERIFY_PARAM_set1_ip_asc(SSL_CTX_get0_param(ctx), "127.0.0.1");
    if (c->cert)
        use_pem(ctx, c->cert, c->key);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        goto out;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1)
        goto out;
    c->verify = SSL_get_verify_result(ssl);
    peer = SSL_get1_peer_certificate(ssl);
    if (peer) {
        c->peer_pem = pem_x509(peer);
        X509_free(peer);
    }
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
             c->path);
    if (SSL_write(ssl, req, (int)strlen(req)) <= 0)
        goto out;
    while (got < sizeof(buf) - 1 &&
           (n = SSL_read(ssl, buf + got, (int)(sizeof(buf) - 1 - got))) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    if (sscanf(buf, "HTTP/1.1 %d", &c->status) != 1)
        c->status = -1;
    {
        const char *b = strstr(buf, "\r\n\r\n");

        snprintf(c->body, sizeof(c->body), "%s", b ? b + 4 : "");
    }
out:
    if (ssl)
        SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    atomic_store(&c->finished, true);
    uv_async_send(&c->done);
    return NULL;
}

static void on_call_done(uv_async_t *a)
{
    (void)a;
}

static void call(struct call *c, uint16_t port, const char *path, const char *cert, const char *key)
{
    pthread_t th;

    memset(c, 0, sizeof(*c));
    c->port = port;
    c->path = path;
    c->cert = cert;
    c->key = key;
    c->verify = -1;
    uv_async_init(&api.loop, &c->done, on_call_done);
    assert_int_equal(pthread_create(&th, NULL, client_thread, c), 0);
    while (!atomic_load(&c->finished))
        uv_run(&api.loop, UV_RUN_ONCE);
    pthread_join(th, NULL);
    uv_close((uv_handle_t *)&c->done, NULL);
    uv_run(&api.loop, UV_RUN_NOWAIT);
}

static void run_until(bool (*cond)(struct kla_service *), struct kla_service *s, int max_ms)
{
    uint64_t end = uv_now(&api.loop) + (uint64_t)max_ms;
    uv_timer_t t;

    uv_timer_init(&api.loop, &t);
    while (!cond(s) && uv_now(&api.loop) < end) {
        uv_timer_start(&t, (uv_timer_cb)(void (*)(void))uv_stop, 50, 0);
        uv_run(&api.loop, UV_RUN_ONCE);
        uv_update_time(&api.loop);
    }
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&api.loop, UV_RUN_NOWAIT);
    assert_true(cond(s));
}

static bool is_listening(struct kla_service *s)
{
    struct kla_service_stats st;

    kla_service_stats(s, &st);
    return st.listening;
}

static bool has_watch(struct kla_service *s)
{
    (void)s;
    return api.watch != NULL;
}

static bool get_held(struct kla_service *s)
{
    (void)s;
    return api.held_get != NULL;
}

static void client_ident(X509 *ca, EVP_PKEY *ca_key, const char *cn, char **cert, char **key)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509_NAME *n = X509_NAME_new();
    X509 *x;

    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    x = sign_with(ca, ca_key, n, k, NULL, "clientAuth", 3600);
    *cert = pem_x509(x);
    *key = pem_pkey(k);
    X509_free(x);
    X509_NAME_free(n);
    EVP_PKEY_free(k);
}

static int setup_api(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    memset(&api, 0, sizeof(api));
    api.ca_key = EVP_EC_gen("P-256");
    api.other_key = EVP_EC_gen("P-256");
    api.ca = make_ca(api.ca_key, "test-cluster-ca");
    api.other = make_ca(api.other_key, "other-ca");
    api.ca_pem = pem_x509(api.ca);
    api.other_pem = pem_x509(api.other);
    api.cm_ca = api.ca_pem;
    snprintf(api.rv, sizeof(api.rv), "10");
    uv_loop_init(&api.loop);
    return 0;
}

static void closed_cb(void *data)
{
    *(bool *)data = true;
}

static int teardown_api(void **state)
{
    (void)state;
    httpd_close(api.h, NULL, NULL);
    while (uv_run(&api.loop, UV_RUN_NOWAIT))
        ;
    {
        uv_timer_t t;

        uv_timer_init(&api.loop, &t);
        uv_timer_start(&t, (uv_timer_cb)(void (*)(void))uv_stop, 100, 0);
        uv_run(&api.loop, UV_RUN_DEFAULT);
        uv_close((uv_handle_t *)&t, NULL);
        uv_run(&api.loop, UV_RUN_DEFAULT);
    }
    assert_int_equal(uv_loop_close(&api.loop), 0);
    for (int i = 0; i < MAX_CSRS; i++) {
        json_decref(api.csr[i]);
        free(api.issued[i]);
    }
    X509_free(api.ca);
    X509_free(api.other);
    EVP_PKEY_free(api.ca_key);
    EVP_PKEY_free(api.other_key);
    free(api.ca_pem);
    free(api.other_pem);
    return 0;
}

static void start_service(struct kla_service **s, struct kapi_client **c, struct kc_config *kc,
                          char *server, size_t size)
{
    struct kla_service_options o = {
        .listen_addr = "127.0.0.1:0", .node_address = "127.0.0.1", .name = "test-node"};

    fake_start(server, size);
    kc->server = server;
    kc->namespace = "default";
    assert_int_equal(kapi_client_new(&api.loop, kc, NULL, c), 0);
    assert_int_equal(kla_service_new(&api.loop, *c, &o, s), 0);
}

static void stop_service(struct kla_service *s, struct kapi_client *c)
{
    bool closed = false;

    kla_service_close(s, closed_cb, &closed);
    while (!closed)
        uv_run(&api.loop, UV_RUN_ONCE);
    kapi_client_close(c);
}

static void test_service(void **state)
{
    struct kc_config kc = {0};
    struct kapi_client *c;
    struct kla_service *s;
    struct kla_service_stats st;
    char server[64], *ok_cert, *ok_key, *no_cert, *no_key, *new_cert, *new_key;
    struct call r;
    int64_t now = (int64_t)time(NULL);

    (void)state;
    client_ident(api.ca, api.ca_key, "ok-alice", &ok_cert, &ok_key);
    client_ident(api.ca, api.ca_key, "nobody", &no_cert, &no_key);
    client_ident(api.other, api.other_key, "ok-bob", &new_cert, &new_key);
    api.pending_gets = 2; /* the signer takes a moment */
    start_service(&s, &c, &kc, server, sizeof(server));
    kla_service_stats(s, &st);
    assert_false(st.listening);
    run_until(is_listening, s, 10000);

    /* one request, approved by the service, polled until issued */
    assert_int_equal(api.created, 1);
    assert_int_equal(api.approvals, 1);
    assert_true(api.gets >= 3);
    assert_int_equal(api.lists, 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(api.csr[0], "metadata"), "generateName")),
        "cliqo-kubelet-test-node-");
    kla_service_stats(s, &st);
    assert_true(st.have_cert && st.have_ca);
    assert_int_equal(st.csrs, 1);
    assert_true(st.port > 0);
    assert_true(st.cert_expires >= now + 3590 && st.cert_expires <= now + 3610);

    /* the listener serves exactly the issued certificate, valid for 127.0.0.1 under the CA */
    call(&r, st.port, "/healthz", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok");
    assert_non_null(r.peer_pem);
    assert_string_equal(r.peer_pem, api.issued[0]);
    assert_int_equal(r.verify, X509_V_OK);
    free(r.peer_pem);

    /* callers authenticated with the ConfigMap's CA and authorised with a review */
    call(&r, st.port, "/containerLogs/ns/pod/c", NULL, NULL);
    assert_int_equal(r.status, 401);
    free(r.peer_pem);
    call(&r, st.port, "/containerLogs/ns/pod/c", ok_cert, ok_key);
    assert_int_equal(r.status, 404); /* no resolver: no pod is known */
    free(r.peer_pem);
    call(&r, st.port, "/containerLogs/ns/pod/c", no_cert, no_key);
    assert_int_equal(r.status, 403);
    free(r.peer_pem);
    call(&r, st.port, "/containerLogs/ns/pod/c", new_cert, new_key);
    assert_int_equal(r.status, -1); /* another CA: refused in the handshake, no HTTP answer */
    free(r.peer_pem);

    /* the ConfigMap changes: the next connections use its new CA */
    run_until(has_watch, s, 5000);
    change_configmap(api.other_pem);
    run_until(has_watch, s, 5000); /* the event was read and the informer watches again */
    call(&r, st.port, "/containerLogs/ns/pod/c", new_cert, new_key);
    assert_int_equal(r.status, 404);
    free(r.peer_pem);
    call(&r, st.port, "/containerLogs/ns/pod/c", ok_cert, ok_key);
    assert_int_equal(r.status, -1); /* the old CA is not trusted any more */
    free(r.peer_pem);
    /* a bundle that does not parse is ignored: the current one stays */
    change_configmap("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
    run_until(has_watch, s, 5000);
    call(&r, st.port, "/containerLogs/ns/pod/c", new_cert, new_key);
    assert_int_equal(r.status, 404);
    free(r.peer_pem);
    kla_service_stats(s, &st);
    assert_true(st.listening);
    assert_int_equal(st.csrs, 1);

    stop_service(s, c);
    free(ok_cert);
    free(ok_key);
    free(no_cert);
    free(no_key);
    free(new_cert);
    free(new_key);
}

static bool two_created(struct kla_service *s)
{
    (void)s;
    return api.created >= 2;
}

static void test_denied_then_close(void **state)
{
    struct kc_config kc = {0};
    struct kapi_client *c;
    struct kla_service *s;
    struct kla_service_stats st;
    char server[64];

    (void)state;
    api.deny_first = 1;
    start_service(&s, &c, &kc, server, sizeof(server));
    /* denied: a new key and request after the backoff (1 s +- 25%), which is issued */
    run_until(two_created, s, 5000);
    run_until(is_listening, s, 10000);
    kla_service_stats(s, &st);
    assert_int_equal(st.csrs, 2);
    assert_null(api.issued[0]);
    assert_non_null(api.issued[1]);
    {
        struct call r;

        call(&r, st.port, "/healthz", NULL, NULL);
        assert_int_equal(r.status, 200);
        assert_non_null(r.peer_pem);
        assert_string_equal(r.peer_pem, api.issued[1]);
        free(r.peer_pem);
    }
    stop_service(s, c);
}

static void test_close_in_flight(void **state)
{
    struct kc_config kc = {0};
    struct kapi_client *c;
    struct kla_service *s;
    char server[64];

    (void)state;
    api.hold_gets = true;
    start_service(&s, &c, &kc, server, sizeof(server));
    run_until(get_held, s, 5000);
    /* the service goes while its GET waits: its callback must not run (ASan would tell) */
    stop_service(s, c);
    assert_int_equal(api.gets, 1);
    assert_int_equal(api.created, 1);
}

static void test_new_errors(void **state)
{
    struct kc_config kc = {.server = "http://127.0.0.1:1", .namespace = "default"};
    struct kla_service_options o = {
        .listen_addr = "127.0.0.1:0", .node_address = "127.0.0.1", .name = "Bad_Name"};
    struct kapi_client *c;
    struct kla_service *s = NULL;

    (void)state;
    assert_int_equal(kapi_client_new(&api.loop, &kc, NULL, &c), 0);
    assert_int_equal(kla_service_new(&api.loop, c, &o, &s), -EINVAL);
    assert_null(s);
    o.name = "good";
    assert_int_equal(kla_service_new(NULL, c, &o, &s), -EINVAL);
    assert_int_equal(kla_service_new(&api.loop, NULL, &o, &s), -EINVAL);
    assert_int_equal(kla_service_new(&api.loop, c, NULL, &s), -EINVAL);
    o.cert_pem = "x";
    o.key_pem = "y"; /* given PEMs that do not parse */
    assert_int_equal(kla_service_new(&api.loop, c, &o, &s), -EINVAL);
    kla_service_close(NULL, NULL, NULL);
    kapi_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label),
        cmocka_unit_test(test_renew),
        cmocka_unit_test(test_check),
        cmocka_unit_test_setup_teardown(test_service, setup_api, teardown_api),
        cmocka_unit_test_setup_teardown(test_denied_then_close, setup_api, teardown_api),
        cmocka_unit_test_setup_teardown(test_close_in_flight, setup_api, teardown_api),
        cmocka_unit_test_setup_teardown(test_new_errors, setup_api, teardown_api),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
