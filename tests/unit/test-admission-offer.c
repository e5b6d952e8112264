/* Unit tests of src/admission/offer.c: a pod's effective requests, sums and the offer check with
 * its exact refusal message, with and without figures. */
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

#include "admission/offer.h"

static int64_t get(const struct shr_list *l, const char *name)
{
    bool found;
    int64_t v = shr_list_get(l, name, &found);

    return found ? v : -1;
}

static void test_requests(void **state)
{
    static const struct {
        const char *pod;
        int64_t cpu, memory, pods, gpu; /* -1: absent */
        size_t n;
    } cases[] = {
        /* containers summed, the largest init container, overhead added */
        {"{'spec':{'initContainers':[{'resources':{'requests':{'cpu':'2','memory':'512Mi'}}}],"
         "'containers':[{'resources':{'requests':{'cpu':'500m','memory':'1Gi','nvidia.com/"
         "gpu':'1'}}},"
         "{'resources':{'requests':{'cpu':'250m','memory':'256Mi'}}}],"
         "'overhead':{'cpu':'100m','memory':'64Mi'}}}",
         2100, 1409286144, 1, 1, 4},
        /* no requests: one pod, nothing else */
        {"{'spec':{'containers':[{'name':'c'},{'resources':{}}]}}", -1, -1, 1, -1, 1},
        {"{'spec':{}}", -1, -1, 1, -1, 1},
        {"{}", -1, -1, 1, -1, 1},
        /* a "pods" request is not how many pods a pod is */
        {"{'spec':{'containers':[{'resources':{'requests':{'pods':'5','cpu':'0'}}}]}}", -1, -1, 1,
         -1, 1},
        /* fractions round up to the unit */
        {"{'spec':{'containers':[{'resources':{'requests':{'cpu':'0.0001','memory':'1.5'}}}]}}", 1,
         2, 1, -1, 3},
        /* two init containers: the largest per resource */
        {"{'spec':{'initContainers':[{'resources':{'requests':{'cpu':'3'}}},"
         "{'resources':{'requests':{'memory':'1Ki'}}}],'containers':[{'resources':{'requests':"
         "{'cpu':'1','memory':'2Ki'}}}]}}",
         3000, 2048, 1, -1, 3},
        /* a sidecar (restartPolicy Always) runs beside the containers: 1 + 0.5 = 1.5 cpu */
        {"{'spec':{'initContainers':[{'restartPolicy':'Always','resources':{'requests':{'cpu':"
         "'500m'}}}],'containers':[{'resources':{'requests':{'cpu':'1'}}}]}}",
         1500, -1, 1, -1, 2},
        /* an init container after a sidecar needs its request on top of it: 0.5 + 2 = 2.5 > 1.5 */
        {"{'spec':{'initContainers':[{'restartPolicy':'Always','resources':{'requests':{'cpu':"
         "'500m'}}},{'resources':{'requests':{'cpu':'2'}}}],'containers':[{'resources':{"
         "'requests':{'cpu':'1'}}}]}}",
         2500, -1, 1, -1, 2},
        /* ... but not one before it: max(2, 1 + 0.5) = 2 */
        {"{'spec':{'initContainers':[{'resources':{'requests':{'cpu':'2'}}},{'restartPolicy':"
         "'Always','resources':{'requests':{'cpu':'500m'}}}],'containers':[{'resources':{"
         "'requests':{'cpu':'1'}}}]}}",
         2000, -1, 1, -1, 2},
        /* two sidecars add up, also toward the init need: memory 1Ki + 2Ki beside 1Ki = 4Ki;
         * init: max(1Ki, 1Ki + 2Ki) = 3Ki < 4Ki; overhead on top */
        {"{'spec':{'initContainers':[{'restartPolicy':'Always','resources':{'requests':{'memory':"
         "'1Ki'}}},{'restartPolicy':'Always','resources':{'requests':{'memory':'2Ki'}}}],"
         "'containers':[{'resources':{'requests':{'memory':'1Ki'}}}],'overhead':{'memory':'1'}}}",
         -1, 4097, 1, -1, 2},
        /* restartPolicy other than Always: an ordinary init container */
        {"{'spec':{'initContainers':[{'restartPolicy':'OnFailure','resources':{'requests':{'cpu':"
         "'500m'}}}],'containers':[{'resources':{'requests':{'cpu':'1'}}}]}}",
         1000, -1, 1, -1, 2},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *pod = test_js(cases[i].pod);
        struct shr_list l;
        char err[128];

        assert_int_equal(adm_offer_pod_requests(pod, &l, err, sizeof(err)), 0);
        if (get(&l, "cpu") != cases[i].cpu || get(&l, "memory") != cases[i].memory ||
            get(&l, "pods") != cases[i].pods || get(&l, "nvidia.com/gpu") != cases[i].gpu ||
            l.n != cases[i].n)
            fail_msg("case %zu: cpu %lld memory %lld pods %lld gpu %lld n %zu", i,
                     (long long)get(&l, "cpu"), (long long)get(&l, "memory"),
                     (long long)get(&l, "pods"), (long long)get(&l, "nvidia.com/gpu"), l.n);
        json_decref(pod);
    }
}

static void test_requests_invalid(void **state)
{
    static const char *const pods[] = {
        "{'spec':{'containers':[{'resources':{'requests':{'cpu':'lots'}}}]}}",
        "{'spec':{'containers':[{'resources':{'requests':{'cpu':'-1'}}}]}}",
        "{'spec':{'containers':[{'resources':{'requests':{'cpu':1}}}]}}",
        "{'spec':{'containers':[{'resources':{'requests':[]}}]}}",
        "{'spec':{'overhead':{'memory':'99999999999999999999'}}}",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
        json_t *pod = test_js(pods[i]);
        struct shr_list l;
        char err[128] = "";

        if (adm_offer_pod_requests(pod, &l, err, sizeof(err)) != -EINVAL || !err[0])
            fail_msg("case %zu accepted", i);
        json_decref(pod);
    }
}

/* Sidecars raise the init need only at the names they request, up to the sidecars' sum: many
 * sidecars without requests after one of 64 names change nothing (each used to compare the whole
 * sum, 1.7 s for a 3 MB review), and a later sidecar lifts the need to the sum, not its own
 * request. */
static void test_requests_many_sidecars(void **state)
{
    json_t *init = json_array(), *reqs = json_object(), *pod;
    struct shr_list l;
    char err[128], name[64];

    (void)state;
    for (int i = 0; i < SHR_MAX_RESOURCES - 3; i++) { /* with cpu, memory and pods: all */
        snprintf(name, sizeof(name), "example.com/r%02d", i);
        json_object_set_new(reqs, name, json_string("1"));
    }
    json_object_set_new(reqs, "cpu", json_string("4"));
    json_array_append_new(
        init, json_pack("{s:s,s:{s:o}}", "restartPolicy", "Always", "resources", "requests", reqs));
    json_array_append_new(init, test_js("{'resources':{'requests':{'cpu':'1'}}}")); /* 4 + 1 */
    for (int i = 0; i < 10000; i++)
        json_array_append_new(init, json_pack("{s:s}", "restartPolicy", "Always"));
    json_array_append_new(init, test_js("{'restartPolicy':'Always','resources':{'requests':{"
                                        "'cpu':'2','memory':'1Ki'}}}")); /* sum 6 */
    json_array_append_new(init, test_js("{'restartPolicy':'Always','resources':{'requests':{"
                                        "'memory':'1Ki'}}}"));
    pod = json_pack("{s:{s:o,s:[]}}", "spec", "initContainers", init, "containers");
    assert_int_equal(adm_offer_pod_requests(pod, &l, err, sizeof(err)), 0);
    assert_int_equal(get(&l, "cpu"), 6000);    /* max(4 + 1, 4 + 2) */
    assert_int_equal(get(&l, "memory"), 2048); /* the two sidecars' sum */
    assert_int_equal(get(&l, "example.com/r00"), 1);
    assert_int_equal(get(&l, "pods"), 1);
    assert_int_equal(l.n, SHR_MAX_RESOURCES);
    json_decref(pod);
}

static void test_live(void **state)
{
    json_t *a = test_js("{'status':{'phase':'Running'}}"),
           *b = test_js("{'status':{'phase':'Succeeded'}}"),
           *c = test_js("{'status':{'phase':'Failed'}}"), *d = test_js("{}");

    (void)state;
    assert_true(adm_offer_pod_live(a));
    assert_false(adm_offer_pod_live(b));
    assert_false(adm_offer_pod_live(c));
    assert_true(adm_offer_pod_live(d));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
}

static void test_add_and_quantities(void **state)
{
    json_t *q = test_js("{'cpu':'2800m','memory':'1Gi','pods':'10','nvidia.com/gpu':'2','bad':'x',"
                        "'worse':3}");
    struct shr_list a = {0}, b = {0};
    size_t bad = 0;

    (void)state;
    assert_int_equal(adm_offer_from_quantities(q, &a, &bad), 0);
    assert_int_equal(bad, 2);
    assert_int_equal(get(&a, "cpu"), 2800);
    assert_int_equal(get(&a, "memory"), 1073741824);
    assert_int_equal(get(&a, "pods"), 10);
    assert_int_equal(get(&a, "nvidia.com/gpu"), 2);
    assert_int_equal(adm_offer_from_quantities(NULL, &b, NULL), 0);
    assert_int_equal(b.n, 0);
    assert_int_equal(adm_offer_add(&b, &a), 0);
    assert_int_equal(adm_offer_add(&b, &a), 0);
    assert_int_equal(get(&b, "cpu"), 5600);
    b.items[0].value = INT64_MAX - 1;
    assert_int_equal(adm_offer_add(&b, &a), 0);
    assert_int_equal(b.items[0].value, INT64_MAX); /* saturated */
    json_decref(q);
}

static void list(struct shr_list *l, const char *spec)
{
    json_t *q = test_js(spec);

    assert_int_equal(adm_offer_from_quantities(q, l, NULL), 0);
    json_decref(q);
}

static void test_check(void **state)
{
    static const struct {
        const char *used, *pod, *offer, *msg; /* msg NULL: fits */
        const char *bare;                     /* the message without figures (NULL: fits) */
    } cases[] = {
        {"{'cpu':'2500m','pods':'3'}", "{'cpu':'500m','pods':'1'}", "{'cpu':'2800m','pods':'10'}",
         "offer exceeded: cpu 2500m requested + 500m > 2800m offered to cluster-1",
         "offer exceeded: cpu does not fit the offer to cluster-1"},
        {"{'cpu':'2300m','pods':'3'}", "{'cpu':'500m','pods':'1'}", "{'cpu':'2800m','pods':'10'}",
         NULL, NULL},
        {"{}", "{'cpu':'2800m','pods':'1'}", "{'cpu':'2800m','pods':'1'}", NULL, NULL},
        {"{'memory':'1Gi'}", "{'memory':'512Mi','pods':'1'}",
         "{'memory':'1Gi','pods':'10','cpu':'1'}",
         "offer exceeded: memory 1Gi requested + 512Mi > 1Gi offered to cluster-1",
         "offer exceeded: memory does not fit the offer to cluster-1"},
        {"{'pods':'10'}", "{'pods':'1'}", "{'pods':'10','cpu':'4'}",
         "offer exceeded: pods 10 requested + 1 > 10 offered to cluster-1",
         "offer exceeded: pods does not fit the offer to cluster-1"},
        /* a resource the offer does not list was offered nothing */
        {"{}", "{'nvidia.com/gpu':'1','pods':'1'}", "{'pods':'10','cpu':'4'}",
         "offer exceeded: nvidia.com/gpu 0 requested + 1 > 0 offered to cluster-1",
         "offer exceeded: nvidia.com/gpu does not fit the offer to cluster-1"},
        /* the first resource in name order is reported */
        {"{'cpu':'4','memory':'2Gi'}", "{'cpu':'1','memory':'1Gi','pods':'1'}",
         "{'cpu':'4','memory':'2Gi','pods':'10'}",
         "offer exceeded: cpu 4 requested + 1 > 4 offered to cluster-1",
         "offer exceeded: cpu does not fit the offer to cluster-1"},
        /* what the pod does not request does not matter, even if already over */
        {"{'cpu':'9'}", "{'memory':'1','pods':'1'}", "{'cpu':'4','memory':'1Gi','pods':'10'}", NULL,
         NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct shr_list used, pod, offer;
        char msg[256] = "";
        int rc;

        list(&used, cases[i].used);
        list(&pod, cases[i].pod);
        list(&offer, cases[i].offer);
        for (int figures = 1; figures >= 0; figures--) {
            const char *want = figures ? cases[i].msg : cases[i].bare;

            msg[0] = '\0';
            rc = adm_offer_check(&used, &pod, &offer, "cluster-1", figures, msg, sizeof(msg));
            if (!want) {
                if (rc != 0)
                    fail_msg("case %zu refused: %s", i, msg);
            } else if (rc != -EDQUOT || strcmp(msg, want) != 0) {
                fail_msg("case %zu (figures %d): rc %d '%s'", i, figures, rc, msg);
            }
        }
    }
}

/* Running totals against the sum recomputed from scratch, over a random sequence of pod events
 * (new pods, phase changes, deletions) in a few namespaces; entries go with their last pod. */
static void test_usage(void **state)
{
    enum { SLOTS = 40, STEPS = 3000 };
    static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed", NULL};
    static const char *const cpus[] = {"100m", "0.25", "1", "0"};
    json_t *pods[SLOTS] = {0};
    struct adm_usage *u;
    unsigned seed = 17;

    (void)state;
    assert_int_equal(adm_usage_new(&u), 0);
    for (int step = 0; step < STEPS; step++) {
        int i = (int)(rand_r(&seed) % SLOTS), op = (int)(rand_r(&seed) % 3);
        char ns[16];
        struct shr_list want[4], got;
        size_t live_ns = 0, live_pods = 0;

        if (pods[i]) { /* the informer hands the old object to remove */
            assert_int_equal(adm_usage_pod(u, pods[i], -1), 0);
            json_decref(pods[i]);
            pods[i] = NULL;
        }
        if (op > 0) {
            const char *phase = phases[rand_r(&seed) % 5];

            snprintf(ns, sizeof(ns), "ns%d", i % 4);
            pods[i] = json_pack("{s:{s:s,s:s},s:{s:[{s:{s:{s:s,s:s}}}],s:[{s:s,s:{s:{s:s}}}]}}",
                                "metadata", "name", "p", "namespace", ns, "spec", "containers",
                                "resources", "requests", "cpu", cpus[rand_r(&seed) % 4], "memory",
                                "1Ki", "initContainers", "restartPolicy", "Always", "resources",
                                "requests", "cpu", "10m");
            if (phase)
                json_object_set_new(pods[i], "status", json_pack("{s:s}", "phase", phase));
            assert_int_equal(adm_usage_pod(u, pods[i], 1), 0);
        }
        for (int n = 0; n < 4; n++)
            want[n].n = 0;
        for (int k = 0; k < SLOTS; k++) {
            struct shr_list req;

            if (!pods[k] || !adm_offer_pod_live(pods[k]))
                continue;
            assert_int_equal(adm_offer_pod_requests(pods[k], &req, NULL, 0), 0);
            assert_int_equal(adm_offer_add(&want[k % 4], &req), 0);
            live_pods++;
        }
        for (int n = 0; n < 4; n++) {
            snprintf(ns, sizeof(ns), "ns%d", n);
            got.n = 0;
            assert_int_equal(adm_usage_add_ns(u, ns, &got), 0);
            live_ns += want[n].n > 0;
            if (get(&got, "cpu") != get(&want[n], "cpu") ||
                get(&got, "memory") != get(&want[n], "memory") ||
                get(&got, "pods") != get(&want[n], "pods"))
                fail_msg("step %d, %s: cpu %lld/%lld memory %lld/%lld pods %lld/%lld", step, ns,
                         (long long)get(&got, "cpu"), (long long)get(&want[n], "cpu"),
                         (long long)get(&got, "memory"), (long long)get(&want[n], "memory"),
                         (long long)get(&got, "pods"), (long long)get(&want[n], "pods"));
        }
        assert_int_equal(adm_usage_namespaces(u), live_ns);
        assert_int_equal(adm_usage_pods(u), live_pods);
    }
    for (int k = 0; k < SLOTS; k++)
        json_decref(pods[k]);
    adm_usage_free(u);
}

/* adm_offer_sub: per name, never below 0. */
static void test_sub(void **state)
{
    struct shr_list a = {0}, b = {0};

    (void)state;
    snprintf(a.items[0].name, SHR_NAME_MAX, "cpu");
    a.items[0].value = 500;
    snprintf(a.items[1].name, SHR_NAME_MAX, "pods");
    a.items[1].value = 2;
    a.n = 2;
    snprintf(b.items[0].name, SHR_NAME_MAX, "pods");
    b.items[0].value = 1;
    snprintf(b.items[1].name, SHR_NAME_MAX, "cpu");
    b.items[1].value = 900;
    snprintf(b.items[2].name, SHR_NAME_MAX, "memory");
    b.items[2].value = 7;
    b.n = 3;
    adm_offer_sub(&a, &b);
    assert_int_equal(get(&a, "cpu"), 0);
    assert_int_equal(get(&a, "pods"), 1);
    assert_int_equal(get(&a, "memory"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_requests_invalid),
        cmocka_unit_test(test_requests_many_sidecars),
        cmocka_unit_test(test_live),
        cmocka_unit_test(test_add_and_quantities),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_sub),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
