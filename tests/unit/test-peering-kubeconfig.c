#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "kube/kubeconfig.h"
#include "peering/kubeconfig_out.h"
#include "peering/pki.h"

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fail_msg("\"%s\" does not contain \"%s\"", (hay), (needle));                           \
    } while (0)

#define TOKEN "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJl"

struct fixture {
    char *ca, *cakey;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (!f || peer_pki_ca_create("kube-ca", 1, &f->ca, &f->cakey, NULL, 0) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    x_free(f->ca);
    x_free(f->cakey);
    free(f);
    return 0;
}

static struct peer_kubeconfig_params params(const struct fixture *f)
{
    struct peer_kubeconfig_params p = {
        .server = "https://192.0.2.10:6443",
        .ca_pem = f->ca,
        .ca_pem_len = strlen(f->ca),
        .token = TOKEN,
        .namespace = "cliqo-tenant-cluster-a-4afb32",
        .cluster_name = "cluster-b",
    };
    return p;
}

static void test_round_trip(void **state)
{
    struct fixture *f = *state;
    struct peer_kubeconfig_params p = params(f);
    struct kc_config *c = NULL;
    char *kc = NULL, err[KC_ERR_LEN];

    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(kc[0], '{');
    assert_int_equal(kc_load_mem(kc, strlen(kc), "out", NULL, NULL, &c, err, sizeof err), 0);
    assert_string_equal(c->server, p.server);
    assert_string_equal(c->context_name, "cliqo-cluster-b");
    assert_string_equal(c->cluster_name, "cliqo-cluster-b");
    assert_string_equal(c->user_name, "cliqo-cluster-b");
    assert_string_equal(c->namespace, p.namespace);
    assert_string_equal(c->token, TOKEN);
    assert_int_equal(c->ca_pem_len, strlen(f->ca));
    assert_memory_equal(c->ca_pem, f->ca, strlen(f->ca));
    assert_false(c->insecure_skip_tls_verify);
    assert_null(c->cert_pem);
    assert_null(c->token_file);
    kc_config_free(c);
    x_free(kc);

    /* Without a CA: no certificate-authority-data, system trust. */
    p.ca_pem = NULL;
    p.ca_pem_len = 0;
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), 0);
    assert_null(strstr(kc, "certificate-authority"));
    assert_int_equal(kc_load_mem(kc, strlen(kc), "out", NULL, NULL, &c, err, sizeof err), 0);
    assert_null(c->ca_pem);
    assert_false(c->insecure_skip_tls_verify);
    kc_config_free(c);
    x_free(kc);
}

static void test_errors(void **state)
{
    struct fixture *f = *state;
    struct peer_kubeconfig_params p;
    char *kc = (char *)"untouched", err[KC_ERR_LEN];

    p = params(f);
    p.server = "http://192.0.2.10:6443"; /* clear text off loopback */
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), -EINVAL);
    assert_contains(err, "server");
    p = params(f);
    p.server = "https://user:pw@h";
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), -EINVAL);
    p = params(f);
    p.server = "";
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), -EINVAL);
    p = params(f);
    p.token = "two words";
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), -EINVAL);
    assert_contains(err, "token");
    p = params(f);
    p.token = NULL;
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), -EINVAL);
    p = params(f);
    p.namespace = "Bad";
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), -EINVAL);
    assert_contains(err, "namespace");
    p = params(f);
    p.cluster_name = "a.b";
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), -EINVAL);
    assert_contains(err, "cluster name");
    p = params(f);
    p.ca_pem_len = PEER_KUBECONFIG_CA_MAX + 1;
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), -E2BIG);
    assert_int_equal(peer_kubeconfig_build(NULL, &kc, err, sizeof err), -EINVAL);
    p = params(f);
    p.token = "\xff\xfe";
    assert_int_equal(peer_kubeconfig_build(&p, &kc, NULL, 0), -EINVAL);
    assert_string_equal(kc, "untouched");
}

static void test_kubectl_accepts(void **state)
{
    struct fixture *f = *state;
    struct peer_kubeconfig_params p = params(f);
    char dir[] = "/tmp/test-peering-kc.XXXXXX", path[128], cmd[1024], out[4096];
    char *kc = NULL, err[KC_ERR_LEN];
    FILE *fp;
    size_t n;
    int st;

    if (system("command -v kubectl >/dev/null 2>&1") != 0)
        skip();
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), 0);
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/kubeconfig.json", dir);
    fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(kc, 1, strlen(kc), fp), strlen(kc));
    assert_int_equal(fclose(fp), 0);
    snprintf(cmd, sizeof cmd,
             "kubectl --kubeconfig '%s' config view --raw -o jsonpath="
             "'{.current-context} {.contexts[0].context.namespace} {.clusters[0].cluster.server} "
             "{.users[0].user.token} {.contexts[0].context.user}' 2>&1 && "
             "kubectl --kubeconfig '%s' config view --raw --minify --flatten -o jsonpath="
             "'|{.clusters[0].cluster.certificate-authority-data}' 2>&1",
             path, path);
    fp = popen(cmd, "r");
    assert_non_null(fp);
    n = fread(out, 1, sizeof out - 1, fp);
    out[n] = '\0';
    st = pclose(fp);
    unlink(path);
    rmdir(dir);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("kubectl failed: %s", out);
    assert_contains(out,
                    "cliqo-cluster-b cliqo-tenant-cluster-a-4afb32 https://192.0.2.10:6443 " TOKEN
                    " cliqo-cluster-b|LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t");
    x_free(kc);
}

static void test_oom(void **state)
{
    struct fixture *f = *state;
    struct peer_kubeconfig_params p = params(f);
    int r = -ENOMEM;

    for (long n = 0; r == -ENOMEM; n++) {
        char *kc = NULL;

        xalloc_fail_after(n);
        r = peer_kubeconfig_build(&p, &kc, NULL, 0);
        xalloc_fail_after(-1);
        assert_true(r == 0 || r == -ENOMEM);
        x_free(kc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_kubectl_accepts),
        cmocka_unit_test(test_oom),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
