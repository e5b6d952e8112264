/* Unit tests of src/admission/quota.c: the ResourceQuota of a consumer namespace from its offer,
 * the tenant namespaces' object counts, the LimitRange defaults from the ClusterConfig, and the
 * comparisons that keep the controller from rewriting equal objects. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/quota.h"
#include "peering/resources.h"

static void test_keys(void **state)
{
    static const struct {
        const char *resource, *key; /* key NULL: not held by the quota */
    } cases[] = {
        {"pods", "pods"},
        {"cpu", "requests.cpu"},
        {"memory", "requests.memory"},
        {"ephemeral-storage", "requests.ephemeral-storage"},
        {"hugepages-2Mi", "requests.hugepages-2Mi"},
        {"nvidia.com/gpu", "requests.nvidia.com/gpu"},
        {"example.org/fpga-x", "requests.example.org/fpga-x"},
        {"attachable-volumes-aws-ebs", NULL},
        {"storage", NULL},
        {"kubernetes.io/batch-cpu", NULL},
        {"", NULL},
        {"cpu ", NULL},
        {"bad\"name", NULL},
    };
    char buf[256];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *k = adm_quota_key(cases[i].resource, buf, sizeof(buf));

        if (!cases[i].key) {
            if (k)
                fail_msg("case %zu (%s): got %s, want none", i, cases[i].resource, k);
            continue;
        }
        if (!k || strcmp(k, cases[i].key) != 0)
            fail_msg("case %zu (%s): got %s, want %s", i, cases[i].resource, k ? k : "none",
                     cases[i].key);
    }
    assert_null(adm_quota_key("cpu", buf, 16)); /* buffer too small */
}

static void test_consumer_hard(void **state)
{
    static const struct {
        const char *offer; /* NULL: no offer known */
        const char *want;  /* the offer's part of spec.hard */
        bool bad;
    } cases[] = {
        {NULL, "{}", false},
        {"{}", "{}", false},
        {"{'cpu':'2800m','memory':'4Gi','pods':'110'}",
         "{'requests.cpu':'2800m','requests.memory':'4Gi','pods':'110'}", false},
        /* Canonical forms, as the API server stores them. */
        {"{'cpu':'1000m','memory':'1024Ki'}", "{'requests.cpu':'1','requests.memory':'1Mi'}",
         false},
        {"{'nvidia.com/gpu':'2','ephemeral-storage':'10G','hugepages-1Gi':'0'}",
         "{'requests.nvidia.com/gpu':'2','requests.ephemeral-storage':'10G',"
         "'requests.hugepages-1Gi':'0'}",
         false},
        /* Names a quota cannot hold are left to the webhook; malformed amounts are reported. */
        {"{'attachable-volumes-csi-x':'39','cpu':'-1'}", "{}", true},
        {"{'cpu':5,'memory':'lots'}", "{}", true},
        {"[]", "{}", true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *offer = cases[i].offer ? test_js(cases[i].offer) : NULL;
        json_t *want = test_js(cases[i].want);
        bool bad = !cases[i].bad;
        json_t *hard = adm_quota_consumer_hard(offer, &bad);

        assert_non_null(hard);
        json_object_set_new(want, "count/configmaps", json_string(ADM_QUOTA_CONFIGMAPS));
        json_object_set_new(want, "count/secrets", json_string(ADM_QUOTA_SECRETS));
        json_object_set_new(want, "count/services", json_string(ADM_QUOTA_SERVICES));
        json_object_set_new(want, "count/endpointslices.discovery.k8s.io",
                            json_string(ADM_QUOTA_ENDPOINTSLICES));
        json_object_set_new(want, "services.loadbalancers", json_string("0"));
        json_object_set_new(want, "services.nodeports", json_string("0"));
        if (!json_equal(hard, want)) {
            char *g = json_dumps(hard, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);

            fail_msg("case %zu: got %s, want %s", i, g, w);
        }
        if (bad != cases[i].bad)
            fail_msg("case %zu: bad %d, want %d", i, bad, cases[i].bad);
        json_decref(hard);
        json_decref(want);
        json_decref(offer);
    }
}

static void test_tenant_hard(void **state)
{
    json_t *h = peer_tenant_quota_hard();
    const char *k;
    json_t *v;

    (void)state;
    assert_non_null(h);
    /* The built-in kinds of a tenant namespace are counted (cliqo's own by the webhook). */
    assert_non_null(json_object_get(h, "count/secrets"));
    assert_non_null(json_object_get(h, "count/configmaps"));
    assert_non_null(json_object_get(h, "count/serviceaccounts"));
    json_object_foreach(h, k, v)
    {
        assert_true(json_is_string(v));
        assert_true(atoi(json_string_value(v)) > 0);
    }
    json_decref(h);
}

static void test_limitrange(void **state)
{
    static const struct {
        const char *config;
        const char *cpu, *memory;
        bool bad;
    } cases[] = {
        {NULL, ADM_DEFAULT_CPU, ADM_DEFAULT_MEMORY, false},
        {"{'spec':{}}", ADM_DEFAULT_CPU, ADM_DEFAULT_MEMORY, false},
        {"{'spec':{'offloadingConfig':{'defaultRequests':{'cpu':'250m'}}}}", "250m",
         ADM_DEFAULT_MEMORY, false},
        {"{'spec':{'offloadingConfig':{'defaultRequests':{'cpu':'0.5','memory':'1Gi'}}}}", "500m",
         "1Gi", false},
        {"{'spec':{'offloadingConfig':{'defaultRequests':{'cpu':'x','memory':'-1Gi'}}}}",
         ADM_DEFAULT_CPU, ADM_DEFAULT_MEMORY, true},
        {"{'spec':{'offloadingConfig':{'defaultRequests':'1'}}}", ADM_DEFAULT_CPU,
         ADM_DEFAULT_MEMORY, true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *cc = cases[i].config ? test_js(cases[i].config) : NULL;
        bool bad = !cases[i].bad;
        json_t *spec = adm_limitrange_spec(cc, &bad);
        const json_t *e = json_array_get(json_object_get(spec, "limits"), 0);
        const json_t *dr = json_object_get(e, "defaultRequest");

        assert_non_null(spec);
        assert_int_equal(json_array_size(json_object_get(spec, "limits")), 1);
        assert_string_equal(json_string_value(json_object_get(e, "type")), "Container");
        assert_null(json_object_get(e, "default")); /* requests only: no limits imposed */
        assert_string_equal(json_string_value(json_object_get(dr, "cpu")), cases[i].cpu);
        assert_string_equal(json_string_value(json_object_get(dr, "memory")), cases[i].memory);
        if (bad != cases[i].bad)
            fail_msg("case %zu: bad %d, want %d", i, bad, cases[i].bad);
        json_decref(spec);
        json_decref(cc);
    }
}

static void test_equal(void **state)
{
    static const struct {
        const char *a, *b;
        bool equal;
    } cases[] = {
        {"{'cpu':'1'}", "{'cpu':'1000m'}", true},
        {"{'memory':'1Gi'}", "{'memory':'1073741824'}", true},
        {"{'cpu':'1'}", "{'cpu':'1001m'}", false},
        {"{'cpu':'1'}", "{'cpu':'1','pods':'1'}", false},
        {"{'cpu':'1','pods':'2'}", "{'cpu':'1','memory':'2'}", false},
        {"{'x':'junk'}", "{'x':'junk'}", true},
        {"{'x':'junk'}", "{'x':'other'}", false},
        {"{}", "{}", true},
        {"{}", "null", false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *a = test_js(cases[i].a), *b = test_js(cases[i].b);

        if (adm_quantities_equal(a, b) != cases[i].equal)
            fail_msg("case %zu: %s vs %s", i, cases[i].a, cases[i].b);
        if (adm_quantities_equal(b, a) != cases[i].equal)
            fail_msg("case %zu (reversed): %s vs %s", i, cases[i].a, cases[i].b);
        json_decref(a);
        json_decref(b);
    }
}

static void test_limitrange_equal(void **state)
{
    static const struct {
        const char *observed;
        bool equal;
    } cases[] = {
        {"{'limits':[{'type':'Container','defaultRequest':{'cpu':'100m','memory':'128Mi'}}]}",
         true},
        {"{'limits':[{'type':'Container','defaultRequest':{'cpu':'0.1','memory':'134217728'}}]}",
         true},
        {"{'limits':[{'type':'Container','defaultRequest':{'cpu':'200m','memory':'128Mi'}}]}",
         false},
        /* Someone added a maximum: ours again. */
        {"{'limits':[{'type':'Container','defaultRequest':{'cpu':'100m','memory':'128Mi'},"
         "'max':{'cpu':'1'}}]}",
         false},
        {"{'limits':[{'type':'Pod','defaultRequest':{'cpu':'100m','memory':'128Mi'}}]}", false},
        {"{'limits':[]}", false},
        {"{}", false},
    };
    json_t *desired = adm_limitrange_spec(NULL, NULL);

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = test_js(cases[i].observed);

        if (adm_limitrange_equal(desired, o) != cases[i].equal)
            fail_msg("case %zu: %s", i, cases[i].observed);
        json_decref(o);
    }
    json_decref(desired);
}

static void test_merge_patch(void **state)
{
    json_t *d = test_js("{'pods':'10','requests.cpu':'2'}");
    json_t *o = test_js("{'pods':'5','requests.memory':'1Gi'}");
    json_t *want = test_js("{'pods':'10','requests.cpu':'2','requests.memory':null}");
    json_t *p = adm_quantities_merge_patch(d, o);

    (void)state;
    assert_true(json_equal(p, want));
    json_decref(p);
    p = adm_quantities_merge_patch(d, NULL);
    assert_true(json_equal(p, d));
    json_decref(p);
    json_decref(d);
    json_decref(o);
    json_decref(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),        cmocka_unit_test(test_consumer_hard),
        cmocka_unit_test(test_tenant_hard), cmocka_unit_test(test_limitrange),
        cmocka_unit_test(test_equal),       cmocka_unit_test(test_limitrange_equal),
        cmocka_unit_test(test_merge_patch),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
