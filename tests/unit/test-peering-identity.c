#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "peering/identity.h"
#include "kube/names.h"

static void test_uuid_v4(void **state)
{
    char a[PEER_UUID_LEN + 1], b[PEER_UUID_LEN + 1];

    (void)state;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(peer_uuid_v4(a), 0);
        assert_int_equal(strlen(a), PEER_UUID_LEN);
        for (int k = 0; k < PEER_UUID_LEN; k++) {
            if (k == 8 || k == 13 || k == 18 || k == 23)
                assert_int_equal(a[k], '-');
            else
                assert_non_null(strchr("0123456789abcdef", a[k]));
        }
        assert_int_equal(a[14], '4');           /* version */
        assert_non_null(strchr("89ab", a[19])); /* variant */
        assert_true(peer_cluster_id_valid(a));
    }
    assert_int_equal(peer_uuid_v4(b), 0);
    assert_string_not_equal(a, b);
}

static void test_label_rules(void **state)
{
    static const char *const good[] = {
        "a",
        "0",
        "a-b",
        "abc-123",
        "7d3f4c5e-8a2b-4c1d-9e0f-123456789abc",
        "a--b",
        "123456789012345678901234567890123456789012345678901234567890123", /* 63 */
    };
    static const char *const bad[] = {
        "",    "-a",
        "a-",  "A",
        "a_b", "a.b",
        "a b", "é",
        "a\n", "1234567890123456789012345678901234567890123456789012345678901234", /* 64 */
    };

    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_true(peer_cluster_id_valid(good[i]));
        assert_true(peer_cluster_name_valid(good[i]));
        assert_true(kname_dns_label(good[i]));
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(peer_cluster_id_valid(bad[i]));
        assert_false(peer_cluster_name_valid(bad[i]));
        assert_false(kname_dns_label(bad[i]));
    }
    assert_false(peer_cluster_id_valid(NULL));
    assert_false(kname_dns_label(NULL));
}

static void test_tenant_namespace(void **state)
{
    char ns[PEER_NAME_MAX + 1];
    const char *id = "7d3f4c5e-8a2b-4c1d-9e0f-123456789abc";
    /* printf %s 7d3f4c5e-8a2b-4c1d-9e0f-123456789abc | sha256sum | cut -c1-6 */
    const char *h = "8c8825";
    char want[128];

    (void)state;
    snprintf(want, sizeof want, "cliqo-tenant-cluster-b-%s", h);
    assert_int_equal(peer_tenant_namespace(id, "cluster-b", ns), 0);
    assert_string_equal(ns, want);
    assert_true(kname_dns_label(ns));

    /* printf %s cluster-1 | sha256sum | cut -c1-6 */
    assert_int_equal(peer_tenant_namespace("cluster-1", "x", ns), 0);
    snprintf(want, sizeof want, "cliqo-tenant-x-%s", "4afb32");
    assert_string_equal(ns, want);

    /* Sanitised: upper case lowered, others to '-', ends trimmed. */
    assert_int_equal(peer_tenant_namespace(id, "_My.Cluster_", ns), 0);
    snprintf(want, sizeof want, "cliqo-tenant-my-cluster-%s", h);
    assert_string_equal(ns, want);

    /* No usable name: the name part is left out. */
    snprintf(want, sizeof want, "cliqo-tenant-%s", h);
    assert_int_equal(peer_tenant_namespace(id, NULL, ns), 0);
    assert_string_equal(ns, want);
    assert_int_equal(peer_tenant_namespace(id, "", ns), 0);
    assert_string_equal(ns, want);
    assert_int_equal(peer_tenant_namespace(id, "...", ns), 0);
    assert_string_equal(ns, want);

    /* Long: the name is cut to 43, never the hash; exactly 63 in all. */
    assert_int_equal(
        peer_tenant_namespace(id, "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghij", ns), 0);
    snprintf(want, sizeof want, "cliqo-tenant-abcdefghij-abcdefghij-abcdefghij-abcdefghij-%s", h);
    assert_string_equal(ns, want);
    assert_int_equal(strlen(ns), 63);
    assert_true(kname_dns_label(ns));

    /* A cut that ends on '-' is trimmed. */
    assert_int_equal(
        peer_tenant_namespace(id, "abcdefghij-abcdefghij-abcdefghij-abcdefghi-xyz", ns), 0);
    snprintf(want, sizeof want, "cliqo-tenant-abcdefghij-abcdefghij-abcdefghij-abcdefghi-%s", h);
    assert_string_equal(ns, want);

    /* Every name gives a valid namespace. */
    for (int c = 1; c < 256; c++) {
        char name[80];

        memset(name, c, sizeof name - 1);
        name[sizeof name - 1] = '\0';
        assert_int_equal(peer_tenant_namespace(id, name, ns), 0);
        assert_true(kname_dns_label(ns));
        assert_true(strlen(ns) <= PEER_NAME_MAX);
    }

    /* The ID must be valid. */
    snprintf(ns, sizeof ns, "untouched");
    assert_int_equal(peer_tenant_namespace("Bad_ID", "x", ns), -EINVAL);
    assert_int_equal(peer_tenant_namespace(NULL, "x", ns), -EINVAL);
    assert_string_equal(ns, "untouched");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid_v4),
        cmocka_unit_test(test_label_rules),
        cmocka_unit_test(test_tenant_namespace),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
