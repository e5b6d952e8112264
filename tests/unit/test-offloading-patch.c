/* Unit tests of src/offloading/nsof_patch.c: the pod webhook's patch. Each case gives a pod, a
 * strategy, a selector and a grace period, and the pod as it must look once the patch is applied
 * (or the error). JSON is written with single quotes for readability. */
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

#include "common/jsonpatch.h"
#include "offloading/nsof.h"

/* Single quotes to double quotes, then parse. */
#define VT "{'key':'virtual-node.liqo.io/not-allowed','operator':'Exists','effect':'NoExecute'}"
#define UN(s)                                                                                      \
    "{'key':'node.kubernetes.io/"                                                                  \
    "unreachable','operator':'Exists','effect':'NoExecute','tolerationSeconds':" #s "}"
#define NR(s)                                                                                      \
    "{'key':'node.kubernetes.io/"                                                                  \
    "not-ready','operator':'Exists','effect':'NoExecute','tolerationSeconds':" #s "}"
#define IN     "{'key':'liqo.io/type','operator':'In','values':['virtual-node']}"
#define NOTIN  "{'key':'liqo.io/type','operator':'NotIn','values':['virtual-node']}"
#define REGION "{'key':'region','operator':'In','values':['eu']}"
#define TIER   "{'key':'tier','operator':'Exists'}"
#define SEL2                                                                                       \
    "{'nodeSelectorTerms':[{'matchExpressions':[" REGION "]},{'matchExpressions':[" TIER "]}]}"
#define C "'containers':[{'name':'c','image':'i'}]"
#define REQ(terms)                                                                                 \
    "{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms'"       \
    ":" terms "}}}"

struct pcase {
    const char *what;
    const char *pod;
    enum nsof_pods pods;
    const char *sel; /* NULL: none */
    long long grace;
    int rc;
    const char *want; /* the patched pod (rc 0) */
};

/* A pod with all that Remote (and LocalAndRemote with no selector) would give it. */
#define MUTATED                                                                                    \
    "{'spec':{" C ",'tolerations':[" VT                                                            \
    "," UN(300) "," NR(300) "],'affinity':" REQ("[{'matchExpressions':[" IN "]}]") "}}"

/* A consumer's pod sent onward: its term has the no-loop expression of the hop before, and its own.
 */
#define ONWARD_DISK                                                                                \
    "{'metadata':{'labels':{'virtualkubelet.liqo.io/origin':'c1'}},'spec':{" C ",'affinity':" REQ( \
        "[{'matchExpressions':[" NOTIN ",{'key':'disk','operator':'In','values':['ssd']}]}]") "}}"

static const struct pcase cases[] = {
    {"Local changes nothing", "{'spec':{" C "}}", NSOF_PODS_LOCAL, SEL2, 300, 0,
     "{'spec':{" C "}}"},
    {"Remote, bare pod", "{'spec':{" C "}}", NSOF_PODS_REMOTE, NULL, 300, 0, MUTATED},
    {"LocalAndRemote, bare pod: any node, no affinity added", "{'spec':{" C "}}",
     NSOF_PODS_LOCAL_AND_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "]}}"},
    {"LocalAndRemote, the empty selector too", "{'spec':{" C "}}", NSOF_PODS_LOCAL_AND_REMOTE,
     "{'nodeSelectorTerms':[]}", 300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "]}}"},
    {"LocalAndRemote, a pod with what it needs: nothing to change", MUTATED,
     NSOF_PODS_LOCAL_AND_REMOTE, NULL, 300, 0, MUTATED},
    {"Remote, selector: each term ANDed with virtual-node", "{'spec':{" C "}}", NSOF_PODS_REMOTE,
     SEL2, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "[{'matchExpressions':[" REGION "," IN "]},{'matchExpressions':[" TIER "," IN "]}]") "}}"},
    {"LocalAndRemote, selector: its terms plus NotIn", "{'spec':{" C "}}",
     NSOF_PODS_LOCAL_AND_REMOTE, SEL2, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "[{'matchExpressions':[" REGION "]},{'matchExpressions':[" TIER
         "]},{'matchExpressions':[" NOTIN "]}]") "}}"},
    {"an empty selector is the default", "{'spec':{" C "}}", NSOF_PODS_REMOTE,
     "{'nodeSelectorTerms':[]}", 300, 0, MUTATED},
    {"a selector matching nothing still constrains (Remote stays pending)", "{'spec':{" C "}}",
     NSOF_PODS_REMOTE,
     "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'region','operator':'In','values':['mars']}"
     "]}]}",
     300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "[{'matchExpressions':[{'key':'region','operator':'In','values':['mars']}," IN
         "]}]") "}}"},
    {"Remote: the pod's two terms crossed with the selector's two",
     "{'spec':{" C
     ",'affinity':" REQ("[{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}]},{'"
                        "matchExpressions':[{'key':'zone','operator':'In','values':['a']}]}]") "}}",
     NSOF_PODS_REMOTE, SEL2, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "["
         "{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," REGION "," IN "]},"
         "{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," TIER "," IN "]},"
         "{'matchExpressions':[{'key':'zone','operator':'In','values':['a']}," REGION "," IN "]},"
         "{'matchExpressions':[{'key':'zone','operator':'In','values':['a']}," TIER "," IN
         "]}]") "}}"},
    {"LocalAndRemote: the pod's term alone (crossed with both it would select the same)",
     "{'spec':{" C ",'affinity':" REQ(
         "[{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}]}]") "}}",
     NSOF_PODS_LOCAL_AND_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "[{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}]}]") "}}"},
    {"LocalAndRemote with a selector: the pod's term crossed with the selector's and NotIn",
     "{'spec':{" C ",'affinity':" REQ(
         "[{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}]}]") "}}",
     NSOF_PODS_LOCAL_AND_REMOTE, SEL2, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "["
         "{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," REGION "]},"
         "{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," TIER "]},"
         "{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," NOTIN "]}]") "}}"},
    {"LocalAndRemote: a consumer's pod sent onward loses the no-loop expression", ONWARD_DISK,
     NSOF_PODS_LOCAL_AND_REMOTE, NULL, 300, 0,
     "{'metadata':{'labels':{'virtualkubelet.liqo.io/origin':'c1'}},'spec':{" C
     ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "[{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," IN "]},"
         "{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," NOTIN "]}]") "}}"},
    {"a consumer's pod sent onward loses the no-loop expression of the hop before",
     "{'metadata':{'labels':{'virtualkubelet.liqo.io/origin':'c1'}},'spec':{" C
     ",'affinity':" REQ("[{'matchExpressions':[" NOTIN "]}]") "}}",
     NSOF_PODS_REMOTE, SEL2, 300, 0,
     "{'metadata':{'labels':{'virtualkubelet.liqo.io/origin':'c1'}},'spec':{" C
     ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "[{'matchExpressions':[" REGION "," IN "]},{'matchExpressions':[" TIER "," IN "]}]") "}}"},
    {"a local pod keeps its own NotIn (it stays unschedulable under Remote)",
     "{'spec':{" C ",'affinity':" REQ("[{'matchExpressions':[" NOTIN "]}]") "}}", NSOF_PODS_REMOTE,
     NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT
     "," UN(300) "," NR(300) "],'affinity':" REQ("[{'matchExpressions':[" NOTIN "," IN "]}]") "}}"},
    {"an onward pod keeps its other expressions", ONWARD_DISK, NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'metadata':{'labels':{'virtualkubelet.liqo.io/origin':'c1'}},'spec':{" C
     ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "[{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," IN "]}]") "}}"},
    {"matchFields of the pod's term are kept",
     "{'spec':{" C ",'affinity':" REQ(
         "[{'matchFields':[{'key':'metadata.name','operator':'In','values':['n1']}]}]") "}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
         "[{'matchExpressions':[" IN
         "],'matchFields':[{'key':'metadata.name','operator':'In','values':['n1']}]}]") "}}"},
    {"an already mutated pod gets no duplicates", MUTATED, NSOF_PODS_REMOTE, NULL, 300, 0, MUTATED},
    {"the pod's own tolerations are kept",
     "{'spec':{" C ",'tolerations':[{'key':'foo','operator':'Exists'}]}}", NSOF_PODS_REMOTE, NULL,
     300, 0,
     "{'spec':{" C ",'tolerations':[{'key':'foo','operator':'Exists'}," VT
     "," UN(300) "," NR(300) "],'affinity':" REQ("[{'matchExpressions':[" IN "]}]") "}}"},
    {"DefaultTolerationSeconds' 300 s become the grace period (600)",
     "{'spec':{" C ",'tolerations':[" NR(300) "," UN(300) "]}}", NSOF_PODS_REMOTE, NULL, 600, 0,
     "{'spec':{" C ",'tolerations':[" NR(600) "," UN(600) "," VT "],'affinity':" REQ(
         "[{'matchExpressions':[" IN "]}]") "}}"},
    {"... and a shorter grace period (60)",
     "{'spec':{" C ",'tolerations':[" NR(300) "," UN(300) "]}}", NSOF_PODS_LOCAL_AND_REMOTE, NULL,
     60, 0, "{'spec':{" C ",'tolerations':[" NR(60) "," UN(60) "," VT "]}}"},
    {"... and stay when they equal it", "{'spec':{" C ",'tolerations':[" NR(300) "," UN(300) "]}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[" NR(300) "," UN(300) "," VT "],'affinity':" REQ(
         "[{'matchExpressions':[" IN "]}]") "}}"},
    {"the pod's longer toleration is kept, a shorter one raised",
     "{'spec':{" C ",'tolerations':[" UN(900) "," NR(30) "]}}", NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[" UN(900) "," NR(300) "," VT "],'affinity':" REQ(
         "[{'matchExpressions':[" IN "]}]") "}}"},
    {"an unbounded toleration of the pod is kept, nothing added for that key",
     "{'spec':{" C ",'tolerations':[{'key':'node.kubernetes.io/"
     "not-ready','operator':'Exists','effect':'NoExecute'}]}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[{'key':'node.kubernetes.io/"
     "not-ready','operator':'Exists','effect':'NoExecute'}," VT
     "," UN(300) "],'affinity':" REQ("[{'matchExpressions':[" IN "]}]") "}}"},
    {"a toleration of everything leaves nothing to add",
     "{'spec':{" C ",'tolerations':[{'operator':'Exists'}]}}", NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[{'operator':'Exists'}],'affinity':" REQ(
         "[{'matchExpressions':[" IN "]}]") "}}"},
    {"the virtual-node taint tolerated for every effect: not added again",
     "{'spec':{" C
     ",'tolerations':[{'key':'virtual-node.liqo.io/not-allowed','operator':'Exists'}]}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C
     ",'tolerations':[{'key':'virtual-node.liqo.io/not-allowed','operator':'Exists'}," UN(
         300) "," NR(300) "],'affinity':" REQ("[{'matchExpressions':[" IN "]}]") "}}"},
    {"a bounded virtual-node toleration does not count: ours is added",
     "{'spec':{" C ",'tolerations':[{'key':'virtual-node.liqo.io/"
     "not-allowed','operator':'Equal','value':'true','effect':'NoExecute','"
     "tolerationSeconds':10}]}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[{'key':'virtual-node.liqo.io/"
     "not-allowed','operator':'Equal','value':'true','effect':'NoExecute','"
     "tolerationSeconds':10}," VT
     "," UN(300) "," NR(300) "],'affinity':" REQ("[{'matchExpressions':[" IN "]}]") "}}"},
    {"tolerations: null", "{'spec':{" C ",'tolerations':null}}", NSOF_PODS_REMOTE, NULL, 0, 0,
     "{'spec':{" C ",'tolerations':[" VT
     "," UN(0) "," NR(0) "],'affinity':" REQ("[{'matchExpressions':[" IN "]}]") "}}"},
    {"nodeSelector and preferred terms untouched",
     "{'spec':{" C ",'nodeSelector':{'disk':'ssd'},'affinity':{'nodeAffinity':{'"
     "preferredDuringSchedulingIgnoredDuringExecution':[{'weight':1,'preference':{'"
     "matchExpressions':[{'key':'a','operator':'Exists'}]}}]}}}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'nodeSelector':{'disk':'ssd'},'tolerations':[" VT "," UN(300) "," NR(
         300) "],'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'"
              "weight':1,'preference':{'matchExpressions':[{'key':'a','operator':'Exists'}]}}],'"
              "requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{'"
              "matchExpressions':[" IN "]}]}}}}}"},
    {"pod anti-affinity untouched",
     "{'spec':{" C ",'affinity':{'podAntiAffinity':{'"
     "requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'h'}]}}}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'tolerations':[" VT
     "," UN(300) "," NR(300) "],'affinity':{'podAntiAffinity':{'"
                             "requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'h'}]"
                             "},'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{'"
                             "nodeSelectorTerms':[{'matchExpressions':[" IN "]}]}}}}}"},
    {"required affinity without terms",
     "{'spec':{" C
     ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{}}}}}",
     NSOF_PODS_REMOTE, NULL, 300, 0, MUTATED},
    {"the pod's terms that match nothing stay as they are",
     "{'spec':{" C ",'affinity':" REQ("[{}]") "}}", NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'spec':{" C ",'affinity':" REQ("[{}]") ",'tolerations':[" VT "," UN(300) "," NR(300) "]}}"},
    {"DaemonSet pods untouched",
     "{'metadata':{'ownerReferences':[{'kind':'DaemonSet','name':'d','controller':true}]},'spec':"
     "{" C "}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'metadata':{'ownerReferences':[{'kind':'DaemonSet','name':'d','controller':true}]},'spec':"
     "{" C "}}"},
    {"a ReplicaSet's pod is not a DaemonSet's",
     "{'metadata':{'ownerReferences':[{'kind':'DaemonSet','name':'d'},{'kind':'ReplicaSet','name':'"
     "r','controller':true}]},'spec':{" C "}}",
     NSOF_PODS_REMOTE, NULL, 300, 0,
     "{'metadata':{'ownerReferences':[{'kind':'DaemonSet','name':'d'},{'kind':'ReplicaSet','name':'"
     "r','controller':true}]},'spec':{" C ",'tolerations':[" VT
     "," UN(300) "," NR(300) "],'affinity':" REQ("[{'matchExpressions':[" IN "]}]") "}}"},
    {"no spec", "{'metadata':{}}", NSOF_PODS_REMOTE, NULL, 300, -EINVAL, NULL},
    {"tolerations not a list", "{'spec':{'tolerations':{}}}", NSOF_PODS_REMOTE, NULL, 300, -EINVAL,
     NULL},
    {"affinity not an object", "{'spec':{'affinity':[]}}", NSOF_PODS_REMOTE, NULL, 300, -EINVAL,
     NULL},
    {"a term not an object", "{'spec':{'affinity':" REQ("[1]") "}}", NSOF_PODS_REMOTE, NULL, 300,
     -EINVAL, NULL},
};

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct pcase *c = &cases[i];
        json_t *pod = test_js(c->pod), *sel = c->sel ? test_js(c->sel) : NULL, *patch = NULL, *want,
               *got;
        char err[256] = "", perr[256];
        int rc = nsof_pod_patch(pod, c->pods, sel, c->grace, &patch, err, sizeof(err));

        if (rc != c->rc)
            fail_msg("%s: rc %d, want %d (%s)", c->what, rc, c->rc, err);
        if (rc < 0) {
            assert_true(err[0] != '\0');
            assert_null(strchr(err, '\n'));
        } else {
            got = json_deep_copy(pod);
            if (jpatch_apply(got, patch, perr, sizeof(perr)) < 0)
                fail_msg("%s: the patch does not apply: %s", c->what, perr);
            want = test_js(c->want);
            if (!json_equal(got, want)) {
                char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);

                fail_msg("%s:\n got %s\nwant %s", c->what, g, w);
            }
            /* Only add and replace: the pod's own data is never removed. */
            for (size_t k = 0; k < json_array_size(patch); k++) {
                const char *op = json_string_value(json_object_get(json_array_get(patch, k), "op"));

                assert_true(strcmp(op, "add") == 0 || strcmp(op, "replace") == 0);
            }
            json_decref(got);
            json_decref(want);
        }
        json_decref(patch);
        json_decref(pod);
        json_decref(sel);
    }
}

/* A pod that already has everything its strategy would give it gets no operation at all (an empty
 * answer: the API server then applies no patch). A replace by the same value would leave the pod
 * unchanged too, so test_cases cannot see it. */
static void test_nothing_to_do(void **state)
{
    static const struct {
        const char *pod;
        enum nsof_pods pods;
        const char *sel;
    } done[] = {
        {MUTATED, NSOF_PODS_REMOTE, NULL},
        {MUTATED, NSOF_PODS_LOCAL_AND_REMOTE, NULL},
        {"{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "],'affinity':" REQ(
             "[{'matchExpressions':[" REGION "," IN "]},{'matchExpressions':[" TIER "," IN
             "]}]") "}}",
         NSOF_PODS_REMOTE, SEL2},
        {"{'spec':{" C ",'tolerations':[" VT "," UN(300) "," NR(300) "]}}", NSOF_PODS_LOCAL, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(done) / sizeof(done[0]); i++) {
        json_t *pod = test_js(done[i].pod), *sel = done[i].sel ? test_js(done[i].sel) : NULL;
        json_t *patch = NULL;
        char err[128];

        assert_int_equal(nsof_pod_patch(pod, done[i].pods, sel, 300, &patch, err, sizeof(err)), 0);
        if (json_array_size(patch) != 0) {
            char *s = json_dumps(patch, JSON_COMPACT);

            fail_msg("case %zu: want no operation, got %s", i, s);
        }
        json_decref(patch);
        json_decref(pod);
        json_decref(sel);
    }
}

/* Tolerations are appended one by one when the pod has some (JSON patch add per element), in a
 * single add when it has none. */
static void test_patch_shape(void **state)
{
    json_t *pod = test_js("{'spec':{'tolerations':[{'key':'foo','operator':'Exists'}]}}"), *patch;
    char err[128];

    (void)state;
    assert_int_equal(nsof_pod_patch(pod, NSOF_PODS_REMOTE, NULL, 300, &patch, err, sizeof(err)), 0);
    assert_int_equal(json_array_size(patch), 4);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(patch, i), "path")),
                            "/spec/tolerations/-");
    assert_string_equal(json_string_value(json_object_get(json_array_get(patch, 3), "path")),
                        "/spec/affinity");
    json_decref(patch);
    json_decref(pod);
    pod = test_js("{'spec':{}}");
    assert_int_equal(nsof_pod_patch(pod, NSOF_PODS_REMOTE, NULL, 300, &patch, err, sizeof(err)), 0);
    assert_int_equal(json_array_size(patch), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(patch, 0), "path")),
                        "/spec/tolerations");
    json_decref(patch);
    json_decref(pod);
}

/* 20 terms of the pod crossed with 20 of the selector: refused with the reason, not truncated. */
static void test_too_many_terms(void **state)
{
    json_t *terms = json_array(), *pod, *sel, *patch = NULL;
    char err[256];

    (void)state;
    for (int i = 0; i < 20; i++)
        json_array_append_new(terms, json_pack("{s:[{s:s,s:s}]}", "matchExpressions", "key", "k",
                                               "operator", "Exists"));
    pod = json_pack("{s:{s:{s:{s:{s:O}}}}}", "spec", "affinity", "nodeAffinity",
                    "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", terms);
    sel = json_pack("{s:O}", "nodeSelectorTerms", terms);
    assert_int_equal(nsof_pod_patch(pod, NSOF_PODS_REMOTE, sel, 300, &patch, err, sizeof(err)),
                     -E2BIG);
    assert_null(patch);
    assert_non_null(strstr(err, "more than 256"));
    json_decref(terms);
    json_decref(pod);
    json_decref(sel);
}

/* One term of 5,000 requirements: refused before crossing (the patch would hold them once per term
 * of the strategy). Just under the bound, the pod's own requirements are kept as written,
 * duplicates included, with the strategy's appended once. */
static void test_too_many_requirements(void **state)
{
    json_t *xs = json_array(), *pod, *patch = NULL, *v, *got;
    char err[256];

    (void)state;
    for (int i = 0; i < 5000; i++)
        json_array_append_new(
            xs, json_pack("{s:s,s:s}", "key", i % 2 ? "a" : "b", "operator", "Exists"));
    pod = json_pack("{s:{s:{s:{s:{s:[{s:O}]}}}}}", "spec", "affinity", "nodeAffinity",
                    "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                    "matchExpressions", xs);
    assert_int_equal(nsof_pod_patch(pod, NSOF_PODS_REMOTE, NULL, 300, &patch, err, sizeof(err)),
                     -E2BIG);
    assert_null(patch);
    assert_non_null(strstr(err, "5000 node affinity requirements"));
    assert_non_null(strstr(err, "more than 4096"));
    json_decref(pod);

    json_array_remove(xs, 0);
    while (json_array_size(xs) > NSOF_MAX_POD_REQUIREMENTS - 1)
        json_array_remove(xs, 0);
    pod = json_pack("{s:{s:{s:{s:{s:[{s:O}]}}}}}", "spec", "affinity", "nodeAffinity",
                    "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                    "matchExpressions", xs);
    assert_int_equal(nsof_pod_patch(pod, NSOF_PODS_REMOTE, NULL, 300, &patch, err, sizeof(err)), 0);
    v = json_object_get(json_array_get(patch, 1), "value");
    got = json_object_get(json_array_get(v, 0), "matchExpressions");
    assert_int_equal(json_array_size(v), 1);
    assert_int_equal(json_array_size(got), NSOF_MAX_POD_REQUIREMENTS);
    assert_true(json_equal(json_array_get(got, 0), json_array_get(xs, 0)));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(got, NSOF_MAX_POD_REQUIREMENTS - 1), "key")),
                        NSOF_VNODE_LABEL);
    json_decref(patch);
    json_decref(pod);
    json_decref(xs);
}

/* A consumer's pod sent onward whose terms hold thousands of the hop before's no-loop expression:
 * they all go (in one pass: removed one by one, 46,000 of them held the loop 0.55 s), with the
 * terms that held only them, and the pod is left as it was. */
static void test_many_no_loop(void **state)
{
    json_t *xs = json_array(), *terms = json_array(), *pod, *before, *patch = NULL, *got = NULL,
           *want;
    char err[256];

    (void)state;
    for (int i = 0; i < 20000; i++)
        json_array_append_new(xs, test_js(NOTIN));
    json_array_insert_new(xs, 10000, test_js("{'key':'disk','operator':'In','values':['ssd']}"));
    json_array_append_new(terms, json_pack("{s:o}", "matchExpressions", xs));
    for (int i = 0; i < 10000; i++)
        json_array_append_new(terms, test_js("{'matchExpressions':[" NOTIN "]}"));
    pod = json_pack("{s:{s:{s:s}},s:{s:{s:{s:{s:o}}}}}", "metadata", "labels",
                    "virtualkubelet.liqo.io/origin", "c1", "spec", "affinity", "nodeAffinity",
                    "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", terms);
    before = json_deep_copy(pod);
    assert_int_equal(nsof_pod_patch(pod, NSOF_PODS_REMOTE, NULL, 300, &patch, err, sizeof(err)), 0);
    for (size_t i = 0; i < json_array_size(patch); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(patch, i), "path")),
                   "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
                   "nodeSelectorTerms") == 0)
            got = json_object_get(json_array_get(patch, i), "value");
    want =
        test_js("[{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}," IN "]}]");
    assert_non_null(got);
    assert_true(json_equal(got, want));
    assert_true(json_equal(pod, before));
    json_decref(want);
    json_decref(before);
    json_decref(patch);
    json_decref(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_patch_shape),
        cmocka_unit_test(test_nothing_to_do),
        cmocka_unit_test(test_too_many_terms),
        cmocka_unit_test(test_too_many_requirements),
        cmocka_unit_test(test_many_no_loop),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
