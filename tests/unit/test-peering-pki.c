#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/xalloc.h"
#include "peering/pki.h"

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fail_msg("\"%s\" does not contain \"%s\"", (hay), (needle));                           \
    } while (0)

struct fixture {
    char dir[64];
    char *ca_cert, *ca_key, *cert, *key;
};

static const char *const sans[] = {"auth.cliqo.svc", "*.example.org", "127.0.0.1", "::1",
                                   "localhost",      "192.0.2.7"};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    char err[256];

    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/test-peering-pki.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    if (peer_pki_ca_create("cliqo-auth-ca", 10, &f->ca_cert, &f->ca_key, err, sizeof err) < 0)
        return -1;
    if (peer_pki_server_issue(f->ca_cert, strlen(f->ca_cert), f->ca_key, strlen(f->ca_key),
                              "cliqo-auth", sans, sizeof sans / sizeof sans[0], 365, &f->cert,
                              &f->key, err, sizeof err) < 0) {
        fprintf(stderr, "issue: %s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    nftw(f->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    x_free(f->ca_cert);
    x_free(f->ca_key);
    x_free(f->cert);
    x_free(f->key);
    free(f);
    return 0;
}

static void write_str(const struct fixture *f, const char *name, const char *data)
{
    char path[128];
    FILE *fp;

    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, strlen(data), fp), strlen(data));
    assert_int_equal(fclose(fp), 0);
}

/* Runs a shell command in the fixture's directory; returns its exit status, output in out. */
static int run(const struct fixture *f, char *out, size_t outlen, const char *fmt, ...)
{
    char cmd[1024], full[1200];
    va_list ap;
    FILE *p;
    size_t n;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "cd '%s' && { %s; } 2>&1", f->dir, cmd);
    p = popen(full, "r");
    assert_non_null(p);
    n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool have_openssl(void)
{
    return system("command -v openssl >/dev/null 2>&1") == 0;
}

static void test_openssl_cross_check(void **state)
{
    struct fixture *f = *state;
    static char out[16384];
    char hash[PEER_CA_HASH_LEN + 1], err[256];

    if (!have_openssl())
        skip();
    write_str(f, "ca.pem", f->ca_cert);
    write_str(f, "ca.key", f->ca_key);
    write_str(f, "server.pem", f->cert);
    write_str(f, "server.key", f->key);

    /* The hash is kubeadm's. */
    assert_int_equal(peer_pki_ca_hash(f->ca_cert, strlen(f->ca_cert), hash, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(strlen(hash), PEER_CA_HASH_LEN);
    assert_int_equal(run(f, out, sizeof out,
                         "openssl x509 -in ca.pem -pubkey -noout | openssl pkey -pubin -outform der"
                         " | sha256sum | cut -d' ' -f1"),
                     0);
    out[strcspn(out, "\n")] = '\0';
    assert_string_equal(hash + strlen(PEER_CA_HASH_PREFIX), out);

    /* The chain verifies, for TLS server use. */
    assert_int_equal(
        run(f, out, sizeof out, "openssl verify -CAfile ca.pem -purpose sslserver server.pem"), 0);
    assert_contains(out, "server.pem: OK");
    assert_int_equal(run(f, out, sizeof out,
                         "openssl verify -CAfile ca.pem -verify_hostname auth.cliqo.svc server.pem"
                         " && openssl verify -CAfile ca.pem -verify_ip ::1 server.pem"
                         " && openssl verify -CAfile ca.pem -verify_hostname x.example.org "
                         "server.pem"),
                     0);
    assert_int_not_equal(run(f, out, sizeof out,
                             "openssl verify -CAfile ca.pem -verify_hostname other.svc server.pem"),
                         0);

    /* Extensions of the server certificate. */
    assert_int_equal(run(f, out, sizeof out, "openssl x509 -in server.pem -noout -text"), 0);
    assert_contains(out, "DNS:auth.cliqo.svc");
    assert_contains(out, "DNS:*.example.org");
    assert_contains(out, "DNS:localhost");
    assert_contains(out, "IP Address:127.0.0.1");
    assert_contains(out, "IP Address:0:0:0:0:0:0:0:1");
    assert_contains(out, "IP Address:192.0.2.7");
    assert_contains(out, "TLS Web Server Authentication");
    assert_contains(out, "CA:FALSE");
    assert_contains(out, "Digital Signature");
    assert_contains(out, "X509v3 Authority Key Identifier");
    assert_contains(out, "X509v3 Subject Key Identifier");
    assert_contains(out, "Subject: CN = cliqo-auth");
    assert_contains(out, "Issuer: CN = cliqo-auth-ca");
    assert_contains(out, "ecdsa-with-SHA256");
    assert_contains(out, "NIST CURVE: P-256");

    /* Extensions of the CA. */
    assert_int_equal(run(f, out, sizeof out, "openssl x509 -in ca.pem -noout -text"), 0);
    assert_contains(out, "X509v3 Basic Constraints: critical");
    assert_contains(out, "CA:TRUE");
    assert_contains(out, "X509v3 Key Usage: critical");
    assert_contains(out, "Certificate Sign, CRL Sign");
    assert_contains(out, "X509v3 Subject Key Identifier");
    assert_contains(out, "Subject: CN = cliqo-auth-ca");
    assert_contains(out, "NIST CURVE: P-256");

    /* The keys belong to the certificates; the CA verifies itself. */
    assert_int_equal(run(f, out, sizeof out,
                         "test \"$(openssl pkey -in server.key -pubout)\" = "
                         "\"$(openssl x509 -in server.pem -pubkey -noout)\" && "
                         "test \"$(openssl pkey -in ca.key -pubout)\" = "
                         "\"$(openssl x509 -in ca.pem -pubkey -noout)\" && "
                         "openssl verify -CAfile ca.pem ca.pem"),
                     0);
    assert_contains(f->key, "-----BEGIN PRIVATE KEY-----");
}

static time_t not_after(const char *pem)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    struct tm tm;

    assert_non_null(x);
    assert_int_equal(ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm), 1);
    X509_free(x);
    BIO_free(bio);
    return timegm(&tm);
}

static void test_validity(void **state)
{
    struct fixture *f = *state;
    char *ca = NULL, *cakey = NULL, *cert = NULL, *key = NULL, err[256];
    const char *one[] = {"a.example"};
    time_t now = time(NULL);

    /* 10 years of CA, 365 days of server. */
    assert_true(labs((long)(not_after(f->ca_cert) - now - 3653L * 86400)) < 600);
    assert_true(labs((long)(not_after(f->cert) - now - 365L * 86400)) < 600);

    /* A server certificate never outlives its CA. */
    assert_int_equal(peer_pki_ca_create("short", 1, &ca, &cakey, err, sizeof err), 0);
    assert_int_equal(peer_pki_server_issue(ca, strlen(ca), cakey, strlen(cakey), "s", one, 1, 3650,
                                           &cert, &key, err, sizeof err),
                     0);
    assert_int_equal(not_after(cert), not_after(ca));
    x_free(ca);
    x_free(cakey);
    x_free(cert);
    x_free(key);
}

static void test_issue_errors(void **state)
{
    struct fixture *f = *state;
    char *cert = (char *)"untouched", *key = (char *)"untouched", err[256];
    char *ca2 = NULL, *ca2key = NULL;
    const char *one[] = {"a.example"};
    size_t cl = strlen(f->ca_cert), kl = strlen(f->ca_key);
    static const char *const bad_sans[] = {
        "",      "a,b",       "IP:1.2.3.4", "-a.example", "a-.example", "a..b",  "a.example.",
        "[::1]", "1.2.3.4/8", "a b",        "*",          "*.",         "a.*.b", "x\nDNS:evil",
    };

    (void)state;
    for (size_t i = 0; i < sizeof bad_sans / sizeof bad_sans[0]; i++) {
        const char *s[] = {"ok.example", bad_sans[i]};

        assert_int_equal(peer_pki_server_issue(f->ca_cert, cl, f->ca_key, kl, "x", s, 2, 10, &cert,
                                               &key, err, sizeof err),
                         -EINVAL);
        assert_contains(err, "SAN");
    }
    assert_int_equal(peer_pki_server_issue(f->ca_cert, cl, f->ca_key, kl, "x", one, 0, 10, &cert,
                                           &key, err, sizeof err),
                     -EINVAL);
    assert_int_equal(peer_pki_server_issue(f->ca_cert, cl, f->ca_key, kl, "", one, 1, 10, &cert,
                                           &key, err, sizeof err),
                     -EINVAL);
    assert_int_equal(peer_pki_server_issue(f->ca_cert, cl, f->ca_key, kl, "x", one, 1, 0, &cert,
                                           &key, err, sizeof err),
                     -EINVAL);
    /* The server certificate is not a CA. */
    assert_int_equal(peer_pki_server_issue(f->cert, strlen(f->cert), f->key, strlen(f->key), "x",
                                           one, 1, 10, &cert, &key, err, sizeof err),
                     -EINVAL);
    assert_contains(err, "not a CA");
    /* Key of another CA. */
    assert_int_equal(peer_pki_ca_create("other", 1, &ca2, &ca2key, err, sizeof err), 0);
    assert_int_equal(peer_pki_server_issue(f->ca_cert, cl, ca2key, strlen(ca2key), "x", one, 1, 10,
                                           &cert, &key, err, sizeof err),
                     -EINVAL);
    assert_contains(err, "does not match");
    /* Not a key, not a certificate. */
    assert_int_equal(peer_pki_server_issue(f->ca_cert, cl, f->ca_cert, cl, "x", one, 1, 10, &cert,
                                           &key, err, sizeof err),
                     -EINVAL);
    assert_int_equal(peer_pki_server_issue(f->ca_key, kl, f->ca_key, kl, "x", one, 1, 10, &cert,
                                           &key, err, sizeof err),
                     -EINVAL);
    assert_contains(err, "not CERTIFICATE");
    assert_int_equal(peer_pki_ca_create("", 1, &ca2, &ca2key, err, sizeof err), -EINVAL);
    assert_int_equal(peer_pki_ca_create("x", 0, &ca2, &ca2key, err, sizeof err), -EINVAL);
    assert_int_equal(
        peer_pki_ca_create("x", PEER_PKI_MAX_YEARS + 1, &ca2, &ca2key, err, sizeof err), -EINVAL);
    assert_string_equal(cert, "untouched");
    assert_string_equal(key, "untouched");
    x_free(ca2);
    x_free(ca2key);
}

static void test_encrypted_key_refused(void **state)
{
    struct fixture *f = *state;
    static char out[8192];
    char *cert = NULL, *key = NULL, err[256];
    const char *one[] = {"a.example"};
    FILE *fp;
    char path[128];
    static char enc[8192];
    size_t n;

    if (!have_openssl())
        skip();
    write_str(f, "ca.key", f->ca_key);
    assert_int_equal(run(f, out, sizeof out,
                         "openssl pkey -in ca.key -aes256 -passout pass:secret -out ca-enc.key"),
                     0);
    snprintf(path, sizeof path, "%s/ca-enc.key", f->dir);
    fp = fopen(path, "rb");
    assert_non_null(fp);
    n = fread(enc, 1, sizeof enc - 1, fp);
    fclose(fp);
    enc[n] = '\0';
    /* Fails at once instead of prompting for a password. */
    assert_int_equal(peer_pki_server_issue(f->ca_cert, strlen(f->ca_cert), enc, n, "x", one, 1, 10,
                                           &cert, &key, err, sizeof err),
                     -EINVAL);
    assert_contains(err, "CA key");
}

static void test_hash_parse(void **state)
{
    unsigned char md[32];
    char err[256];
    const char *good = "sha256:00112233445566778899aabbccddeeffAABBCCDDEEFF00112233445566778899";

    (void)state;
    assert_int_equal(peer_pki_hash_parse(good, md, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(md[0], 0x00);
    assert_int_equal(md[1], 0x11);
    assert_int_equal(md[15], 0xff);
    assert_int_equal(md[16], 0xaa);
    assert_int_equal(md[31], 0x99);

    assert_int_equal(peer_pki_hash_parse("00112233", md, err, sizeof err), -EINVAL);
    assert_contains(err, "must start with \"sha256:\"");
    assert_int_equal(peer_pki_hash_parse(
                         "SHA256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
                         md, err, sizeof err),
                     -EINVAL);
    assert_contains(err, "must start with");
    assert_int_equal(peer_pki_hash_parse(NULL, md, err, sizeof err), -EINVAL);
    assert_int_equal(peer_pki_hash_parse("sha256:0011", md, err, sizeof err), -EINVAL);
    assert_contains(err, "expected 64 hex digits");
    assert_contains(err, "got 4");
    assert_int_equal(peer_pki_hash_parse("sha256:", md, err, sizeof err), -EINVAL);
    assert_contains(err, "got 0");
    assert_int_equal(
        peer_pki_hash_parse(
            "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00", md, err,
            sizeof err),
        -EINVAL);
    assert_contains(err, "got more than 64");
    assert_int_equal(peer_pki_hash_parse(
                         "sha256:0011223344556677889Xaabbccddeeff00112233445566778899aabbccddeeff",
                         md, err, sizeof err),
                     -EINVAL);
    assert_contains(err, "invalid character 'X' at position 27");
    assert_int_equal(peer_pki_hash_parse(
                         "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeef ",
                         md, err, sizeof err),
                     -EINVAL);
    assert_contains(err, "invalid byte 0x20 at position 71");
    /* err may be NULL. */
    assert_int_equal(peer_pki_hash_parse("x", md, NULL, 0), -EINVAL);
}

static void test_ca_match(void **state)
{
    struct fixture *f = *state;
    char hash[PEER_CA_HASH_LEN + 1], other[PEER_CA_HASH_LEN + 1], err[256];
    char buf[16384];
    size_t cl = strlen(f->ca_cert);

    assert_int_equal(peer_pki_ca_hash(f->ca_cert, cl, hash, err, sizeof err), 0);
    assert_int_equal(peer_pki_ca_match(f->ca_cert, cl, hash, err, sizeof err), 0);
    assert_string_equal(err, "");
    /* Upper-case hex digits match too. */
    memcpy(other, hash, sizeof hash);
    for (char *p = other + 7; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    assert_int_equal(peer_pki_ca_match(f->ca_cert, cl, other, err, sizeof err), 0);

    /* Another key: refused. */
    assert_int_equal(peer_pki_ca_hash(f->cert, strlen(f->cert), other, err, sizeof err), 0);
    assert_string_not_equal(hash, other);
    assert_int_equal(peer_pki_ca_match(f->ca_cert, cl, other, err, sizeof err), -EACCES);
    assert_contains(err, "does not match");
    assert_int_equal(peer_pki_ca_match(f->cert, strlen(f->cert), hash, err, sizeof err), -EACCES);

    /* Text around the block is fine (PEM files often have it). */
    snprintf(buf, sizeof buf, "subject=CN = cliqo-auth-ca\n%s\n\n", f->ca_cert);
    assert_int_equal(peer_pki_ca_match(buf, strlen(buf), hash, err, sizeof err), 0);
    /* Two certificates: refused, even when the first one matches. */
    snprintf(buf, sizeof buf, "%s%s", f->ca_cert, f->cert);
    assert_int_equal(peer_pki_ca_match(buf, strlen(buf), hash, err, sizeof err), -EINVAL);
    assert_contains(err, "more than one PEM block");
    snprintf(buf, sizeof buf, "%s%s", f->ca_cert, f->key);
    assert_int_equal(peer_pki_ca_match(buf, strlen(buf), hash, err, sizeof err), -EINVAL);
    /* A broken block after it. */
    snprintf(buf, sizeof buf, "%s-----BEGIN CERTIFICATE-----\nAAAA\n", f->ca_cert);
    assert_int_equal(peer_pki_ca_match(buf, strlen(buf), hash, err, sizeof err), -EINVAL);
    assert_contains(err, "malformed PEM");
    /* Not a certificate at all. */
    assert_int_equal(peer_pki_ca_match(f->key, strlen(f->key), hash, err, sizeof err), -EINVAL);
    assert_contains(err, "not CERTIFICATE");
    assert_int_equal(peer_pki_ca_match("", 0, hash, err, sizeof err), -EINVAL);
    assert_contains(err, "no PEM certificate");
    assert_int_equal(peer_pki_ca_match("garbage", 7, hash, err, sizeof err), -EINVAL);
    assert_int_equal(peer_pki_ca_match(NULL, 0, hash, err, sizeof err), -EINVAL);
    snprintf(buf, sizeof buf, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assert_int_equal(peer_pki_ca_match(buf, strlen(buf), hash, err, sizeof err), -EINVAL);
    assert_contains(err, "not a valid X.509");
    /* A length shorter than the string: only that much is read. */
    assert_int_equal(peer_pki_ca_match(f->ca_cert, cl / 2, hash, err, sizeof err), -EINVAL);
    /* A bad pin is reported before the certificate is looked at. */
    assert_int_equal(peer_pki_ca_match(f->ca_cert, cl, "sha256:abc", err, sizeof err), -EINVAL);
    assert_contains(err, "expected 64 hex digits");
    /* Size limit. */
    assert_int_equal(peer_pki_ca_match(f->ca_cert, PEER_PKI_PEM_MAX + 1, hash, err, sizeof err),
                     -E2BIG);
}

static void test_oom(void **state)
{
    struct fixture *f = *state;
    const char *one[] = {"a.example", "10.0.0.1"};
    int r = -ENOMEM;

    (void)state;
    for (long n = 0; r == -ENOMEM; n++) {
        char *ca = NULL, *cakey = NULL, *cert = NULL, *key = NULL;

        xalloc_fail_after(n);
        r = peer_pki_ca_create("c", 1, &ca, &cakey, NULL, 0);
        if (r == 0)
            r = peer_pki_server_issue(f->ca_cert, strlen(f->ca_cert), f->ca_key, strlen(f->ca_key),
                                      "s", one, 2, 1, &cert, &key, NULL, 0);
        xalloc_fail_after(-1);
        assert_true(r == 0 || r == -ENOMEM);
        x_free(ca);
        x_free(cakey);
        x_free(cert);
        x_free(key);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openssl_cross_check),
        cmocka_unit_test(test_validity),
        cmocka_unit_test(test_issue_errors),
        cmocka_unit_test(test_encrypted_key_refused),
        cmocka_unit_test(test_hash_parse),
        cmocka_unit_test(test_ca_match),
        cmocka_unit_test(test_oom),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
