#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/manifests.h"

/* The apply order of deploy/deploy.cmake: CRDs (sorted by file name), then the rest. */
static const char *const expected[] = {
    "crds/config.liqo.io_clusterconfigs.yaml",
    "crds/discovery.liqo.io_foreignclusters.yaml",
    "crds/discovery.liqo.io_peeringrequests.yaml",
    "crds/discovery.liqo.io_searchdomains.yaml",
    "crds/net.liqo.io_networkconfigs.yaml",
    "crds/net.liqo.io_tunnelendpoints.yaml",
    "crds/offloading.liqo.io_namespaceoffloadings.yaml",
    "crds/sharing.liqo.io_advertisements.yaml",
    "crds/virtualkubelet.liqo.io_namespacemaps.yaml",
    "crds/virtualkubelet.liqo.io_namespacenattingtables.yaml",
    "namespace.yaml",
    "rbac.yaml",
    "serviceaccount.yaml",
    "clusterconfig.yaml",
    "service.yaml",
    "deployment.yaml",
    "node.yaml",
};
#define N_EXPECTED (sizeof(expected) / sizeof(expected[0]))

static const char *manifest(const char *name)
{
    for (size_t i = 0; i < cliqo_manifests_count; i++)
        if (strcmp(cliqo_manifests[i].name, name) == 0)
            return cliqo_manifests[i].yaml;
    return NULL;
}

/* A whole file, NUL-terminated; NULL if it cannot be read. */
static char *read_file(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL, *p;
    size_t len = 0, cap = 0, n;

    if (!f)
        return NULL;
    do {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 65536;
            p = realloc(buf, cap + 1);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    if (buf) {
        buf[len] = '\0';
        *ret_len = len;
    }
    return buf;
}

static void test_order(void **state)
{
    (void)state;
    assert_int_equal(cliqo_manifests_count, N_EXPECTED);
    for (size_t i = 0; i < N_EXPECTED; i++)
        assert_string_equal(cliqo_manifests[i].name, expected[i]);
}

static void test_content(void **state)
{
    (void)state;
    for (size_t i = 0; i < cliqo_manifests_count; i++) {
        const char *y = cliqo_manifests[i].yaml;
        size_t len;

        assert_non_null(y);
        len = strlen(y);
        assert_true(len > 100);
        assert_non_null(strstr(y, "apiVersion: "));
        assert_non_null(strstr(y, "\nkind: "));
        assert_int_equal(y[len - 1], '\n');
        /* Plain ASCII, no tabs: safe for any YAML reader, printable as is. */
        for (size_t j = 0; j < len; j++)
            assert_true(y[j] == '\n' || (y[j] >= ' ' && y[j] <= '~'));
    }
}

/* Each embedded text is exactly the file in deploy/ (the escaping loses nothing). */
static void test_identical_to_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < cliqo_manifests_count; i++) {
        char path[4096];
        size_t len = 0;
        char *text;

        snprintf(path, sizeof(path), "%s/%s", CLIQO_DEPLOY_DIR, cliqo_manifests[i].name);
        text = read_file(path, &len);
        assert_non_null(text);
        assert_int_equal(strlen(cliqo_manifests[i].yaml), len);
        assert_memory_equal(cliqo_manifests[i].yaml, text, len);
        free(text);
    }
}

/* crds/<group>_<plural>.yaml defines <plural>.<group>, and every CRD comes before everything else.
 */
static void test_crds(void **state)
{
    int crds_done = 0;

    (void)state;
    for (size_t i = 0; i < cliqo_manifests_count; i++) {
        const char *name = cliqo_manifests[i].name, *y = cliqo_manifests[i].yaml;
        char group[128], plural[128], want[300];
        const char *base, *us, *dot;

        if (strncmp(name, "crds/", 5) != 0) {
            crds_done = 1;
            assert_null(strstr(y, "kind: CustomResourceDefinition"));
            continue;
        }
        assert_false(crds_done);
        base = name + 5;
        us = strchr(base, '_');
        dot = strrchr(base, '.');
        assert_non_null(us);
        assert_non_null(dot);
        assert_true((size_t)(us - base) < sizeof(group) && (size_t)(dot - us - 1) < sizeof(plural));
        snprintf(group, sizeof(group), "%.*s", (int)(us - base), base);
        snprintf(plural, sizeof(plural), "%.*s", (int)(dot - us - 1), us + 1);
        assert_non_null(strstr(y, "\nkind: CustomResourceDefinition\n"));
        snprintf(want, sizeof(want), "\n  name: %s.%s\n", plural, group);
        assert_non_null(strstr(y, want));
        snprintf(want, sizeof(want), "\n  group: %s\n", group);
        assert_non_null(strstr(y, want));
        snprintf(want, sizeof(want), "\n    plural: %s\n", plural);
        assert_non_null(strstr(y, want));
        assert_non_null(strstr(y, "categories: [cliqo]"));
        assert_non_null(strstr(y, "subresources:\n      status: {}"));
    }
}

/* The image tag and version label follow the project version. */
static void test_deployment_version(void **state)
{
    const char *d = manifest("deployment.yaml");

    (void)state;
    assert_non_null(d);
    assert_non_null(strstr(d, "image: cliqo/cliqo-agent:" CLIQO_VERSION "\n"));
    assert_non_null(strstr(d, "app.kubernetes.io/version: " CLIQO_VERSION "\n"));
    assert_non_null(strstr(d, "serviceAccountName: cliqo-agent\n"));
    assert_non_null(strstr(manifest("namespace.yaml"), "\n  name: cliqo\n"));
    assert_non_null(strstr(manifest("clusterconfig.yaml"), "\n  name: configuration\n"));
    assert_non_null(strstr(manifest("rbac.yaml"), "\n  name: cliqo-remote-peering\n"));
    d = manifest("node.yaml");
    assert_non_null(d);
    assert_non_null(strstr(d, "image: cliqo/cliqo-agent:" CLIQO_VERSION "\n"));
    assert_non_null(strstr(d, "app.kubernetes.io/version: " CLIQO_VERSION "\n"));
    assert_non_null(strstr(d, "serviceAccountName: cliqo-node\n"));
    assert_non_null(strstr(manifest("serviceaccount.yaml"), "\n  name: cliqo-node\n"));
    assert_non_null(strstr(manifest("rbac.yaml"), "\n  name: cliqo-node\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_content),
        cmocka_unit_test(test_identical_to_files),
        cmocka_unit_test(test_crds),
        cmocka_unit_test(test_deployment_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
