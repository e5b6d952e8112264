#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "kube/kubeconfig.h"

#define DATA CLIQO_TEST_DATA "/kubeconfig"

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fail_msg("\"%s\" does not contain \"%s\"", (hay), (needle));                           \
    } while (0)

/* ---- helpers ---- */

static char *slurp(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *ret_len = (size_t)n;
    return buf;
}

static void assert_file_bytes(const unsigned char *got, size_t got_len, const char *path)
{
    size_t len;
    char *want = slurp(path, &len);

    assert_non_null(got);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, want, len);
    assert_int_equal(got[got_len], '\0'); /* the documented trailing NUL */
    free(want);
}

static void write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void write_str(const char *dir, const char *name, const char *data)
{
    write_file(dir, name, data, strlen(data));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_rf(const char *dir)
{
    assert_int_equal(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void make_tmpdir(char *buf, size_t len)
{
    const char *t = getenv("TMPDIR");

    snprintf(buf, len, "%s/cliqo-kc-XXXXXX", t && *t ? t : "/tmp");
    assert_non_null(mkdtemp(buf));
}

/* Loads YAML text as if it were the file /x/config, without a base directory. */
static int load(const char *yaml, const char *context, struct kc_config **c, char *err)
{
    return kc_load_mem(yaml, strlen(yaml), "/x/config", NULL, context, c, err, KC_ERR_LEN);
}

/* Expects loading to fail with `want` and exactly the message `msg`. */
static void expect_err(const char *yaml, const char *context, int want, const char *msg)
{
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN];
    int r = load(yaml, context, &c, err);

    if (r != want || strcmp(err, msg) != 0)
        fail_msg("got %d \"%s\", expected %d \"%s\"", r, err, want, msg);
    assert_null(c);
}

static void clear_env(void)
{
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

/* A minimal valid kubeconfig with one cluster, one user and one context. */
#define SIMPLE_CLUSTER "clusters:\n- name: c1\n  cluster:\n    server: https://k.example.com:6443\n"
#define SIMPLE_USER    "users:\n- name: u\n  user:\n    token: tok\n"
#define SIMPLE_CONTEXT "contexts:\n- name: dev\n  context:\n    cluster: c1\n    user: u\n"
#define SIMPLE         "current-context: dev\n" SIMPLE_CLUSTER SIMPLE_USER SIMPLE_CONTEXT

/* ---- tests ---- */

static void test_inline_data(void **state)
{
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN] = "stale";

    (void)state;
    assert_int_equal(kc_load_file(DATA "/inline.yaml", NULL, &c, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_string_equal(c->server, "https://127.0.0.1:6443"); /* trailing slash dropped */
    assert_string_equal(c->context_name, "admin@dev");
    assert_string_equal(c->cluster_name, "dev");
    assert_string_equal(c->user_name, "admin");
    assert_string_equal(c->namespace, "team-a");
    assert_string_equal(c->tls_server_name, "kubernetes.default.svc");
    assert_false(c->insecure_skip_tls_verify);
    assert_string_equal(c->token, "inline-token-abc");
    assert_null(c->token_file);
    assert_file_bytes(c->ca_pem, c->ca_pem_len, DATA "/ca.crt");
    assert_file_bytes(c->cert_pem, c->cert_pem_len, DATA "/client.crt");
    assert_file_bytes(c->key_pem, c->key_pem_len, DATA "/client.key");
    c = kc_config_free(c);
    assert_null(c);
    assert_null(kc_config_free(NULL));
}

static void test_file_paths_relative(void **state)
{
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN];

    (void)state;
    assert_int_equal(kc_load_file(DATA "/files.yaml", NULL, &c, err, sizeof err), 0);
    assert_string_equal(c->server, "https://[::1]:6443");
    assert_string_equal(c->context_name, "files");
    assert_string_equal(c->namespace, "default");
    assert_file_bytes(c->ca_pem, c->ca_pem_len, DATA "/ca.crt");
    assert_file_bytes(c->cert_pem, c->cert_pem_len, DATA "/client.crt");
    assert_file_bytes(c->key_pem, c->key_pem_len, DATA "/client.key");
    assert_string_equal(c->token, "file-token-123"); /* read from tokenFile and trimmed */
    assert_string_equal(c->token_file, DATA "/token");
    c = kc_config_free(c);

    /* A kubeconfig named without a directory: its references resolve against ".". */
    {
        char cwd[4096];

        assert_non_null(getcwd(cwd, sizeof cwd));
        assert_int_equal(chdir(DATA), 0);
        assert_int_equal(kc_load_file("files.yaml", NULL, &c, err, sizeof err), 0);
        assert_int_equal(chdir(cwd), 0);
        assert_string_equal(c->token_file, "./token");
        assert_file_bytes(c->ca_pem, c->ca_pem_len, DATA "/ca.crt");
        kc_config_free(c);
    }
}

static void test_file_paths_absolute(void **state)
{
    struct kc_config *c = NULL;
    char dir[256], path[512], err[KC_ERR_LEN];
    const char *yaml = "current-context: abs\n"
                       "clusters:\n- name: c\n  cluster:\n    server: https://h:1\n"
                       "    certificate-authority: " DATA "/ca.crt\n"
                       "users:\n- name: u\n  user:\n"
                       "    client-certificate: " DATA "/client.crt\n"
                       "    client-key: " DATA "/client.key\n"
                       "    tokenFile: " DATA "/token\n"
                       "    token: inline\n"
                       "contexts:\n- name: abs\n  context: {cluster: c, user: u}\n";

    (void)state;
    make_tmpdir(dir, sizeof dir);
    write_str(dir, "config", yaml);
    snprintf(path, sizeof path, "%s/config", dir);
    assert_int_equal(kc_load_file(path, NULL, &c, err, sizeof err), 0);
    assert_file_bytes(c->ca_pem, c->ca_pem_len, DATA "/ca.crt");
    assert_file_bytes(c->cert_pem, c->cert_pem_len, DATA "/client.crt");
    assert_file_bytes(c->key_pem, c->key_pem_len, DATA "/client.key");
    /* An inline token wins; the file is kept for re-reads. */
    assert_string_equal(c->token, "inline");
    assert_string_equal(c->token_file, DATA "/token");
    kc_config_free(c);

    /* Absolute paths also work from memory when a base directory is given. */
    c = NULL;
    assert_int_equal(
        kc_load_mem(yaml, strlen(yaml), "secret", "/nonexistent", NULL, &c, err, sizeof err), 0);
    assert_file_bytes(c->ca_pem, c->ca_pem_len, DATA "/ca.crt");
    kc_config_free(c);
    rm_rf(dir);
}

static void test_missing_referenced_file(void **state)
{
    struct kc_config *c = NULL;
    char dir[256], path[512], err[KC_ERR_LEN], want[1024];

    (void)state;
    make_tmpdir(dir, sizeof dir);
    write_str(dir, "config",
              "current-context: x\n"
              "clusters:\n- name: c\n  cluster:\n    server: https://h\n"
              "    certificate-authority: nope/ca.crt\n"
              "contexts:\n- name: x\n  context: {cluster: c}\n");
    snprintf(path, sizeof path, "%s/config", dir);
    assert_int_equal(kc_load_file(path, NULL, &c, err, sizeof err), -ENOENT);
    snprintf(want, sizeof want,
             "%s: cluster \"c\": certificate-authority: cannot read \"%s/nope/ca.crt\": No such "
             "file or directory",
             path, dir);
    assert_string_equal(err, want);
    assert_null(c);

    /* A missing kubeconfig names the file. */
    assert_int_equal(kc_load_file("/nonexistent/config", NULL, &c, err, sizeof err), -ENOENT);
    assert_string_equal(err,
                        "/nonexistent/config: cannot read kubeconfig: No such file or directory");
    rm_rf(dir);
}

static void test_token_and_token_file(void **state)
{
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN], dir[256], path[512];
    char *tok = NULL;

    (void)state;
    /* Inline token, trimmed. */
    assert_int_equal(load("current-context: d\n" SIMPLE_CLUSTER
                          "users:\n- name: u\n  user:\n    token: \"  abc.def-ghi \\n\"\n"
                          "contexts:\n- name: d\n  context: {cluster: c1, user: u}\n",
                          NULL, &c, err),
                     0);
    assert_string_equal(c->token, "abc.def-ghi");
    assert_null(c->cert_pem);
    assert_null(c->key_pem);
    kc_config_free(c);

    /* A token with inner spaces or control characters cannot go into an HTTP header. */
    expect_err("current-context: d\n" SIMPLE_CLUSTER
               "users:\n- name: u\n  user:\n    token: \"abc\\r\\nX-Evil: 1\"\n"
               "contexts:\n- name: d\n  context: {cluster: c1, user: u}\n",
               NULL, -EINVAL,
               "/x/config: user \"u\": token: expected printable ASCII without spaces or control "
               "characters");

    /* tokenFile, relative to the file's directory. */
    make_tmpdir(dir, sizeof dir);
    write_str(dir, "tok", "\n  rotated-1 \n");
    write_str(dir, "empty", " \n");
    write_str(dir, "config",
              "current-context: d\n" SIMPLE_CLUSTER
              "users:\n- name: u\n  user:\n    tokenFile: tok\n"
              "- name: e\n  user:\n    tokenFile: empty\n"
              "- name: m\n  user:\n    tokenFile: missing\n"
              "contexts:\n- name: d\n  context: {cluster: c1, user: u}\n"
              "- name: e\n  context: {cluster: c1, user: e}\n"
              "- name: m\n  context: {cluster: c1, user: m}\n");
    snprintf(path, sizeof path, "%s/config", dir);
    c = NULL;
    assert_int_equal(kc_load_file(path, NULL, &c, err, sizeof err), 0);
    assert_string_equal(c->token, "rotated-1");
    assert_non_null(strstr(c->token_file, "/tok"));

    /* Re-reading a rotated token. */
    write_str(dir, "tok", "rotated-2\n");
    assert_int_equal(kc_read_token(c->token_file, &tok, err, sizeof err), 0);
    assert_string_equal(tok, "rotated-2");
    x_free(tok);
    kc_config_free(c);

    c = NULL;
    assert_int_equal(kc_load_file(path, "e", &c, err, sizeof err), -EINVAL);
    assert_contains(err, "config: user \"e\": tokenFile: \"");
    assert_contains(err, "/empty\" is empty");
    assert_int_equal(kc_load_file(path, "m", &c, err, sizeof err), -ENOENT);
    assert_contains(err, "config: user \"m\": tokenFile: cannot read \"");
    assert_contains(err, "/missing\": No such file or directory");
    assert_null(c);

    tok = NULL;
    assert_int_equal(kc_read_token("/nonexistent/token", &tok, err, sizeof err), -ENOENT);
    assert_string_equal(
        err, "token file: cannot read \"/nonexistent/token\": No such file or directory");
    assert_null(tok);
    rm_rf(dir);
}

static void test_named_and_current_context(void **state)
{
    const char *yaml =
        "current-context: dev\n"
        "clusters:\n"
        "- name: c-dev\n  cluster: {server: 'https://dev.example.com'}\n"
        "- name: c-stg\n  cluster: {server: \"https://stg.example.com:8443/base/\"}\n"
        "users:\n- name: u\n  user: {token: t}\n"
        "contexts:\n"
        "- name: dev\n  context: {cluster: c-dev, user: u, namespace: d}\n"
        "- name: staging\n  context: {cluster: c-stg, namespace: s}\n";
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN];

    (void)state;
    assert_int_equal(load(yaml, NULL, &c, err), 0);
    assert_string_equal(c->context_name, "dev");
    assert_string_equal(c->server, "https://dev.example.com");
    assert_string_equal(c->namespace, "d");
    assert_string_equal(c->user_name, "u");
    c = kc_config_free(c);

    /* "" means the current context too. */
    assert_int_equal(load(yaml, "", &c, err), 0);
    assert_string_equal(c->context_name, "dev");
    c = kc_config_free(c);

    /* A named context; it has no user, so it is anonymous. */
    assert_int_equal(load(yaml, "staging", &c, err), 0);
    assert_string_equal(c->context_name, "staging");
    assert_string_equal(c->cluster_name, "c-stg");
    assert_string_equal(c->server, "https://stg.example.com:8443/base");
    assert_string_equal(c->namespace, "s");
    assert_null(c->user_name);
    assert_null(c->token);
    kc_config_free(c);
}

static void test_missing_context(void **state)
{
    const char *yaml = "current-context: gone\n" SIMPLE_CLUSTER
                       "contexts:\n- name: dev\n  context: {cluster: c1}\n"
                       "- name: staging\n  context: {cluster: c1}\n";

    (void)state;
    expect_err(yaml, "prod", -EINVAL,
               "/x/config: contexts: context \"prod\" not found (have: dev, staging)");
    expect_err(yaml, NULL, -EINVAL,
               "/x/config: contexts: context \"gone\" not found (have: dev, staging)");
    expect_err(SIMPLE_CLUSTER, "x", -EINVAL,
               "/x/config: contexts: context \"x\" not found (no context is defined)");
    expect_err(SIMPLE_CLUSTER, NULL, -EINVAL,
               "/x/config: current-context is not set and no context was requested");
    /* An empty document is an empty configuration. */
    expect_err("", NULL, -EINVAL,
               "/x/config: current-context is not set and no context was requested");
    expect_err("current-context: \"\"\n", NULL, -EINVAL,
               "/x/config: current-context is not set and no context was requested");
}

static void test_insecure(void **state)
{
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN];
    const char *ctx = "current-context: d\ncontexts:\n- name: d\n  context: {cluster: c}\n";
    char yaml[1024];

    (void)state;
    snprintf(yaml, sizeof yaml,
             "%sclusters:\n- name: c\n  cluster:\n    server: https://h\n"
             "    insecure-skip-tls-verify: true\n",
             ctx);
    assert_int_equal(load(yaml, NULL, &c, err), 0);
    assert_true(c->insecure_skip_tls_verify);
    assert_null(c->ca_pem);
    c = kc_config_free(c);

    snprintf(yaml, sizeof yaml,
             "%sclusters:\n- name: c\n  cluster:\n    server: https://h\n"
             "    insecure-skip-tls-verify: false\n",
             ctx);
    assert_int_equal(load(yaml, NULL, &c, err), 0);
    assert_false(c->insecure_skip_tls_verify);
    c = kc_config_free(c);

    snprintf(yaml, sizeof yaml,
             "%sclusters:\n- name: c\n  cluster:\n    server: https://h\n"
             "    insecure-skip-tls-verify: true\n    certificate-authority-data: QUJD\n",
             ctx);
    expect_err(yaml, NULL, -EINVAL,
               "/x/config: cluster \"c\": specifying a root certificates file with the insecure "
               "flag is not allowed (insecure-skip-tls-verify is true and "
               "certificate-authority-data is set)");

    snprintf(yaml, sizeof yaml,
             "%sclusters:\n- name: c\n  cluster:\n    server: https://h\n"
             "    insecure-skip-tls-verify: \"maybe\"\n",
             ctx);
    expect_err(yaml, NULL, -EINVAL,
               "/x/config: clusters[0].cluster.insecure-skip-tls-verify: expected a boolean (true "
               "or false), got \"maybe\"");

    snprintf(yaml, sizeof yaml,
             "%sclusters:\n- name: c\n  cluster:\n    server: https://h\n"
             "    certificate-authority-data: QUJD\n    certificate-authority: /ca.crt\n",
             ctx);
    expect_err(yaml, NULL, -EINVAL,
               "/x/config: cluster \"c\": certificate-authority and certificate-authority-data "
               "are both set; specify only one");
}

/* A peer's kubeconfig (kc_load_peer, kc_check_peer): every way to weaken TLS is refused with a
 * message that names the field; a self-contained https:// kubeconfig with a pinned CA passes. */
static void test_peer(void **state)
{
    static const struct {
        const char *cluster; /* the cluster's fields, YAML flow style */
        const char *user;    /* NULL: the token user of ctx */
        int want;
        const char *msg; /* a part of the error */
    } cases[] = {
        {"server: https://h, certificate-authority-data: QUJD", NULL, 0, ""},
        {"server: https://h:6443/p, certificate-authority-data: QUJD, tls-server-name: k", NULL, 0,
         ""},
        {"server: https://h, insecure-skip-tls-verify: true", NULL, -EPERM,
         "peer: insecure-skip-tls-verify: true is refused"},
        {"server: https://h, insecure-skip-tls-verify: false", NULL, -EPERM,
         "peer: certificate-authority-data is missing"},
        {"server: https://h", NULL, -EPERM, "certificate-authority-data is missing"},
        {"server: http://127.0.0.1:8080", NULL, -EPERM,
         "peer: server \"http://127.0.0.1:8080\" is refused: a peer's kubeconfig must use "
         "https://"},
        {"server: http://localhost, certificate-authority-data: QUJD", NULL, -EPERM,
         "must use https://"},
        {"server: http://k.example.com, certificate-authority-data: QUJD", NULL, -EINVAL,
         "plain http:// is accepted only for a loopback host"},
        {"server: https://h, certificate-authority: /etc/ca.crt", NULL, -EINVAL,
         "certificate-authority"},
        {"server: https://h, certificate-authority-data: QUJD",
         "users:\n- name: u\n  user: {tokenFile: /var/run/t}\n", -EINVAL, "tokenFile"},
        {"server: https://h, certificate-authority-data: QUJD",
         "users:\n- name: u\n  user: {exec: {command: /bin/sh, apiVersion: "
         "client.authentication.k8s.io/v1}}\n",
         -EINVAL, "exec"},
        {"server: https://h, certificate-authority-data: QUJD",
         "users:\n- name: u\n  user: {auth-provider: {name: gcp}}\n", -EINVAL, "auth-provider"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct kc_config *c = NULL;
        char yaml[1024], err[KC_ERR_LEN];
        int r;

        snprintf(yaml, sizeof yaml,
                 "current-context: d\ncontexts:\n- name: d\n  context: {cluster: c, user: u}\n"
                 "clusters:\n- name: c\n  cluster: {%s}\n%s",
                 cases[i].cluster,
                 cases[i].user ? cases[i].user : "users:\n- name: u\n  user: {token: t}\n");
        r = kc_load_peer(yaml, strlen(yaml), "peer", &c, err, sizeof err);
        if (r != cases[i].want || !strstr(err, cases[i].msg))
            fail_msg("case %zu: got %d \"%s\", expected %d with \"%s\"", i, r, err, cases[i].want,
                     cases[i].msg);
        if (r == 0) {
            assert_non_null(c);
            assert_string_equal(err, "");
        } else {
            assert_null(c);
        }
        c = kc_config_free(c);
    }
}

/* The checks on a configuration built elsewhere (the relay's client); the tests' switch. */
static void test_peer_conn(void **state)
{
    struct kc_config cfg = {.server = "https://h", .namespace = "default"};
    unsigned char ca[] = "CA";
    char err[KC_ERR_LEN];

    (void)state;
    assert_int_equal(kc_check_peer(&cfg, NULL, err, sizeof err), -EPERM);
    assert_contains(err, "<memory>: certificate-authority-data is missing");
    cfg.ca_pem = ca;
    cfg.ca_pem_len = 2;
    assert_int_equal(kc_check_peer(&cfg, NULL, err, sizeof err), 0);
    cfg.token_file = "/var/run/secrets/token";
    assert_int_equal(kc_check_peer(&cfg, "x", err, sizeof err), -EPERM);
    assert_contains(err, "x: tokenFile is refused");
    assert_int_equal(kc_check_peer(NULL, "x", err, sizeof err), -EINVAL);
    assert_int_equal(kc_check_peer_conn("x", NULL, 2, false, err, sizeof err), -EINVAL);
    assert_int_equal(kc_check_peer_conn("x", "HTTPS://h", 2, false, err, sizeof err), 0);
    assert_int_equal(kc_check_peer_conn("x", "https://h", 2, true, NULL, 0), -EPERM);
    assert_int_equal(kc_check_peer_conn("x", "ftp://h", 2, false, err, sizeof err), -EPERM);
    /* Unit tests with a plain-HTTP fake: only http://, and never with insecure. */
    kc_peer_allow_loopback_http(true);
    assert_int_equal(kc_check_peer_conn("x", "http://127.0.0.1:1", 0, false, err, sizeof err), 0);
    assert_int_equal(kc_check_peer_conn("x", "http://127.0.0.1:1", 0, true, err, sizeof err),
                     -EPERM);
    assert_int_equal(kc_check_peer_conn("x", "https://h", 0, false, err, sizeof err), -EPERM);
    kc_peer_allow_loopback_http(false);
    assert_int_equal(kc_check_peer_conn("x", "http://127.0.0.1:1", 0, false, err, sizeof err),
                     -EPERM);
}

static void test_malformed_yaml(void **state)
{
    (void)state;
    expect_err("clusters:\n- name: a\n  cluster: [\n", NULL, -EINVAL,
               "/x/config: invalid YAML at line 4, column 1: did not find expected node content "
               "(while parsing a flow node at line 4)");
    expect_err("a: b\n c: d\n", NULL, -EINVAL,
               "/x/config: invalid YAML at line 2, column 3: mapping values are not allowed in "
               "this context");
    /* Invalid UTF-8. */
    expect_err("current-context: \xff\xfe\xfd\n", NULL, -EINVAL,
               "/x/config: invalid YAML: invalid leading UTF-8 octet at byte 17");
}

static void test_wrong_types(void **state)
{
    (void)state;
    expect_err("- a\n- b\n", NULL, -EINVAL,
               "/x/config: expected a mapping at the top level, got a sequence");
    expect_err("clusters:\n  name: c\n", NULL, -EINVAL,
               "/x/config: clusters: expected a sequence, got a mapping");
    expect_err("clusters:\n- name: c\n  cluster:\n    server: [a, b]\n", NULL, -EINVAL,
               "/x/config: clusters[0].cluster.server: expected a string, got a sequence");
    expect_err("users:\n- name: u\n  user: just-a-string\n", NULL, -EINVAL,
               "/x/config: users[0].user: expected a mapping, got a string");
    expect_err("contexts:\n- just-a-string\n", NULL, -EINVAL,
               "/x/config: contexts[0]: expected a mapping, got a string");
    expect_err("current-context: {a: b}\n", NULL, -EINVAL,
               "/x/config: current-context: expected a string, got a mapping");
    expect_err("contexts:\n- name: [x]\n", NULL, -EINVAL,
               "/x/config: contexts[0].name: expected a string, got a sequence");
    expect_err("apiVersion: v2\n", NULL, -EINVAL,
               "/x/config: apiVersion: expected \"v1\", got \"v2\"");
    expect_err("kind: Pod\n", NULL, -EINVAL, "/x/config: kind: expected \"Config\", got \"Pod\"");
    expect_err("users:\n- name: u\n  user:\n    client-key-data: {a: 1}\n", NULL, -EINVAL,
               "/x/config: users[0].user.client-key-data: expected a base64 string, got a mapping");
    expect_err("current-context: \"a\\0b\"\n", NULL, -EINVAL,
               "/x/config: current-context: expected a string, got one with a NUL byte");
}

static void test_bad_base64(void **state)
{
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN];

    (void)state;
    expect_err("users:\n- name: ok\n  user: {}\n- name: u\n  user:\n    client-key-data: Zm9v!\n",
               NULL, -EINVAL, "/x/config: users[1].user.client-key-data: invalid base64");
    /* Missing padding, data after padding, a lone '=' and a truncated quantum all fail. */
    expect_err("clusters:\n- name: c\n  cluster: {certificate-authority-data: Zm9vYg}\n", NULL,
               -EINVAL,
               "/x/config: clusters[0].cluster.certificate-authority-data: invalid base64");
    expect_err("clusters:\n- name: c\n  cluster: {certificate-authority-data: Zg==Zg==}\n", NULL,
               -EINVAL,
               "/x/config: clusters[0].cluster.certificate-authority-data: invalid base64");
    expect_err("clusters:\n- name: c\n  cluster: {certificate-authority-data: Z===}\n", NULL,
               -EINVAL,
               "/x/config: clusters[0].cluster.certificate-authority-data: invalid base64");
    expect_err("clusters:\n- name: c\n  cluster: {certificate-authority-data: 'Zm9v Zm9v'}\n", NULL,
               -EINVAL,
               "/x/config: clusters[0].cluster.certificate-authority-data: invalid base64");

    /* Line breaks inside are fine (Go's decoder skips CR and LF), and all lengths decode. */
    assert_int_equal(
        load("current-context: d\n"
             "clusters:\n- name: c\n  cluster:\n    server: https://h\n"
             "    certificate-authority-data: |\n      Zm9v\n      YmFy\r\n      YQ==\n"
             "contexts:\n- name: d\n  context: {cluster: c}\n",
             NULL, &c, err),
        0);
    assert_int_equal(c->ca_pem_len, 7);
    assert_memory_equal(c->ca_pem, "foobara", 8);
    c = kc_config_free(c);
    assert_int_equal(load("current-context: d\n"
                          "clusters:\n- name: c\n  cluster:\n    server: https://h\n"
                          "    certificate-authority-data: Zm9vYmE=\n"
                          "contexts:\n- name: d\n  context: {cluster: c}\n",
                          NULL, &c, err),
                     0);
    assert_int_equal(c->ca_pem_len, 5);
    assert_memory_equal(c->ca_pem, "fooba", 5);
    kc_config_free(c);
}

static void test_missing_fields(void **state)
{
    (void)state;
    expect_err("current-context: d\nclusters:\n- name: c1\n  cluster: {}\n"
               "contexts:\n- name: d\n  context: {cluster: c1}\n",
               NULL, -EINVAL, "/x/config: cluster \"c1\": server is not set");
    expect_err("current-context: d\nclusters:\n- name: c1\n"
               "contexts:\n- name: d\n  context: {cluster: c1}\n",
               NULL, -EINVAL, "/x/config: cluster \"c1\": server is not set");
    expect_err("clusters:\n- cluster: {server: https://h}\n", NULL, -EINVAL,
               "/x/config: clusters[0].name: expected a non-empty string, got nothing");
    expect_err("users:\n- name: ''\n", NULL, -EINVAL,
               "/x/config: users[0].name: expected a non-empty string, got an empty one");
    expect_err("current-context: d\n" SIMPLE_CLUSTER "contexts:\n- name: d\n  context: {}\n", NULL,
               -EINVAL, "/x/config: context \"d\": cluster is not set");
    expect_err("current-context: d\n" SIMPLE_CLUSTER "contexts:\n- name: d\n  context: {cluster: "
               "c2}\n",
               NULL, -EINVAL, "/x/config: context \"d\": cluster \"c2\" not found (have: c1)");
    expect_err("current-context: d\n" SIMPLE_CLUSTER SIMPLE_USER
               "contexts:\n- name: d\n  context: {cluster: c1, user: bob}\n",
               NULL, -EINVAL, "/x/config: context \"d\": user \"bob\" not found (have: u)");
    expect_err("current-context: dev\n" SIMPLE_CLUSTER SIMPLE_CONTEXT
               "users:\n- name: u\n  user:\n    client-certificate-data: QUJD\n",
               NULL, -EINVAL,
               "/x/config: user \"u\": client-certificate-data given without client-key-data or "
               "client-key");
    expect_err("current-context: dev\n" SIMPLE_CLUSTER SIMPLE_CONTEXT
               "users:\n- name: u\n  user:\n    client-key: /k.pem\n",
               NULL, -EINVAL,
               "/x/config: user \"u\": client-key given without client-certificate-data or "
               "client-certificate");
    expect_err("current-context: dev\n" SIMPLE_CLUSTER SIMPLE_CONTEXT
               "users:\n- name: u\n  user:\n    client-certificate-data: QUJD\n"
               "    client-certificate: /c.pem\n    client-key-data: QUJD\n",
               NULL, -EINVAL,
               "/x/config: user \"u\": client-certificate and client-certificate-data are both "
               "set; specify only one");
}

static void test_duplicates(void **state)
{
    (void)state;
    expect_err("clusters:\n- name: a\n- name: b\n- name: a\n- name: b\n", NULL, -EINVAL,
               "/x/config: clusters[2].name: duplicate cluster name \"a\" (first defined at "
               "clusters[0])");
    expect_err("clusters:\n- name: a\n  cluster:\n    server: https://h\n    server: https://i\n",
               NULL, -EINVAL, "/x/config: clusters[0].cluster: duplicate key \"server\"");
    expect_err("current-context: a\ncurrent-context: b\n", NULL, -EINVAL,
               "/x/config: duplicate top-level key \"current-context\"");
}

static void test_server_urls(void **state)
{
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"https://k.example.com", "https://k.example.com"},
        {"HTTPS://k.example.com:443///", "https://k.example.com:443"},
        {"https://10.0.0.1:6443/prefix/", "https://10.0.0.1:6443/prefix"},
        {"https://[fd00::1]:6443", "https://[fd00::1]:6443"},
        {"http://127.0.0.1:8080/", "http://127.0.0.1:8080"},
        {"http://localhost:8080", "http://localhost:8080"},
        {"http://[::1]:8080", "http://[::1]:8080"},
    };
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"ftp://h.example.com/", "server must be an https:// URL (got \"ftp://h.example.com/\")"},
        {"k.example.com:6443", "server must be an https:// URL (got \"k.example.com:6443\")"},
        {"http://k.example.com",
         "server must be an https:// URL; plain http:// is accepted only for a loopback host "
         "(got \"http://k.example.com\")"},
        {"http://127.evil.com", "plain http:// is accepted only for a loopback host"},
        {"https://user:secret@h", "server must not contain user info (user@ or user:password@)"},
        {"https://h/?q=1", "server must not have a query or fragment"},
        {"https://h:0", "server has an invalid port"},
        {"https://h:65536", "server has an invalid port"},
        {"https://h:", "server has an invalid port"},
        {"https://fd00::1", "IPv6 addresses need brackets"},
        {"https://fd00:10:96::1:6443", "IPv6 addresses need brackets"},
        {"https://[fd00::1", "server has an invalid IPv6 address"},
        {"https://[]:1", "server has an invalid IPv6 address"},
        {"https://", "server has no host"},
        {"https://:443", "server has no host"},
        {"https://h%2f", "server has an invalid host"},
        {"https://h x", "server must not contain spaces, control or non-ASCII characters"},
    };
    struct kc_config *c = NULL;
    char yaml[512], err[KC_ERR_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        snprintf(yaml, sizeof yaml,
                 "current-context: d\nclusters:\n- name: c1\n  cluster: {server: '%s'}\n"
                 "contexts:\n- name: d\n  context: {cluster: c1}\n",
                 ok[i].in);
        if (load(yaml, NULL, &c, err) != 0)
            fail_msg("%s: %s", ok[i].in, err);
        assert_string_equal(c->server, ok[i].out);
        c = kc_config_free(c);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(yaml, sizeof yaml,
                 "current-context: d\nclusters:\n- name: c1\n  cluster: {server: '%s'}\n"
                 "contexts:\n- name: d\n  context: {cluster: c1}\n",
                 bad[i].in);
        assert_int_equal(load(yaml, NULL, &c, err), -EINVAL);
        assert_null(c);
        if (strncmp(err, "/x/config: cluster \"c1\": ", 25) != 0 || !strstr(err, bad[i].msg))
            fail_msg("%s: got \"%s\", expected \"%s\"", bad[i].in, err, bad[i].msg);
    }
    /* The password in user info is never echoed. */
    assert_int_equal(
        load("current-context: d\nclusters:\n- name: c1\n  cluster: {server: "
             "'https://u:hunter2@h'}\ncontexts:\n- name: d\n  context: {cluster: c1}\n",
             NULL, &c, err),
        -EINVAL);
    assert_null(strstr(err, "hunter2"));
}

static void test_namespace(void **state)
{
    (void)state;
    expect_err("current-context: d\n" SIMPLE_CLUSTER
               "contexts:\n- name: d\n  context: {cluster: c1, namespace: ../kube-system}\n",
               NULL, -EINVAL,
               "/x/config: context \"d\": namespace \"../kube-system\" is not a valid namespace "
               "name (expected lowercase letters, digits and '-', at most 63 characters)");
}

static void test_unsupported_users(void **state)
{
    char yaml[1024];
    static const struct {
        const char *user, *msg;
    } cases[] = {
        {"    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n",
         "/x/config: user \"u\": exec credential plugins are not supported"},
        {"    auth-provider:\n      name: oidc\n",
         "/x/config: user \"u\": auth-provider plugins are not supported"},
        {"    username: admin\n    password: secret\n",
         "/x/config: user \"u\": basic authentication (username/password) is not supported"},
        {"    token: t\n    as: system:admin\n",
         "/x/config: user \"u\": impersonation (as, as-uid, as-groups, as-user-extra) is not "
         "supported"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(yaml, sizeof yaml,
                 "current-context: dev\n" SIMPLE_CLUSTER SIMPLE_CONTEXT
                 "users:\n- name: u\n  user:\n%s",
                 cases[i].user);
        expect_err(yaml, NULL, -EINVAL, cases[i].msg);
    }
    /* Present but empty, or on a user that is not selected: no error. */
    {
        struct kc_config *c = NULL;
        char err[KC_ERR_LEN];

        assert_int_equal(load("current-context: dev\n" SIMPLE_CLUSTER SIMPLE_CONTEXT
                              "users:\n- name: u\n  user: {token: t, as-groups: [], exec: null}\n"
                              "- name: other\n  user:\n    exec: {command: x}\n",
                              NULL, &c, err),
                         0);
        assert_string_equal(c->token, "t");
        kc_config_free(c);
    }
    expect_err("current-context: dev\n" SIMPLE_USER SIMPLE_CONTEXT
               "clusters:\n- name: c1\n  cluster: {server: https://h, proxy-url: http://p:3128}\n",
               NULL, -EINVAL, "/x/config: cluster \"c1\": proxy-url is not supported");
}

static void test_mem_refuses_file_references(void **state)
{
    (void)state;
    expect_err("current-context: dev\n" SIMPLE_CONTEXT SIMPLE_USER
               "clusters:\n- name: c1\n  cluster:\n    server: https://h\n"
               "    certificate-authority: /etc/ssl/certs/ca-certificates.crt\n",
               NULL, -EINVAL,
               "/x/config: cluster \"c1\": certificate-authority: file references are not allowed "
               "in a kubeconfig that was not loaded from a file (use certificate-authority-data)");
    expect_err("current-context: dev\n" SIMPLE_CLUSTER SIMPLE_CONTEXT
               "users:\n- name: u\n  user:\n    token: t\n"
               "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n",
               NULL, -EINVAL,
               "/x/config: user \"u\": tokenFile: file references are not allowed in a kubeconfig "
               "that was not loaded from a file (use token)");
}

static void test_kubeconfig_merge(void **state)
{
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN];

    (void)state;
    clear_env();
    setenv("KUBECONFIG", DATA "/merge-a.yaml:" DATA "/missing.yaml::" DATA "/sub/merge-b.yaml", 1);

    /* current-context comes from b (a sets none); cluster and user "shared" come from a. */
    assert_int_equal(kc_load_default(NULL, &c, err, sizeof err), 0);
    assert_string_equal(c->context_name, "ctx-b");
    assert_string_equal(c->namespace, "ns-b");
    assert_string_equal(c->server, "https://a.example.com:6443");
    assert_true(c->insecure_skip_tls_verify);
    assert_string_equal(c->token, "token-from-a");
    c = kc_config_free(c);

    /* Context "ctx-a" is defined by both: a's wins. */
    assert_int_equal(kc_load_default("ctx-a", &c, err, sizeof err), 0);
    assert_string_equal(c->namespace, "ns-a");
    assert_string_equal(c->cluster_name, "shared");
    c = kc_config_free(c);

    /* Entries only in b resolve relative paths against b's directory. */
    assert_int_equal(kc_load_default("ctx-b-only", &c, err, sizeof err), 0);
    assert_string_equal(c->server, "https://only-b.example.com");
    assert_file_bytes(c->ca_pem, c->ca_pem_len, DATA "/ca.crt");
    assert_string_equal(c->token, "file-token-123");
    assert_string_equal(c->token_file, DATA "/sub/../token");
    c = kc_config_free(c);

    /* Errors about the whole set name every file that was loaded. */
    assert_int_equal(kc_load_default("nope", &c, err, sizeof err), -EINVAL);
    assert_string_equal(err, DATA "/merge-a.yaml:" DATA "/sub/merge-b.yaml: contexts: context "
                                  "\"nope\" not found (have: ctx-a, ctx-b, ctx-b-only)");

    /* The order matters: with b first, b's current-context and b's "shared" entries win. */
    setenv("KUBECONFIG", DATA "/sub/merge-b.yaml:" DATA "/merge-a.yaml", 1);
    assert_int_equal(kc_load_default(NULL, &c, err, sizeof err), 0);
    assert_string_equal(c->server, "https://b.example.com:6443");
    assert_false(c->insecure_skip_tls_verify);
    assert_string_equal(c->token, "token-from-b");
    c = kc_config_free(c);

    /* A broken file in the list is an error, not skipped. */
    setenv("KUBECONFIG", DATA "/merge-a.yaml:" DATA "/ca.crt", 1);
    assert_int_equal(kc_load_default(NULL, &c, err, sizeof err), -EINVAL);
    assert_contains(err, DATA "/ca.crt: ");
    assert_null(c);
    clear_env();
}

static void test_default_home_and_fallback(void **state)
{
    struct kc_config *c = NULL;
    char dir[256], sub[512], err[KC_ERR_LEN];
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

    (void)state;
    clear_env();
    make_tmpdir(dir, sizeof dir);
    setenv("HOME", dir, 1);

    /* No ~/.kube/config and not in a pod. */
    assert_int_equal(kc_load_default(NULL, &c, err, sizeof err), -ENOENT);
    assert_string_equal(err, "no kubeconfig found ($KUBECONFIG is not set and ~/.kube/config does "
                             "not exist) and no in-cluster configuration: in-cluster: "
                             "KUBERNETES_SERVICE_HOST is not set (not running in a Kubernetes "
                             "pod?)");
    assert_int_equal(kc_load_default("ctx", &c, err, sizeof err), -ENOENT);
    assert_string_equal(err, "no kubeconfig found ($KUBECONFIG is not set and ~/.kube/config does "
                             "not exist), so context \"ctx\" cannot be selected");
    setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b", 1);
    assert_int_equal(kc_load_default(NULL, &c, err, sizeof err), -ENOENT);
    assert_contains(err, "no kubeconfig found (none of the files in $KUBECONFIG exists)");
    unsetenv("KUBECONFIG");

    /* ~/.kube/config. */
    snprintf(sub, sizeof sub, "%s/.kube", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_str(sub, "config", SIMPLE);
    assert_int_equal(kc_load_default(NULL, &c, err, sizeof err), 0);
    assert_string_equal(c->server, "https://k.example.com:6443");
    assert_string_equal(c->token, "tok");
    c = kc_config_free(c);

    if (old_home)
        setenv("HOME", old_home, 1);
    else
        unsetenv("HOME");
    free(old_home);
    rm_rf(dir);
}

static void test_in_cluster(void **state)
{
    struct kc_config *c = NULL;
    char dir[256], err[KC_ERR_LEN], path[512];

    (void)state;
    clear_env();
    make_tmpdir(dir, sizeof dir);

    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), -ENOENT);
    assert_string_equal(err, "in-cluster: KUBERNETES_SERVICE_HOST is not set (not running in a "
                             "Kubernetes pod?)");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), -ENOENT);
    assert_string_equal(err, "in-cluster: KUBERNETES_SERVICE_PORT is not set (not running in a "
                             "Kubernetes pod?)");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);

    /* The token is required. */
    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), -ENOENT);
    assert_contains(err, "in-cluster: token: cannot read \"");
    assert_contains(err, "/token\": No such file or directory");
    assert_null(c);

    /* Token only: no CA (system trust store), namespace "default". */
    write_str(dir, "token", "sa-token\n");
    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), 0);
    assert_string_equal(c->server, "https://10.96.0.1:443");
    assert_string_equal(c->token, "sa-token");
    snprintf(path, sizeof path, "%s/token", dir);
    assert_string_equal(c->token_file, path);
    assert_null(c->ca_pem);
    assert_string_equal(c->namespace, "default");
    assert_string_equal(c->context_name, "in-cluster");
    assert_false(c->insecure_skip_tls_verify);
    c = kc_config_free(c);

    /* Everything, with an IPv6 service address. */
    {
        size_t len;
        char *ca = slurp(DATA "/ca.crt", &len);

        write_file(dir, "ca.crt", ca, len);
        free(ca);
    }
    write_str(dir, "namespace", "team-b\n");
    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), 0);
    assert_string_equal(c->server, "https://[fd00:10:96::1]:6443");
    assert_string_equal(c->namespace, "team-b");
    assert_file_bytes(c->ca_pem, c->ca_pem_len, DATA "/ca.crt");
    c = kc_config_free(c);

    /* A bad port or namespace file. */
    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), -EINVAL);
    assert_string_equal(err, "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT do "
                             "not form a valid URL (got \"fd00:10:96::1\" and \"https\")");
    setenv("KUBERNETES_SERVICE_PORT", "0", 1);
    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), -EINVAL);
    assert_string_equal(err, "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT do "
                             "not form a valid URL: server has an invalid port (got "
                             "\"https://[fd00:10:96::1]:0\")");
    setenv("KUBERNETES_SERVICE_HOST", "evil.example.com/x", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), -EINVAL);
    assert_contains(err, "do not form a valid URL (got \"evil.example.com/x\" and \"443\")");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);

    /* Out of memory at every step: -ENOMEM, nothing leaked. */
    {
        int r = -ENOMEM;

        for (long n = 0; r == -ENOMEM; n++) {
            xalloc_fail_after(n);
            r = kc_load_in_cluster_from(dir, &c, err, sizeof err);
            xalloc_fail_after(-1);
            if (r == -ENOMEM)
                assert_string_equal(err, "in-cluster: out of memory");
        }
        assert_int_equal(r, 0);
        assert_string_equal(c->namespace, "team-b");
        c = kc_config_free(c);
    }

    write_str(dir, "namespace", "Not/Valid\n");
    assert_int_equal(kc_load_in_cluster_from(dir, &c, err, sizeof err), -EINVAL);
    assert_contains(err, "in-cluster: namespace: \"");
    assert_contains(err, "/namespace\" does not hold a valid namespace name");
    assert_null(c);

    /* The real path: not in a pod here unless the directory exists. */
    if (access(KC_IN_CLUSTER_DIR "/token", R_OK) != 0) {
        assert_int_equal(kc_load_in_cluster(&c, err, sizeof err), -ENOENT);
        assert_contains(err, "in-cluster: token: cannot read \"" KC_IN_CLUSTER_DIR "/token\"");
    }
    clear_env();
    rm_rf(dir);
}

static void test_oversized(void **state)
{
    struct kc_config *c = NULL;
    char dir[256], path[512], err[KC_ERR_LEN], want[1024];
    size_t big = KC_MAX_FILE_SIZE + 1;
    char *data = malloc(big);

    (void)state;
    assert_non_null(data);
    memset(data, '#', big);
    make_tmpdir(dir, sizeof dir);
    write_file(dir, "config", data, big);
    snprintf(path, sizeof path, "%s/config", dir);
    assert_int_equal(kc_load_file(path, NULL, &c, err, sizeof err), -E2BIG);
    snprintf(want, sizeof want, "%s: kubeconfig is too large (more than 4194304 bytes)", path);
    assert_string_equal(err, want);
    assert_int_equal(kc_load_mem(data, big, "blob", NULL, NULL, &c, err, sizeof err), -E2BIG);
    assert_string_equal(err, "blob: kubeconfig is too large (more than 4194304 bytes)");
    /* Exactly at the limit is fine (a comment-only document is an empty configuration). */
    assert_int_equal(kc_load_mem(data, big - 1, "blob", NULL, NULL, &c, err, sizeof err), -EINVAL);
    assert_string_equal(err, "blob: current-context is not set and no context was requested");

    /* A referenced file over 1 MiB. */
    write_file(dir, "ca.crt", data, KC_MAX_REF_FILE_SIZE + 1);
    write_str(dir, "config",
              "current-context: d\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
              "    certificate-authority: ca.crt\ncontexts:\n- name: d\n  context: {cluster: c}\n");
    assert_int_equal(kc_load_file(path, NULL, &c, err, sizeof err), -E2BIG);
    assert_contains(err, "config: cluster \"c\": certificate-authority: \"");
    assert_contains(err, "/ca.crt\" is too large (more than 1048576 bytes)");
    assert_null(c);
    free(data);
    rm_rf(dir);
}

static void test_alias_expansion_bounded(void **state)
{
    /* One 1 MiB scalar named by an alias in 12 entries: within the input cap, but 12 MiB of
     * copies. */
    size_t scalar = 1u << 20, len = 0;
    char *yaml = malloc(scalar + 1024);
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN];

    (void)state;
    assert_non_null(yaml);
    len += (size_t)snprintf(yaml, 64, "x: &big ");
    memset(yaml + len, 'A', scalar);
    len += scalar;
    len += (size_t)snprintf(yaml + len, 64, "\nclusters:\n");
    for (int i = 0; i < 12; i++)
        len += (size_t)snprintf(yaml + len, 128, "- {name: c%d, cluster: {server: *big}}\n", i);
    assert_int_equal(kc_load_mem(yaml, len, "/x/config", NULL, NULL, &c, err, sizeof err), -E2BIG);
    assert_contains(err, "/x/config: clusters[");
    assert_contains(err, "].cluster.server: the document expands to too much data");
    free(yaml);
}

static void test_yaml_limits(void **state)
{
    size_t n = 500001, len = 0;
    char *yaml = malloc(2 * n + 16);
    char deep[256];

    (void)state;
    assert_non_null(yaml);
    /* Nesting: a kubeconfig needs 6 levels. */
    len = (size_t)snprintf(deep, sizeof deep, "current-context:\n  ");
    memset(deep + len, '[', 65);
    deep[len + 65] = '\0';
    expect_err(deep, NULL, -E2BIG, "/x/config: YAML nested deeper than 64 levels at line 2");
    memset(deep + len, '[', 60);
    memset(deep + len + 60, ']', 60);
    deep[len + 120] = '\0';
    expect_err(deep, NULL, -EINVAL,
               "/x/config: current-context: expected a string, got a sequence");

    /* Node count: tiny nodes would cost ~100 bytes each. */
    len = 0;
    yaml[len++] = '[';
    for (size_t i = 0; i < n; i++) {
        yaml[len++] = 'a';
        yaml[len++] = ',';
    }
    yaml[len - 1] = ']';
    yaml[len] = '\0';
    expect_err(yaml, NULL, -E2BIG, "/x/config: YAML has more than 500000 nodes");
    free(yaml);
}

static void test_err_buffer_and_ret(void **state)
{
    struct kc_config *c = (struct kc_config *)(uintptr_t)0x1;
    char small[12];

    (void)state;
    /* ret untouched on failure; err truncated but terminated; NULL err accepted. */
    assert_int_equal(
        kc_load_mem("clusters: 3\n", 12, "/x/config", NULL, NULL, &c, small, sizeof small),
        -EINVAL);
    assert_string_equal(small, "/x/config: ");
    assert_int_equal(kc_load_mem("clusters: 3\n", 12, NULL, NULL, NULL, &c, NULL, 0), -EINVAL);
    assert_int_equal(kc_load_mem(SIMPLE, strlen(SIMPLE), NULL, NULL, "nope", &c, small, 0),
                     -EINVAL);
    assert_ptr_equal(c, (struct kc_config *)(uintptr_t)0x1);
}

/* Every allocation failure is reported as -ENOMEM with nothing leaked (ASan checks). */
static void test_out_of_memory(void **state)
{
    struct kc_config *c = NULL;
    char err[KC_ERR_LEN];
    int r = -ENOMEM;

    (void)state;
    for (long n = 0; r == -ENOMEM; n++) {
        xalloc_fail_after(n);
        r = kc_load_file(DATA "/inline.yaml", NULL, &c, err, sizeof err);
        xalloc_fail_after(-1);
        if (r == -ENOMEM) {
            assert_string_equal(err, DATA "/inline.yaml: out of memory");
            assert_null(c);
        }
        assert_true(n < 10000);
    }
    assert_int_equal(r, 0);
    c = kc_config_free(c);

    clear_env();
    setenv("KUBECONFIG", DATA "/merge-a.yaml:" DATA "/sub/merge-b.yaml:" DATA "/files.yaml", 1);
    r = -ENOMEM;
    for (long n = 0; r == -ENOMEM; n++) {
        xalloc_fail_after(n);
        r = kc_load_default("ctx-b-only", &c, err, sizeof err);
        xalloc_fail_after(-1);
        assert_true(n < 10000);
    }
    assert_int_equal(r, 0);
    assert_string_equal(c->token, "file-token-123");
    kc_config_free(c);
    clear_env();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inline_data),
        cmocka_unit_test(test_file_paths_relative),
        cmocka_unit_test(test_file_paths_absolute),
        cmocka_unit_test(test_missing_referenced_file),
        cmocka_unit_test(test_token_and_token_file),
        cmocka_unit_test(test_named_and_current_context),
        cmocka_unit_test(test_missing_context),
        cmocka_unit_test(test_insecure),
        cmocka_unit_test(test_peer),
        cmocka_unit_test(test_peer_conn),
        cmocka_unit_test(test_malformed_yaml),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_bad_base64),
        cmocka_unit_test(test_missing_fields),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_server_urls),
        cmocka_unit_test(test_namespace),
        cmocka_unit_test(test_unsupported_users),
        cmocka_unit_test(test_mem_refuses_file_references),
        cmocka_unit_test(test_kubeconfig_merge),
        cmocka_unit_test(test_default_home_and_fallback),
        cmocka_unit_test(test_in_cluster),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_alias_expansion_bounded),
        cmocka_unit_test(test_yaml_limits),
        cmocka_unit_test(test_err_buffer_and_ret),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
