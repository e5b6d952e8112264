/* Unit tests of src/admission/placement.c: which pods stay within the provider's placement, with
 * the field each refusal names. */
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

#include "admission/placement.h"

#define ALLOW_ALL                                                                                  \
    "{'allowNodeNames':true,'allowedTolerations':['*'],'allowedPriorityClasses':['high'],"         \
    "'allowedRuntimeClasses':['gvisor']}"

static void test_check(void **state)
{
    static const struct {
        const char *spec, *placement; /* placement NULL: no ClusterConfig setting */
        const char *msg;              /* NULL: allowed; else a part of the refusal */
    } cases[] = {
        /* nothing special: allowed everywhere */
        {"{'containers':[{'name':'c'}]}", NULL, NULL},
        {"{}", "{}", NULL},
        /* the tolerations every pod gets, and cliqo's own */
        {"{'tolerations':[{'key':'node.kubernetes.io/not-ready','operator':'Exists','effect':"
         "'NoExecute','tolerationSeconds':300},{'key':'node.kubernetes.io/unreachable',"
         "'operator':'Exists'},{'key':'virtual-node.liqo.io/not-allowed','operator':'Exists'}]}",
         NULL, NULL},
        /* nodeName */
        {"{'nodeName':'b-worker-1'}", NULL, "spec.nodeName \"b-worker-1\": naming"},
        {"{'nodeName':'b-worker-1'}", "{'allowNodeNames':false}", "spec.nodeName"},
        {"{'nodeName':'b-worker-1'}", "{'allowNodeNames':true}", NULL},
        {"{'nodeName':''}", NULL, NULL},
        /* nodeSelector on a node's name; other labels are fine */
        {"{'nodeSelector':{'kubernetes.io/hostname':'b-worker-1'}}", NULL,
         "spec.nodeSelector[kubernetes.io/hostname]"},
        {"{'nodeSelector':{'disktype':'ssd'}}", NULL, NULL},
        /* node affinity: required expressions and fields, preferred */
        {"{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
         "'nodeSelectorTerms':[{'matchExpressions':[{'key':'liqo.io/type','operator':'NotIn',"
         "'values':['virtual-node']}]}]}}}}",
         NULL, NULL},
        {"{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
         "'nodeSelectorTerms':[{'matchExpressions':[{'key':'zone','operator':'Exists'}]},"
         "{'matchExpressions':[{'key':'a','operator':'Exists'},{'key':'kubernetes.io/hostname',"
         "'operator':'In','values':['b-cp']}]}]}}}}",
         NULL,
         "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
         ".nodeSelectorTerms[1].matchExpressions[1]: naming"},
        {"{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
         "'nodeSelectorTerms':[{'matchFields':[{'key':'metadata.name','operator':'In',"
         "'values':['b-cp']}]}]}}}}",
         NULL, "nodeSelectorTerms[0].matchFields[0]"},
        {"{'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{"
         "'weight':1,'preference':{'matchExpressions':[{'key':'kubernetes.io/hostname',"
         "'operator':'In','values':['b-cp']}]}}]}}}",
         NULL, "preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]"},
        {"{'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{"
         "'weight':1,'preference':{'matchExpressions':[{'key':'kubernetes.io/hostname',"
         "'operator':'In','values':['b-cp']}]}}]}}}",
         ALLOW_ALL, NULL},
        /* pod affinity on the hostname topology is not a node's name */
        {"{'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{"
         "'topologyKey':'kubernetes.io/hostname','labelSelector':{}}]}}}",
         NULL, NULL},
        /* tolerations of the provider's taints */
        {"{'tolerations':[{'key':'node.kubernetes.io/not-ready'},{'key':'node-role.kubernetes.io/"
         "control-plane','operator':'Exists','effect':'NoSchedule'}]}",
         NULL, "spec.tolerations[1].key \"node-role.kubernetes.io/control-plane\": tolerating"},
        {"{'tolerations':[{'key':'node.kubernetes.io/unschedulable','operator':'Exists'}]}", NULL,
         "spec.tolerations[0].key"},
        {"{'tolerations':[{'key':'gpu','operator':'Exists'}]}", "{'allowedTolerations':['gpu']}",
         NULL},
        {"{'tolerations':[{'key':'gpu2','operator':'Exists'}]}", "{'allowedTolerations':['gpu']}",
         "spec.tolerations[0].key \"gpu2\""},
        {"{'tolerations':[{'key':'gpu','operator':'Exists'}]}", "{'allowedTolerations':[1,'gpu']}",
         "spec.tolerations[0].key"},
        /* no key: every taint */
        {"{'tolerations':[{'operator':'Exists'}]}", NULL, "spec.tolerations[0] has no key"},
        {"{'tolerations':[{'operator':'Exists'}]}", "{'allowedTolerations':['gpu']}",
         "spec.tolerations[0] has no key"},
        {"{'tolerations':[{'operator':'Exists'}]}", ALLOW_ALL, NULL},
        /* priority classes */
        {"{'priorityClassName':'system-node-critical'}", NULL,
         "spec.priorityClassName \"system-node-critical\" is not allowed"},
        {"{'priorityClassName':'high'}", ALLOW_ALL, NULL},
        {"{'priorityClassName':'higher'}", ALLOW_ALL, "spec.priorityClassName \"higher\""},
        {"{'priorityClassName':''}", NULL, NULL},
        /* runtime classes */
        {"{'runtimeClassName':'kata'}", NULL, "spec.runtimeClassName \"kata\" is not allowed"},
        {"{'runtimeClassName':'gvisor'}", ALLOW_ALL, NULL},
        {"{'runtimeClassName':'kata'}", ALLOW_ALL, "spec.runtimeClassName \"kata\""},
        /* a placement that is not an object allows nothing */
        {"{'priorityClassName':'high'}", "['high']", "spec.priorityClassName"},
        /* control characters in a value are not echoed */
        {"{'runtimeClassName':'a\\nb'}", NULL, "spec.runtimeClassName \"a?b\""},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[4096], msg[512] = "";
        json_t *pod, *pl = cases[i].placement ? test_js(cases[i].placement) : NULL;
        int r;

        snprintf(text, sizeof(text), "{'metadata':{'name':'p'},'spec':%s}", cases[i].spec);
        pod = test_js(text);
        r = adm_placement_check(pod, pl, msg, sizeof(msg));
        if (!cases[i].msg) {
            if (r != 0)
                fail_msg("case %zu: refused: %s", i, msg);
        } else {
            if (r != -EPERM)
                fail_msg("case %zu: allowed, want a refusal with '%s'", i, cases[i].msg);
            if (!strstr(msg, cases[i].msg))
                fail_msg("case %zu: '%s' does not contain '%s'", i, msg, cases[i].msg);
            assert_null(strchr(msg, '\n'));
        }
        json_decref(pod);
        json_decref(pl);
    }
}

/* A long toleration list is refused, not walked. */
static void test_bounds(void **state)
{
    json_t *pod = test_js("{'spec':{'tolerations':[]}}");
    json_t *tols = json_object_get(json_object_get(pod, "spec"), "tolerations");
    char msg[256];

    (void)state;
    for (int i = 0; i <= ADM_PLACEMENT_MAX_ITEMS; i++)
        json_array_append_new(tols, json_pack("{s:s}", "key", "node.kubernetes.io/not-ready"));
    assert_int_equal(adm_placement_check(pod, NULL, msg, sizeof(msg)), -EPERM);
    assert_non_null(strstr(msg, "spec.tolerations: more than"));
    json_decref(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_bounds),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
