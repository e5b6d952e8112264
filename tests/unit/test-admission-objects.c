/* Unit tests of src/admission/objects.c: whose writes are checked, and the Services,
 * EndpointSlices and Secrets a peer's credential may write, with the field each refusal names. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testjson.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/objects.h"

static void expect(int r, const char *msg, const char *want, size_t i)
{
    if (!want) {
        if (r != 0)
            fail_msg("case %zu: refused: %s", i, msg);
        return;
    }
    if (r != -EPERM)
        fail_msg("case %zu: allowed, want a refusal with '%s'", i, want);
    if (!strstr(msg, want))
        fail_msg("case %zu: '%s' does not contain '%s'", i, msg, want);
    assert_null(strchr(msg, '\n'));
}

static void test_users(void **state)
{
    static const struct {
        const char *user, *ns; /* ns NULL: not a ServiceAccount */
    } cases[] = {
        {"system:serviceaccount:cliqo-tenant-abc:vk-abc", "cliqo-tenant-abc"},
        {"system:serviceaccount:web-x-123456:default", "web-x-123456"},
        {"system:serviceaccount:kube-system:endpointslice-controller", "kube-system"},
        {"system:kube-controller-manager", NULL},
        {"kubernetes-admin", NULL},
        {"system:serviceaccount:", NULL},
        {"system:serviceaccount:ns", NULL},
        {"system:serviceaccount::sa", NULL},
        {"system:serviceaccount:ns:", NULL},
        {"system:serviceaccount:ns:sa:extra", NULL},
        {"system:serviceaccount:"
         "a0123456789012345678901234567890123456789012345678901234567890123:sa",
         NULL},
        {"", NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char ns[64] = "unchanged";
        int r = adm_objects_sa_namespace(cases[i].user, ns, sizeof(ns));

        if (!cases[i].ns) {
            assert_int_equal(r, -ENOENT);
            assert_string_equal(ns, "unchanged");
        } else {
            assert_int_equal(r, 0);
            assert_string_equal(ns, cases[i].ns);
        }
    }
    assert_int_equal(adm_objects_sa_namespace(NULL, NULL, 0), -ENOENT);
}

static void test_services(void **state)
{
    static const struct {
        const char *spec, *msg;
    } cases[] = {
        {"{'ports':[{'port':80}]}", NULL},
        {"{'type':'ClusterIP','clusterIP':'None'}", NULL},
        {"{'type':'NodePort','ports':[{'port':80,'nodePort':30080}]}", "spec.type NodePort:"},
        {"{'type':'LoadBalancer'}", "spec.type LoadBalancer:"},
        {"{'type':'ExternalName','externalName':'kubernetes.default.svc.cluster.local'}",
         "spec.type ExternalName:"},
        {"{'type':'Other'}", "spec.type \"Other\""},
        {"{'type':'ClusterIP','externalIPs':['192.0.2.1']}", "spec.externalIPs:"},
        {"{'externalIPs':[]}", NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024], msg[512] = "";
        json_t *svc;

        snprintf(text, sizeof(text), "{'metadata':{'name':'s'},'spec':%s}", cases[i].spec);
        svc = test_js(text);
        expect(adm_objects_service_check(svc, msg, sizeof(msg)), msg, cases[i].msg, i);
        json_decref(svc);
    }
}

static bool pod_ip(const char *ip, void *data)
{
    (void)data;
    return strcmp(ip, "10.244.1.7") == 0 || strcmp(ip, "fd00::7") == 0;
}

static void test_slices(void **state)
{
    static const struct {
        const char *slice, *msg;
    } cases[] = {
        /* in the consumer's remapped CIDR, or one of its pods here */
        {"{'addressType':'IPv4','endpoints':[{'addresses':['10.70.0.5']},{'addresses':["
         "'10.244.1.7'],'targetRef':{'kind':'Pod','namespace':'web-a-123456','name':'p'}}]}",
         NULL},
        {"{'addressType':'IPv4','endpoints':[]}", NULL},
        {"{'addressType':'IPv4'}", NULL},
        {"{'addressType':'IPv6','endpoints':[{'addresses':['fd00::7']}]}", NULL},
        /* elsewhere: the provider's own pods, its API server, the outside */
        {"{'addressType':'IPv4','endpoints':[{'addresses':['10.70.0.5']},{'addresses':["
         "'10.70.0.6','10.244.1.8']}]}",
         "endpoints[1].addresses[1] 10.244.1.8 is neither"},
        {"{'addressType':'IPv4','endpoints':[{'addresses':['10.96.0.1']}]}",
         "endpoints[0].addresses[0] 10.96.0.1"},
        {"{'addressType':'IPv4','endpoints':[{'addresses':['10.71.0.1']}]}",
         "endpoints[0].addresses[0]"},
        {"{'addressType':'IPv4','endpoints':[{'addresses':['not-an-ip']}]}",
         "endpoints[0].addresses[0] not-an-ip"},
        {"{'addressType':'IPv4','endpoints':[{'addresses':[5]}]}",
         "endpoints[0].addresses[0] (not a string)"},
        {"{'addressType':'IPv6','endpoints':[{'addresses':['fd00::8']}]}",
         "endpoints[0].addresses[0] fd00::8"},
        /* names, and other namespaces */
        {"{'addressType':'FQDN','endpoints':[{'addresses':['kubernetes.default']}]}",
         "addressType \"FQDN\""},
        {"{'endpoints':[]}", "addressType \"\""},
        {"{'addressType':'IPv4','endpoints':[{'addresses':['10.70.0.5'],'targetRef':{'kind':"
         "'Pod','namespace':'kube-system','name':'coredns'}}]}",
         "endpoints[0].targetRef.namespace \"kube-system\""},
    };
    struct cidr c[2];

    (void)state;
    assert_int_equal(cidr_parse("10.70.0.0/16", &c[0]), 0);
    assert_int_equal(cidr_parse("fd01::/64", &c[1]), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[512] = "";
        json_t *s = test_js(cases[i].slice);

        expect(adm_objects_slice_check(s, "web-a-123456", c, 2, pod_ip, NULL, msg, sizeof(msg)),
               msg, cases[i].msg, i);
        json_decref(s);
    }
}

/* Without a known CIDR, only the consumer's pods; too many endpoints are refused, not walked. */
static void test_slice_bounds(void **state)
{
    json_t *s = test_js("{'addressType':'IPv4','endpoints':[{'addresses':['10.70.0.5']}]}"), *eps;
    char msg[256];

    (void)state;
    assert_int_equal(adm_objects_slice_check(s, "ns", NULL, 0, NULL, NULL, msg, sizeof(msg)),
                     -EPERM);
    eps = json_object_get(s, "endpoints");
    json_array_clear(eps);
    for (int i = 0; i <= ADM_OBJ_MAX_ENDPOINTS; i++)
        json_array_append_new(eps, json_pack("{s:[s]}", "addresses", "10.244.1.7"));
    assert_int_equal(adm_objects_slice_check(s, "ns", NULL, 0, pod_ip, NULL, msg, sizeof(msg)),
                     -EPERM);
    assert_non_null(strstr(msg, "endpoints: more than"));
    json_decref(s);
}

static void test_secrets(void **state)
{
    static const struct {
        const char *secret, *msg;
    } cases[] = {
        {"{'type':'Opaque'}", NULL},
        {"{}", NULL},
        {"{'type':'kubernetes.io/dockerconfigjson'}", NULL},
        {"{'type':'kubernetes.io/service-account-token','metadata':{'annotations':{"
         "'kubernetes.io/service-account.name':'vk-abc'}}}",
         "type kubernetes.io/service-account-token:"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[512] = "";
        json_t *s = test_js(cases[i].secret);

        expect(adm_objects_secret_check(s, msg, sizeof(msg)), msg, cases[i].msg, i);
        json_decref(s);
    }
}

static void test_tenant_limits(void **state)
{
    static const struct {
        const char *group, *resource;
        size_t count;
        const char *msg; /* NULL: one more fits */
    } cases[] = {
        {"discovery.liqo.io", "peeringrequests", 0, NULL},
        {"discovery.liqo.io", "peeringrequests", 3, NULL},
        {"discovery.liqo.io", "peeringrequests", 4, "at most 4 peeringrequests.discovery.liqo.io"},
        {"sharing.liqo.io", "advertisements", 7, NULL},
        {"sharing.liqo.io", "advertisements", 8, "at most 8 advertisements.sharing.liqo.io"},
        {"net.liqo.io", "networkconfigs", 100,
         "at most 8 networkconfigs.net.liqo.io in a tenant namespace (100 exist)"},
        {"virtualkubelet.liqo.io", "namespacemaps", 4, "at most 4 namespacemaps"},
        /* Not counted by the webhook (the built-in kinds have a ResourceQuota). */
        {"", "secrets", 1000, NULL},
        {"discovery.liqo.io", "foreignclusters", 1000, NULL},
        {"sharing.liqo.io", "peeringrequests", 1000, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[256] = "";
        int r = adm_objects_tenant_check(cases[i].group, cases[i].resource, cases[i].count, msg,
                                         sizeof(msg));

        if (!cases[i].msg) {
            if (r != 0)
                fail_msg("case %zu: refused: %s", i, msg);
            continue;
        }
        if (r != -EDQUOT || !strstr(msg, cases[i].msg))
            fail_msg("case %zu: got %d '%s', want '%s'", i, r, msg, cases[i].msg);
    }
    assert_int_equal(adm_objects_tenant_limit(NULL, "x"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_users),   cmocka_unit_test(test_services),
        cmocka_unit_test(test_slices),  cmocka_unit_test(test_slice_bounds),
        cmocka_unit_test(test_secrets), cmocka_unit_test(test_tenant_limits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
