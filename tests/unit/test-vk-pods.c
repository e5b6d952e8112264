/* Unit tests of the virtual kubelet's pure translations (docs/offloading.md, "Pods" and "Each
 * virtual kubelet"): src/offloading/podxlate.c (home -> remote pod, remote -> home status,
 * what needs updating, stale/adopt decisions, the action of a reconcile (also while the pod-CIDR
 * remapping is pending), Events, transforms) and
 * src/virtualkubelet/mapxlate.c (which namespaces are asked for, how much of the provider's answer
 * is believed, the conditions mirrored, the desiredMapping patch).
 *
 * Expectations are written as "path = JSON" (the value at path must equal JSON) or "!path" (nothing
 * at path); a path is keys and array indices separated by '>'. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "virtualkubelet/mapxlate.h"
#include "offloading/podxlate.h"

#define HOME_ID "aaaaaaaa-1111-4111-8111-111111111111"
#define PEER_ID "bbbbbbbb-2222-4222-8222-222222222222"
#define UID     "cccccccc-3333-4333-8333-333333333333"
#define NOW     "2024-05-01T10:00:00Z"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);

    if (!j)
        fail_msg("bad test JSON: %s: %s", e.text, text);
    return j;
}

/* The value at a '>'-separated path, or NULL. */
static json_t *at(json_t *o, const char *path)
{
    char buf[512], *save = NULL, *tok;

    snprintf(buf, sizeof(buf), "%s", path);
    for (tok = strtok_r(buf, ">", &save); tok && o; tok = strtok_r(NULL, ">", &save)) {
        if (json_is_array(o)) {
            char *end;
            long i = strtol(tok, &end, 10);

            o = *end ? NULL : json_array_get(o, (size_t)i);
        } else {
            o = json_object_get(o, tok);
        }
    }
    return o;
}

static void expect(json_t *o, const char *const *exps, const char *what)
{
    for (; *exps; exps++) {
        const char *e = *exps, *eq;
        char path[512];
        json_t *want, *have;

        if (e[0] == '!') {
            if (at(o, e + 1)) {
                char *dump = json_dumps(at(o, e + 1), JSON_COMPACT | JSON_ENCODE_ANY);

                fail_msg("%s: %s should be absent, is %s", what, e + 1, dump);
            }
            continue;
        }
        eq = strstr(e, " = ");
        assert_non_null(eq);
        snprintf(path, sizeof(path), "%.*s", (int)(eq - e), e);
        want = js(eq + 3);
        have = at(o, path);
        if (!have || !json_equal(have, want)) {
            char *h = have ? json_dumps(have, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

            fail_msg("%s: %s is %s, want %s", what, path, h ? h : "(absent)", eq + 3);
        }
        json_decref(want);
    }
}

/* ---- home -> remote -----------------------------------------------------------------------------
 */

#define BASE_META                                                                                  \
    "\"metadata\":{\"name\":\"web-1\",\"namespace\":\"shop\",\"uid\":\"" UID "\","                 \
    "\"resourceVersion\":\"41\",\"labels\":{\"app\":\"web\"},\"annotations\":{\"b\":\"2\","        \
    "\"a\":\"1\"},\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"controller\":true}]}"

static void test_remote_pod(void **state)
{
    static const struct {
        const char *what, *home;
        int rc;
        const char *exps[28];
    } cases[] = {
        {"the basics",
         "{" BASE_META ",\"spec\":{\"nodeName\":\"liqo-x\",\"nodeSelector\":{\"k\":\"v\"},"
         "\"serviceAccountName\":\"builder\",\"serviceAccount\":\"builder\",\"priority\":0,"
         "\"priorityClassName\":\"high\",\"schedulerName\":\"s\",\"preemptionPolicy\":\"Never\","
         "\"runtimeClassName\":\"kata\","
         "\"overhead\":{\"cpu\":\"1\"},\"ephemeralContainers\":[{\"name\":\"dbg\"}],"
         "\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}],\"restartPolicy\":\"Always\"},"
         "\"status\":{\"phase\":\"Pending\"}}",
         0,
         {"apiVersion = \"v1\"",
          "kind = \"Pod\"",
          "metadata>name = \"web-1\"",
          "metadata>namespace = \"shop-remote\"",
          "!metadata>uid",
          "!metadata>resourceVersion",
          "!metadata>ownerReferences",
          "metadata>labels>app = \"web\"",
          "metadata>labels>virtualkubelet.liqo.io/origin = \"" HOME_ID "\"",
          "metadata>labels>virtualkubelet.liqo.io/destination = \"" PEER_ID "\"",
          "metadata>labels>liqo.io/reflected = \"true\"",
          "metadata>labels>offloading.cliqo.io/home-uid = \"" UID "\"",
          "metadata>labels>offloading.cliqo.io/home-namespace = \"shop\"",
          "metadata>annotations>offloading.cliqo.io/home-name = \"web-1\"",
          "metadata>annotations>offloading.cliqo.io/propagated-annotations = \"a,b\"",
          "!spec>nodeName",
          "!spec>nodeSelector",
          "!spec>serviceAccountName",
          "!spec>serviceAccount",
          "!spec>priority",
          "!spec>priorityClassName",
          "!spec>runtimeClassName",
          "!spec>schedulerName",
          "!spec>preemptionPolicy",
          "!status",
          NULL}},
        {"the rest of the basics",
         "{" BASE_META ",\"spec\":{\"overhead\":{\"cpu\":\"1\"},\"ephemeralContainers\":[],"
         "\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}],\"restartPolicy\":\"Always\"}}",
         0,
         {"!spec>overhead", "!spec>ephemeralContainers",
          "spec>automountServiceAccountToken = false", "spec>restartPolicy = \"Always\"",
          "spec>containers>0>image = \"nginx\"",
          "spec>affinity>nodeAffinity = {\"requiredDuringSchedulingIgnoredDuringExecution\":"
          "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"liqo.io/type\","
          "\"operator\":\"NotIn\",\"values\":[\"virtual-node\"]}]}]}}",
          NULL}},
        {"every toleration dropped: the provider's taints are its own (docs/security.md)",
         "{" BASE_META ",\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],"
         "\"tolerations\":[{\"key\":\"virtual-node.liqo.io/not-allowed\",\"operator\":"
         "\"Exists\",\"effect\":\"NoExecute\"},{\"key\":\"node.kubernetes.io/unreachable\","
         "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},"
         "{\"key\":\"gpu\",\"operator\":\"Exists\"}]}}",
         0,
         {"!spec>tolerations", NULL}},
        {"only home tolerations: the list goes",
         "{" BASE_META ",\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],"
         "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\"}]}}",
         0,
         {"!spec>tolerations", NULL}},
        {"service-account token volumes and their mounts dropped",
         "{" BASE_META ",\"spec\":{\"serviceAccountName\":\"builder\",\"containers\":[{\"name\":"
         "\"c\",\"image\":\"i\",\"volumeMounts\":[{\"name\":\"kube-api-access-x1\",\"mountPath\":"
         "\"/var/run/secrets/kubernetes.io/serviceaccount\"},{\"name\":\"builder-token-ab1cd\","
         "\"mountPath\":\"/t\"},{\"name\":\"data\",\"mountPath\":\"/data\"}]}],"
         "\"initContainers\":[{\"name\":\"init\",\"image\":\"i\",\"volumeMounts\":[{\"name\":"
         "\"builder-token-ab1cd\",\"mountPath\":\"/t\"}]}],"
         "\"volumes\":[{\"name\":\"kube-api-access-x1\",\"projected\":{\"sources\":["
         "{\"serviceAccountToken\":{\"path\":\"token\"}},{\"configMap\":{\"name\":"
         "\"kube-root-ca.crt\"}}]}},{\"name\":\"builder-token-ab1cd\",\"secret\":{\"secretName\":"
         "\"builder-token-ab1cd\"}},{\"name\":\"data\",\"secret\":{\"secretName\":"
         "\"builder-token-notfive\"}}]}}",
         0,
         {"spec>volumes = [{\"name\":\"data\",\"secret\":{\"secretName\":"
          "\"builder-token-notfive\"}}]",
          "spec>containers>0>volumeMounts = [{\"name\":\"data\",\"mountPath\":\"/data\"}]",
          "!spec>initContainers>0>volumeMounts", NULL}},
        {"the default service account's token secret",
         "{" BASE_META
         ",\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"volumeMounts\":"
         "[{\"name\":\"default-token-zz9zz\",\"mountPath\":\"/t\"}]}],\"volumes\":[{\"name\":"
         "\"default-token-zz9zz\",\"secret\":{\"secretName\":\"default-token-zz9zz\"}},"
         "{\"name\":\"other\",\"secret\":{\"secretName\":\"other-token-zz9zz\"}}]}}",
         0,
         {"spec>volumes = [{\"name\":\"other\",\"secret\":{\"secretName\":"
          "\"other-token-zz9zz\"}}]",
          "!spec>containers>0>volumeMounts", NULL}},
        {"the node affinity replaced, pod (anti-)affinity kept",
         "{" BASE_META ",\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],\"affinity\":"
         "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
         "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"liqo.io/type\",\"operator\":"
         "\"In\",\"values\":[\"virtual-node\"]}]}]}},\"podAntiAffinity\":{\"x\":1}}}}",
         0,
         {"spec>affinity>podAntiAffinity = {\"x\":1}",
          "spec>affinity>nodeAffinity>requiredDuringSchedulingIgnoredDuringExecution>"
          "nodeSelectorTerms>0>matchExpressions>0>operator = \"NotIn\"",
          "!spec>affinity>nodeAffinity>requiredDuringSchedulingIgnoredDuringExecution>"
          "nodeSelectorTerms>1",
          NULL}},
        {"our labels and annotations cannot be spoofed by the home pod",
         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"shop\",\"uid\":\"" UID "\",\"labels\":{"
         "\"virtualkubelet.liqo.io/origin\":\"evil\",\"offloading.cliqo.io/home-uid\":\"x\"},"
         "\"annotations\":{\"offloading.cliqo.io/home-name\":\"other\","
         "\"offloading.cliqo.io/propagated-annotations\":\"kube-system\"}},"
         "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
         0,
         {"metadata>labels>virtualkubelet.liqo.io/origin = \"" HOME_ID "\"",
          "metadata>labels>offloading.cliqo.io/home-uid = \"" UID "\"",
          "metadata>annotations>offloading.cliqo.io/home-name = \"p\"",
          "metadata>annotations>offloading.cliqo.io/propagated-annotations = \"\"", NULL}},
        {"no UID",
         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"shop\"},\"spec\":{\"containers\":"
         "[{\"name\":\"c\"}]}}",
         -EINVAL,
         {NULL}},
        {"no containers",
         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"shop\",\"uid\":\"u\"},\"spec\":{}}",
         -EINVAL,
         {NULL}},
    };
    struct vkp_ids ids = {HOME_ID, PEER_ID};

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *home = js(cases[i].home), *out = NULL;
        char err[256] = "";
        int rc = vkp_remote_pod(home, "shop-remote", &ids, &out, err, sizeof(err));

        if (rc != cases[i].rc)
            fail_msg("%s: rc %d, want %d (%s)", cases[i].what, rc, cases[i].rc, err);
        if (rc == 0)
            expect(out, cases[i].exps, cases[i].what);
        else
            assert_true(err[0] != '\0');
        json_decref(out);
        json_decref(home);
    }
}

static void test_daemonset_terminal(void **state)
{
    json_t *ds = js("{\"metadata\":{\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"controller\":"
                    "true}]},\"status\":{\"phase\":\"Running\"}}");
    json_t *notctl = js("{\"metadata\":{\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
                        "\"status\":{\"phase\":\"Failed\"}}");

    (void)state;
    assert_true(vkp_is_daemonset(ds));
    assert_false(vkp_is_daemonset(notctl));
    assert_false(vkp_terminal(ds));
    assert_true(vkp_terminal(notctl));
    json_decref(ds);
    json_decref(notctl);
}

/* ---- stale, adopt, foreign ----------------------------------------------------------------------
 */

static void test_classify(void **state)
{
    static const struct {
        const char *remote_labels;
        enum vkp_match want;
    } cases[] = {
        {"{\"virtualkubelet.liqo.io/origin\":\"" HOME_ID "\",\"offloading.cliqo.io/home-uid\":"
         "\"" UID "\"}",
         VKP_OURS},
        {"{\"virtualkubelet.liqo.io/origin\":\"" HOME_ID "\",\"offloading.cliqo.io/home-uid\":"
         "\"older-incarnation\"}",
         VKP_STALE},
        {"{\"virtualkubelet.liqo.io/origin\":\"" HOME_ID "\"}", VKP_STALE},
        {"{\"virtualkubelet.liqo.io/origin\":\"someone-else\",\"offloading.cliqo.io/home-uid\":"
         "\"" UID "\"}",
         VKP_FOREIGN},
        {"{}", VKP_FOREIGN},
    };
    json_t *home = js("{\"metadata\":{\"name\":\"p\",\"uid\":\"" UID "\"}}");

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[512];
        json_t *remote;

        snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"p\",\"labels\":%s}}",
                 cases[i].remote_labels);
        remote = js(buf);
        if (vkp_classify(home, remote, HOME_ID) != cases[i].want)
            fail_msg("case %zu: %d, want %d", i, vkp_classify(home, remote, HOME_ID),
                     cases[i].want);
        json_decref(remote);
    }
    json_decref(home);
}

/* ---- what needs updating on the remote pod
 * -------------------------------------------------------- */

static void test_remote_update(void **state)
{
    /* The remote pod as created from HOME, then each case changes one side. */
    static const char HOME[] =
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"shop\",\"uid\":\"" UID "\",\"labels\":"
        "{\"app\":\"web\"},\"annotations\":{\"a\":\"1\"}},\"spec\":{\"containers\":[{\"name\":"
        "\"c\",\"image\":\"nginx:1\"},{\"name\":\"d\",\"image\":\"busybox\"}],\"initContainers\":"
        "[{\"name\":\"i\",\"image\":\"init:1\"}]%s}}";
    static const struct {
        const char *what, *home_extra, *home_labels, *home_annots, *c_image, *remote_extra;
        bool want_patch;
        const char *exps[8];
    } cases[] = {
        {"nothing changed", "", NULL, NULL, NULL, "", false, {NULL}},
        {"a label added and one removed",
         "",
         "{\"app\":\"shop\",\"tier\":\"front\"}",
         NULL,
         NULL,
         "",
         true,
         {"metadata>labels = {\"app\":\"shop\",\"tier\":\"front\"}", "!spec", NULL}},
        {"an annotation changed, one removed",
         "",
         NULL,
         "{\"b\":\"2\"}",
         NULL,
         "",
         true,
         {"metadata>annotations>b = \"2\"", "metadata>annotations>a = null",
          "metadata>annotations>offloading.cliqo.io/propagated-annotations = \"b\"", NULL}},
        {"an image changed",
         "",
         NULL,
         NULL,
         "nginx:2",
         "",
         true,
         {"spec>containers = [{\"name\":\"c\",\"image\":\"nginx:2\"}]", "!metadata", NULL}},
        {"activeDeadlineSeconds set",
         ",\"activeDeadlineSeconds\":60",
         NULL,
         NULL,
         NULL,
         "",
         true,
         {"spec>activeDeadlineSeconds = 60", NULL}},
        {"activeDeadlineSeconds lowered",
         ",\"activeDeadlineSeconds\":60",
         NULL,
         NULL,
         NULL,
         "120",
         true,
         {"spec>activeDeadlineSeconds = 60", NULL}},
        {"activeDeadlineSeconds cannot be raised",
         ",\"activeDeadlineSeconds\":600",
         NULL,
         NULL,
         NULL,
         "120",
         false,
         {NULL}},
    };
    struct vkp_ids ids = {HOME_ID, PEER_ID};

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[2048];
        json_t *home0, *remote = NULL, *home, *patch;
        char err[128];

        snprintf(buf, sizeof(buf), HOME, "");
        home0 = js(buf);
        assert_int_equal(vkp_remote_pod(home0, "r", &ids, &remote, err, sizeof(err)), 0);
        /* What the provider adds by itself is never removed. */
        json_object_set_new(json_object_get(json_object_get(remote, "metadata"), "annotations"),
                            "cni.example/ip", json_string("10.1.2.3"));
        if (*cases[i].remote_extra)
            json_object_set_new(json_object_get(remote, "spec"), "activeDeadlineSeconds",
                                json_integer(atoi(cases[i].remote_extra)));
        snprintf(buf, sizeof(buf), HOME, cases[i].home_extra);
        home = js(buf);
        if (cases[i].home_labels)
            json_object_set_new(json_object_get(home, "metadata"), "labels",
                                js(cases[i].home_labels));
        if (cases[i].home_annots)
            json_object_set_new(json_object_get(home, "metadata"), "annotations",
                                js(cases[i].home_annots));
        if (cases[i].c_image)
            json_object_set_new(at(home, "spec>containers>0"), "image",
                                json_string(cases[i].c_image));
        patch = vkp_remote_update(home, remote, &ids);
        if ((patch != NULL) != cases[i].want_patch)
            fail_msg("%s: patch %s", cases[i].what, patch ? "unexpected" : "missing");
        if (patch) {
            expect(patch, cases[i].exps, cases[i].what);
            assert_null(at(patch, "metadata>annotations>cni.example/ip"));
        }
        json_decref(patch);
        json_decref(home);
        json_decref(home0);
        json_decref(remote);
    }
}

/* ---- remote -> home status
 * --------------------------------------------------------------------------- */

/* The test's remapping: 10.210.0.0/16 on the provider is 10.0.0.0/16 here. */
static int xlate(void *data, const char *ip, char *out, size_t size)
{
    (void)data;
    if (strncmp(ip, "10.210.", 7) != 0)
        return -EINVAL;
    snprintf(out, size, "10.0.%s", ip + 7);
    return 0;
}

static const char HOME_POD[] =
    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"shop\",\"uid\":\"" UID "\"},\"spec\":{"
    "\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"},{\"name\":\"side\",\"image\":\"s\"}],"
    "\"initContainers\":[{\"name\":\"init\",\"image\":\"i\"}]},\"status\":{\"phase\":\"Pending\","
    "\"qosClass\":\"BestEffort\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
    "\"lastTransitionTime\":\"2024-05-01T09:00:00Z\"},{\"type\":\"cliqo.io/ProviderReachable\","
    "\"status\":\"True\",\"reason\":\"ProviderReachable\",\"message\":\"the provider answers\","
    "\"lastTransitionTime\":\"2024-05-01T08:00:00Z\"}]}}";

static void test_home_status(void **state)
{
    static const struct {
        const char *what, *remote_status;
        bool reachable;
        const char *exps[20];
    } cases[] = {
        {"running, translated, prefixed",
         "{\"phase\":\"Running\",\"hostIP\":\"127.2.0.1\",\"podIP\":\"10.210.3.4\",\"podIPs\":["
         "{\"ip\":\"10.210.3.4\"}],\"startTime\":\"2024-05-01T09:30:00Z\",\"qosClass\":"
         "\"BestEffort\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
         "\"lastTransitionTime\":\"2024-05-01T09:31:00.123456Z\"}],\"containerStatuses\":["
         "{\"name\":\"c\",\"ready\":true,\"restartCount\":3,\"image\":\"nginx\",\"imageID\":"
         "\"docker.io/nginx@sha256:ab\",\"containerID\":\"containerd://0123abcd\",\"started\":true,"
         "\"state\":{\"running\":{\"startedAt\":\"2024-05-01T09:31:00Z\"}},\"lastState\":{"
         "\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\",\"containerID\":"
         "\"containerd://old\"}}},{\"name\":\"not-ours\",\"ready\":true}]}",
         true,
         {"phase = \"Running\"",
          "hostIP = \"192.0.2.7\"",
          "podIP = \"10.0.3.4\"",
          "podIPs = [{\"ip\":\"10.0.3.4\"}]",
          "startTime = \"2024-05-01T09:30:00Z\"",
          "qosClass = \"BestEffort\"",
          "conditions>0>type = \"Ready\"",
          "conditions>0>lastTransitionTime = \"2024-05-01T09:31:00Z\"",
          "conditions>1>type = \"cliqo.io/ProviderReachable\"",
          "conditions>1>status = \"True\"",
          "conditions>1>lastTransitionTime = \"2024-05-01T08:00:00Z\"",
          "!conditions>2",
          "containerStatuses>0>name = \"c\"",
          "containerStatuses>0>restartCount = 3",
          "containerStatuses>0>containerID = \"cliqo://0123abcd\"",
          "containerStatuses>0>lastState>terminated>containerID = \"cliqo://old\"",
          "containerStatuses>0>lastState>terminated>exitCode = 137",
          "containerStatuses>0>state = {\"running\":{\"startedAt\":\"2024-05-01T09:31:00Z\"}}",
          "!containerStatuses>1",
          NULL}},
        {"crash-looping container, failing pod",
         "{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"the node was low on memory\","
         "\"containerStatuses\":[{\"name\":\"c\",\"ready\":false,\"restartCount\":5,\"state\":"
         "{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off\"}}}],"
         "\"initContainerStatuses\":[{\"name\":\"init\",\"ready\":true,\"state\":{\"terminated\":"
         "{\"exitCode\":0,\"reason\":\"Completed\"}}}]}",
         true,
         {"phase = \"Failed\"", "reason = \"Evicted\"", "message = \"the node was low on memory\"",
          "containerStatuses>0>state>waiting>reason = \"CrashLoopBackOff\"",
          "containerStatuses>0>restartCount = 5", "containerStatuses>0>image = \"\"",
          "initContainerStatuses>0>state>terminated>reason = \"Completed\"", "!hostIP", "!podIP",
          NULL}},
        {"hostile values are dropped or bounded",
         "{\"phase\":\"Exploded\",\"podIP\":\"not-an-ip\",\"conditions\":[{\"type\":\"bad type\","
         "\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"Maybe\"},{\"type\":"
         "\"cliqo.io/ProviderReachable\",\"status\":\"False\"},{\"type\":\"Ready\",\"status\":"
         "\"False\",\"lastTransitionTime\":\"yesterday\"},{\"type\":\"Ready\",\"status\":\"True\"}]"
         ","
         "\"containerStatuses\":[{\"name\":\"c\",\"restartCount\":-4},{\"name\":\"c\","
         "\"restartCount\":9}],\"qosClass\":\"Platinum\"}",
         true,
         {"phase = \"Pending\"", "!podIP", "!podIPs", "conditions>0>type = \"Ready\"",
          "conditions>0>status = \"False\"", "!conditions>0>lastTransitionTime",
          "conditions>1>type = \"cliqo.io/ProviderReachable\"", "!conditions>2",
          "containerStatuses>0>restartCount = 0", "!containerStatuses>1", "!qosClass", NULL}},
        {"an address outside the provider's remapped pod CIDR is dropped (issue 17, point 12)",
         "{\"phase\":\"Running\",\"podIP\":\"192.168.1.1\",\"podIPs\":[{\"ip\":\"192.168.1.1\"},"
         "{\"ip\":\"fd00::1\"},{\"ip\":\"10.210.7.8\"},{\"ip\":\"10.210.7.9\"},{\"ip\":"
         "\"10.210.7.10\"}]}",
         true,
         {"podIP = \"10.0.7.8\"", "podIPs = [{\"ip\":\"10.0.7.8\"},{\"ip\":\"10.0.7.9\"}]", NULL}},
        {"only addresses outside: no address at all",
         "{\"phase\":\"Running\",\"podIP\":\"10.96.0.1\",\"podIPs\":[{\"ip\":\"10.96.0.1\"}]}",
         true,
         {"phase = \"Running\"", "!podIP", "!podIPs", NULL}},
        {"unreachable: the condition turns False now",
         "{\"phase\":\"Running\"}",
         false,
         {"conditions>0>type = \"cliqo.io/ProviderReachable\"", "conditions>0>status = \"False\"",
          "conditions>0>reason = \"ProviderUnreachable\"",
          "conditions>0>lastTransitionTime = \"" NOW "\"", NULL}},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *home = js(HOME_POD), *remote, *st;
        struct vkp_status_ctx ctx = {"192.0.2.7", xlate, NULL, cases[i].reachable, "timeout", NOW};

        remote = json_pack("{s:{s:s},s:o}", "metadata", "name", "p", "status",
                           js(cases[i].remote_status));
        st = vkp_home_status(home, remote, &ctx);
        assert_non_null(st);
        expect(st, cases[i].exps, cases[i].what);
        json_decref(st);
        json_decref(remote);
        json_decref(home);
    }
}

static void test_status_quiet(void **state)
{
    static const struct {
        const char *status;
        bool quiet;
    } cases[] = {
        {"{}", true},
        {"{\"phase\":\"Pending\"}", true},
        {"{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"},"
         "{\"type\":\"cliqo.io/ProviderReachable\",\"status\":\"True\"}]}",
         true},
        {"{\"phase\":\"Pending\",\"containerStatuses\":[]}", true},
        /* what a user sees: the provider cannot place it, containers being made, init progress */
        {"{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
         "\"reason\":\"Unschedulable\"}]}",
         false},
        {"{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"waiting\":"
         "{\"reason\":\"ContainerCreating\"}}}]}",
         false},
        {"{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i\",\"state\":{\"waiting\":"
         "{\"reason\":\"ErrImagePull\"}}}]}",
         false},
        {"{\"phase\":\"Pending\",\"reason\":\"SchedulingGated\"}", false},
        {"{\"phase\":\"Running\"}", false},
        {"{\"phase\":\"Failed\"}", false},
        /* hostile shapes: not a list, not strings */
        {"{\"phase\":\"Pending\",\"conditions\":{\"type\":\"PodScheduled\"},\"containerStatuses\":"
         "7}",
         true},
        {"{\"phase\":\"Pending\",\"conditions\":[{\"type\":1,\"status\":\"False\"},7]}", true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *st = js(cases[i].status);

        if (vkp_status_quiet(st) != cases[i].quiet)
            fail_msg("case %zu (%s): quiet is %d", i, cases[i].status, !cases[i].quiet);
        json_decref(st);
    }
}

static void test_refusal_transient(void **state)
{
    static const struct {
        int err;
        const char *message;
        bool transient;
    } cases[] = {
        /* Kubernetes 1.20's ServiceAccount admission, in a namespace without its default account */
        {-EPERM,
         "pods \"web-1\" is forbidden: error looking up service account ns-1/default: "
         "serviceaccount \"default\" not found",
         true},
        /* decisions about the pod: the offer, Pod Security, the quota, RBAC */
        {-EPERM,
         "admission webhook \"offer.admission.cliqo.io\" denied the request: offer exceeded: "
         "cpu 1500m requested + 1 > 2 offered",
         false},
        {-EPERM, "pods \"web-1\" is forbidden: exceeded quota: cliqo-offer, requested: pods=1",
         false},
        {-EPERM,
         "pods is forbidden: User \"system:serviceaccount:t:vk-x\" cannot create resource "
         "\"pods\" in API group \"\" in the namespace \"ns-1\"",
         false},
        /* the account's words, but not a Forbidden, or no message at all */
        {-EINVAL, "error looking up service account ns-1/default: serviceaccount not found", false},
        {-EEXIST, "error looking up service account ns-1/default: not found", false},
        {-EPERM, "error looking up service account ns-1/default: the server is busy", false},
        {-EPERM, "", false},
        {-EPERM, NULL, false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (vkp_refusal_transient(cases[i].err, cases[i].message) != cases[i].transient)
            fail_msg("case %zu (%s): transient is %d", i,
                     cases[i].message ? cases[i].message : "(null)", !cases[i].transient);
}

static void test_home_status_bounds(void **state)
{
    char *long_msg = malloc(5000);
    json_t *home = js(HOME_POD), *remote, *st;
    struct vkp_status_ctx ctx = {"192.0.2.7", NULL, NULL, true, NULL, NOW};

    (void)state;
    /* 2-byte UTF-8 characters: a cut at 1024 bytes must not split one. */
    for (int i = 0; i < 4998; i += 2) {
        long_msg[i] = (char)0xc3;
        long_msg[i + 1] = (char)0xa9;
    }
    long_msg[4998] = 'x';
    long_msg[4999] = '\0';
    remote = json_pack("{s:{s:s},s:{s:s,s:s}}", "metadata", "name", "p", "status", "phase",
                       "Running", "message", long_msg);
    st = vkp_home_status(home, remote, &ctx);
    assert_non_null(st);
    assert_true(strlen(json_string_value(json_object_get(st, "message"))) <= VKP_MAX_MESSAGE);
    assert_int_equal(strlen(json_string_value(json_object_get(st, "message"))) % 2, 0);
    json_decref(st);
    json_decref(remote);
    json_decref(home);
    free(long_msg);
}

static void test_unreachable_and_unscheduled(void **state)
{
    json_t *home = js(HOME_POD), *st;
    struct vkp_status_ctx ctx = {"192.0.2.7", NULL, NULL, false, "3 probes failed", NOW};
    static const char *const keep[] = {"phase = \"Pending\"",
                                       "qosClass = \"BestEffort\"",
                                       "conditions>0>type = \"PodScheduled\"",
                                       "conditions>0>status = \"True\"",
                                       "conditions>1>type = \"cliqo.io/ProviderReachable\"",
                                       "conditions>1>status = \"False\"",
                                       "conditions>1>lastTransitionTime = \"" NOW "\"",
                                       "!conditions>2",
                                       NULL};
    static const char *const refused[] = {"conditions>0>type = \"PodScheduled\"",
                                          "conditions>0>status = \"False\"",
                                          "conditions>0>reason = \"ProviderRefused\"",
                                          "conditions>0>message = \"offer exceeded: cpu\"",
                                          "conditions>0>lastTransitionTime = \"" NOW "\"",
                                          "phase = \"Pending\"",
                                          NULL};

    (void)state;
    /* The provider is gone: the home pod keeps what it shows, with the condition False. */
    st = vkp_home_status(home, NULL, &ctx);
    expect(st, keep, "unreachable without a remote pod");
    json_decref(st);
    ctx.reachable = true;
    st = vkp_unscheduled_status(home, VKP_REASON_REFUSED, "offer exceeded: cpu", &ctx);
    expect(st, refused, "refused");
    /* Written once, the transition time then stays. */
    json_object_set_new(home, "status", st);
    ctx.now = "2024-05-01T11:11:11Z";
    st = vkp_unscheduled_status(home, VKP_REASON_REFUSED, "offer exceeded: cpu", &ctx);
    expect(st, refused, "refused again");
    assert_null(vkp_status_patch(home, st));
    json_decref(st);
    json_decref(home);
}

static void test_status_patch(void **state)
{
    static const struct {
        const char *cur, *want;
        const char *patch; /* NULL: none */
    } cases[] = {
        {"{\"phase\":\"Running\",\"podIP\":\"1.2.3.4\"}",
         "{\"phase\":\"Running\",\"podIP\":"
         "\"1.2.3.4\"}",
         NULL},
        {"{\"phase\":\"Pending\"}", "{\"phase\":\"Running\",\"podIP\":\"1.2.3.4\"}",
         "{\"phase\":\"Running\",\"podIP\":\"1.2.3.4\"}"},
        /* A failed pod loses its address: nulled. startTime and qosClass are never nulled. */
        {"{\"phase\":\"Running\",\"podIP\":\"1.2.3.4\",\"startTime\":\"2024-01-01T00:00:00Z\","
         "\"qosClass\":\"Burstable\"}",
         "{\"phase\":\"Failed\"}", "{\"phase\":\"Failed\",\"podIP\":null}"},
        /* Keys we do not manage are left alone. */
        {"{\"phase\":\"Running\",\"nominatedNodeName\":\"n\"}", "{\"phase\":\"Running\"}", NULL},
        {NULL, "{\"phase\":\"Pending\"}", "{\"phase\":\"Pending\"}"},
        /* What the API server stores as null reads back equal to what we wrote without it. */
        {"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":null}],"
         "\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"running\":{\"startedAt\":null}}}]}",
         "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],\"containerStatuses\":"
         "[{\"name\":\"c\",\"state\":{\"running\":{}}}]}",
         NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *home = json_object(), *want = js(cases[i].want), *patch, *exp;

        if (cases[i].cur)
            json_object_set_new(home, "status", js(cases[i].cur));
        patch = vkp_status_patch(home, want);
        if (!cases[i].patch) {
            assert_null(patch);
        } else {
            exp = js(cases[i].patch);
            if (!json_equal(patch, exp))
                fail_msg("case %zu: %s", i, patch ? json_dumps(patch, 0) : "NULL");
            json_decref(exp);
        }
        json_decref(patch);
        json_decref(want);
        json_decref(home);
    }
}

/* ---- the action of a reconcile ------------------------------------------------------------------
 */

enum { NONE, LIVE, DEL }; /* a pod of a decide case: absent, there, deletionTimestamp set */

/* vkp_decide over s with the home and remote pods made from the case's words (s->home and
 * s->remote are set for the call only). */
static enum vkp_action decide(struct vkp_situation *s, int home_kind, int remote_kind,
                              const char *remote_uid, bool ds, bool term)
{
    char buf[512];
    json_t *home = NULL, *remote = NULL;
    enum vkp_action a;

    if (home_kind != NONE) {
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"p\",\"uid\":\"" UID "\"%s%s},\"status\":{\"phase\":"
                 "\"%s\"}}",
                 home_kind == DEL ? ",\"deletionTimestamp\":\"2024-05-01T10:00:00Z\"" : "",
                 ds ? ",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"controller\":true}]" : "",
                 term ? "Succeeded" : "Running");
        home = js(buf);
    }
    if (remote_kind != NONE) {
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"p\",\"labels\":{\"virtualkubelet.liqo.io/origin\":"
                 "\"" HOME_ID "\",\"offloading.cliqo.io/home-uid\":\"%s\"}%s}}",
                 remote_uid,
                 remote_kind == DEL ? ",\"deletionTimestamp\":\"2024-05-01T10:00:00Z\"" : "");
        remote = js(buf);
    }
    s->home = home;
    s->remote = remote;
    s->home_id = HOME_ID;
    a = vkp_decide(s);
    s->home = s->remote = NULL;
    json_decref(home);
    json_decref(remote);
    return a;
}

static void test_decide(void **state)
{
    static const struct {
        const char *what;
        int home, remote;       /* NONE, LIVE, DEL (deletionTimestamp set) */
        const char *remote_uid; /* home-uid label of the remote pod */
        bool home_synced, remote_synced, mapped, reachable, refused, status, update, ds, term;
        enum vkp_action want;
    } cases[] = {
        {"home informer not synced", LIVE, NONE, NULL, false, true, true, true, false, false, false,
         false, false, VKP_WAIT},
        {"new pod: create", LIVE, NONE, NULL, true, true, true, true, false, false, false, false,
         false, VKP_CREATE},
        {"remote informer not synced: wait", LIVE, NONE, NULL, true, false, true, true, false,
         false, false, false, false, VKP_WAIT},
        {"refused, backoff pending, status to write", LIVE, NONE, NULL, true, true, true, true,
         true, true, false, false, false, VKP_STATUS},
        {"refused, backoff pending, status written", LIVE, NONE, NULL, true, true, true, true, true,
         false, false, false, false, VKP_WAIT},
        {"remote deleted behind our back: created again", LIVE, NONE, NULL, true, true, true, true,
         false, true, false, false, false, VKP_CREATE},
        {"terminal home pod is not re-created", LIVE, NONE, NULL, true, true, true, true, false,
         false, false, false, true, VKP_NOTHING},
        {"adopt: ours, nothing differs", LIVE, LIVE, UID, true, true, true, true, false, false,
         false, false, false, VKP_NOTHING},
        {"ours: status differs", LIVE, LIVE, UID, true, true, true, true, false, true, false, false,
         false, VKP_STATUS},
        {"ours: update first, then status", LIVE, LIVE, UID, true, true, true, true, false, true,
         true, false, false, VKP_UPDATE_REMOTE},
        {"stale incarnation: delete it", LIVE, LIVE, "old", true, true, true, true, false, false,
         false, false, false, VKP_DELETE_REMOTE},
        {"stale incarnation going: wait", LIVE, DEL, "old", true, true, true, true, false, false,
         false, false, false, VKP_WAIT},
        {"home deleting: remote deleted with its grace", DEL, LIVE, UID, true, true, true, true,
         false, false, false, false, false, VKP_DELETE_REMOTE},
        {"home deleting, remote going: wait", DEL, DEL, UID, true, true, true, true, false, false,
         false, false, false, VKP_WAIT},
        {"home deleting, remote gone: finish", DEL, NONE, NULL, true, true, true, true, false,
         false, false, false, false, VKP_DELETE_HOME},
        {"home deleting, remote unknown: wait", DEL, NONE, NULL, true, false, true, true, false,
         false, false, false, false, VKP_WAIT},
        {"orphan: home gone", NONE, LIVE, UID, true, true, true, true, false, false, false, false,
         false, VKP_DELETE_REMOTE},
        {"orphan already going", NONE, DEL, UID, true, true, true, true, false, false, false, false,
         false, VKP_WAIT},
        {"orphan while unreachable: nothing deleted", NONE, LIVE, UID, true, true, true, false,
         false, false, false, false, false, VKP_WAIT},
        {"nothing at all", NONE, NONE, NULL, true, true, true, true, false, false, false, false,
         false, VKP_NOTHING},
        {"unreachable: status only", LIVE, LIVE, UID, true, true, true, false, false, true, true,
         false, false, VKP_STATUS},
        {"unreachable: no create", LIVE, NONE, NULL, true, true, true, false, false, false, false,
         false, false, VKP_NOTHING},
        {"unreachable: deletion waits", DEL, LIVE, UID, true, true, true, false, false, false,
         false, false, false, VKP_WAIT},
        {"not mapped: report", LIVE, NONE, NULL, true, false, false, true, false, true, false,
         false, false, VKP_STATUS},
        {"not mapped, deleting: finish", DEL, NONE, NULL, true, false, false, true, false, false,
         false, false, false, VKP_DELETE_HOME},
        {"DaemonSet: report only", LIVE, NONE, NULL, true, true, true, true, false, true, false,
         true, false, VKP_STATUS},
        {"DaemonSet deleting: finish", DEL, NONE, NULL, true, true, true, true, false, false, false,
         true, false, VKP_DELETE_HOME},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vkp_situation s = {0};
        enum vkp_action a;

        s.home_synced = cases[i].home_synced;
        s.remote_synced = cases[i].remote_synced;
        s.mapped = cases[i].mapped;
        s.reachable = cases[i].reachable;
        s.refused = cases[i].refused;
        s.status_differs = cases[i].status;
        s.update_remote = cases[i].update;
        a = decide(&s, cases[i].home, cases[i].remote, cases[i].remote_uid, cases[i].ds,
                   cases[i].term);
        if (a != cases[i].want)
            fail_msg("%s: %s, want %s", cases[i].what, vkp_action_name(a),
                     vkp_action_name(cases[i].want));
        /* A home pod we already deleted is not deleted again; nothing else changes. */
        s.home_deleted = true;
        a = decide(&s, cases[i].home, cases[i].remote, cases[i].remote_uid, cases[i].ds,
                   cases[i].term);
        if (a != (cases[i].want == VKP_DELETE_HOME ? VKP_WAIT : cases[i].want))
            fail_msg("%s (home pod deleted by us): %s", cases[i].what, vkp_action_name(a));
    }
}

/* While the pod-CIDR remapping is pending (vk_pods_set_network_pending) no remote pod is created;
 * everything else is decided as without it. Each case is also decided with network_pending false,
 * where it must give `without`. */
static void test_decide_network_pending(void **state)
{
    static const struct {
        const char *what;
        int home, remote;
        const char *remote_uid;
        bool remote_synced, reachable, refused, status, update, term;
        enum vkp_action want, without;
    } cases[] = {
        {"new pod: held", LIVE, NONE, NULL, true, true, false, false, false, false, VKP_WAIT,
         VKP_CREATE},
        {"new pod, status to write: status, no create", LIVE, NONE, NULL, true, true, false, true,
         false, false, VKP_STATUS, VKP_CREATE},
        {"remote informer not synced: wait as before", LIVE, NONE, NULL, false, true, false, false,
         false, false, VKP_WAIT, VKP_WAIT},
        {"refused, backoff pending: as before", LIVE, NONE, NULL, true, true, true, true, false,
         false, VKP_STATUS, VKP_STATUS},
        {"terminal home pod: as before", LIVE, NONE, NULL, true, true, false, false, false, true,
         VKP_NOTHING, VKP_NOTHING},
        {"unreachable: as before", LIVE, NONE, NULL, true, false, false, false, false, false,
         VKP_NOTHING, VKP_NOTHING},
        {"remote pod there, nothing differs: left alone", LIVE, LIVE, UID, true, true, false, false,
         false, false, VKP_NOTHING, VKP_NOTHING},
        {"remote pod there, status differs: status", LIVE, LIVE, UID, true, true, false, true,
         false, false, VKP_STATUS, VKP_STATUS},
        {"remote pod there, update: updated", LIVE, LIVE, UID, true, true, false, true, true, false,
         VKP_UPDATE_REMOTE, VKP_UPDATE_REMOTE},
        {"stale incarnation: still deleted", LIVE, LIVE, "old", true, true, false, false, false,
         false, VKP_DELETE_REMOTE, VKP_DELETE_REMOTE},
        {"home deleting, remote gone: finish", DEL, NONE, NULL, true, true, false, false, false,
         false, VKP_DELETE_HOME, VKP_DELETE_HOME},
        {"home deleting, remote there: deleted", DEL, LIVE, UID, true, true, false, false, false,
         false, VKP_DELETE_REMOTE, VKP_DELETE_REMOTE},
        {"orphan: deleted", NONE, LIVE, UID, true, true, false, false, false, false,
         VKP_DELETE_REMOTE, VKP_DELETE_REMOTE},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int pending = 1; pending >= 0; pending--) {
            struct vkp_situation s = {0};
            enum vkp_action a, want = pending ? cases[i].want : cases[i].without;

            s.home_synced = true;
            s.remote_synced = cases[i].remote_synced;
            s.mapped = true;
            s.reachable = cases[i].reachable;
            s.refused = cases[i].refused;
            s.status_differs = cases[i].status;
            s.update_remote = cases[i].update;
            s.network_pending = pending;
            a = decide(&s, cases[i].home, cases[i].remote, cases[i].remote_uid, false,
                       cases[i].term);
            if (a != want)
                fail_msg("%s (network %s): %s, want %s", cases[i].what,
                         pending ? "pending" : "settled", vkp_action_name(a),
                         vkp_action_name(want));
        }
    }
}

/* ---- Events
 * --------------------------------------------------------------------------------------- */

static void test_events(void **state)
{
    static const struct {
        const char *what, *ev;
        bool forwarded;
        const char *exps[16];
    } cases[] = {
        {"a core/v1 Event",
         "{\"metadata\":{\"name\":\"p.17a\",\"namespace\":\"r\",\"uid\":\"ev-1\"},"
         "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\",\"namespace\":\"r\",\"uid\":\"rem-"
         "1\","
         "\"fieldPath\":\"spec.containers{c}\"},\"reason\":\"BackOff\",\"message\":\"Back-off "
         "restarting failed container\",\"type\":\"Warning\",\"count\":7,\"firstTimestamp\":"
         "\"2024-05-01T09:00:00Z\",\"lastTimestamp\":\"2024-05-01T09:05:00Z\"}",
         true,
         {"metadata>namespace = \"shop\"", "involvedObject>kind = \"Pod\"",
          "involvedObject>name = \"p\"", "involvedObject>namespace = \"shop\"",
          "involvedObject>uid = \"" UID "\"", "involvedObject>fieldPath = \"spec.containers{c}\"",
          "reason = \"BackOff\"", "type = \"Warning\"", "count = 7",
          "firstTimestamp = \"2024-05-01T09:00:00Z\"", "lastTimestamp = \"2024-05-01T09:05:00Z\"",
          "source>component = \"cliqo-vk/" PEER_ID "\"", NULL}},
        {"an events.k8s.io Event (eventTime, series)",
         "{\"metadata\":{\"uid\":\"ev-2\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
         "\"reason\":\"Pulling\",\"message\":\"Pulling image nginx\",\"type\":"
         "\"Normal\",\"eventTime\":\"2024-05-01T09:00:00.123456Z\",\"series\":{\"count\":3,"
         "\"lastObservedTime\":\"2024-05-01T09:09:09.000001Z\"}}",
         true,
         {"firstTimestamp = \"2024-05-01T09:00:00Z\"", "lastTimestamp = \"2024-05-01T09:09:09Z\"",
          "count = 3", "reason = \"Pulling\"", NULL}},
        {"the provider's scheduler placing the pod (the home scheduler has said it)",
         "{\"metadata\":{\"uid\":\"ev-3\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
         "\"reason\":\"Scheduled\",\"message\":\"Successfully assigned r/p to n1\",\"type\":"
         "\"Normal\",\"lastTimestamp\":\"2024-05-01T09:00:00Z\"}",
         false,
         {NULL}},
        {"not about a pod",
         "{\"metadata\":{\"uid\":\"e\"},\"involvedObject\":{\"kind\":\"Node\",\"name\":\"p\"},"
         "\"reason\":\"R\",\"type\":\"Normal\",\"lastTimestamp\":\"2024-05-01T09:00:00Z\"}",
         false,
         {NULL}},
        {"about another pod",
         "{\"metadata\":{\"uid\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"q\"},"
         "\"reason\":\"R\",\"type\":\"Normal\",\"lastTimestamp\":\"2024-05-01T09:00:00Z\"}",
         false,
         {NULL}},
        {"about an earlier incarnation of the remote pod",
         "{\"metadata\":{\"uid\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\","
         "\"uid\":\"rem-0\"},\"reason\":\"R\",\"type\":\"Normal\",\"lastTimestamp\":"
         "\"2024-05-01T09:00:00Z\"}",
         false,
         {NULL}},
        {"an unknown type",
         "{\"metadata\":{\"uid\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
         "\"reason\":\"R\",\"type\":\"Fatal\",\"lastTimestamp\":\"2024-05-01T09:00:00Z\"}",
         false,
         {NULL}},
        {"no time at all",
         "{\"metadata\":{\"uid\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
         "\"reason\":\"R\",\"type\":\"Normal\"}",
         false,
         {NULL}},
        {"a reason with a newline",
         "{\"metadata\":{\"uid\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
         "\"reason\":\"R\\nX\",\"type\":\"Normal\",\"lastTimestamp\":\"2024-05-01T09:00:00Z\"}",
         false,
         {NULL}},
        {"an absurd count",
         "{\"metadata\":{\"uid\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
         "\"reason\":\"R\",\"type\":\"Normal\",\"count\":-5,\"lastTimestamp\":"
         "\"2024-05-01T09:00:00Z\"}",
         true,
         {"count = 1", "message = \"\"", NULL}},
    };
    json_t *home = js("{\"metadata\":{\"name\":\"p\",\"namespace\":\"shop\",\"uid\":\"" UID "\"}}");

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *ev = js(cases[i].ev), *out;
        char name[VKP_EVENT_NAME_MAX + 1], name2[VKP_EVENT_NAME_MAX + 1];

        vkp_event_transform(ev);
        out = vkp_home_event(ev, home, "rem-1", PEER_ID, name);
        if ((out != NULL) != cases[i].forwarded)
            fail_msg("%s: %s", cases[i].what, out ? "forwarded" : "not forwarded");
        if (out) {
            expect(out, cases[i].exps, cases[i].what);
            assert_string_equal(json_string_value(at(out, "metadata>name")), name);
            /* The same remote Event always names the same home Event. */
            json_decref(vkp_home_event(ev, home, "rem-1", PEER_ID, name2));
            assert_string_equal(name, name2);
            assert_int_equal(strncmp(name, "p.", 2), 0);
        }
        json_decref(out);
        json_decref(ev);
    }
    json_decref(home);
}

static void test_rfc3339(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"2024-05-01T09:00:00Z", "2024-05-01T09:00:00Z"},
        {"2024-05-01T09:00:00.5Z", "2024-05-01T09:00:00Z"},
        {"2024-05-01T09:00:00.123456789Z", "2024-05-01T09:00:00Z"},
        {"2024-05-01T09:00:00.1234567890Z", NULL},
        {"2024-05-01T09:00:00.Z", NULL},
        {"2024-05-01T09:00:00+02:00", NULL},
        {"2024-13-01T09:00:00Z", NULL},
        {"2024-05-01 09:00:00Z", NULL},
        {"2024-05-01T09:00:00Zjunk", NULL},
        {"", NULL},
        {NULL, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[32];
        bool ok = vkp_rfc3339_seconds(cases[i].in, out, sizeof(out));

        assert_int_equal(ok, cases[i].out != NULL);
        if (ok)
            assert_string_equal(out, cases[i].out);
    }
}

/* ---- transforms
 * ---------------------------------------------------------------------------------- */

static void test_transforms(void **state)
{
    json_t *remote =
        js("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
           "\"namespace\":\"r\",\"uid\":\"u\",\"resourceVersion\":\"9\",\"labels\":{"
           "\"a\":\"b\"},\"managedFields\":[1],\"generateName\":\"p-\"},\"spec\":{"
           "\"nodeName\":\"n\",\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"env\":"
           "[{\"name\":\"SECRET\",\"value\":\"x\"}]}],\"activeDeadlineSeconds\":5},"
           "\"status\":{\"phase\":\"Running\",\"nominatedNodeName\":\"n\"}}");
    json_t *home =
        js("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
           "\"namespace\":\"s\",\"uid\":\"u\",\"generateName\":\"p-\",\"selfLink\":\"/x\","
           "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"uid\":\"1\","
           "\"controller\":true},{\"kind\":\"Other\",\"name\":\"o\"}]},\"spec\":{"
           "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"env\":[]}]}}");
    json_t *ev = js("{\"metadata\":{\"name\":\"e\",\"uid\":\"1\",\"managedFields\":[]},"
                    "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\",\"apiVersion\":\"v1\"},"
                    "\"reason\":\"R\",\"source\":{\"host\":\"h\"},\"reportingInstance\":\"x\"}");
    static const char *const rexp[] = {"!apiVersion",
                                       "!metadata>generateName",
                                       "metadata>labels>a = \"b\"",
                                       "!spec>nodeName",
                                       "spec>containers = [{\"name\":\"c\",\"image\":\"i\"}]",
                                       "spec>activeDeadlineSeconds = 5",
                                       "status>phase = \"Running\"",
                                       "!status>nominatedNodeName",
                                       NULL};
    static const char *const hexp[] = {
        "!metadata>generateName", "!metadata>selfLink",
        "metadata>ownerReferences = [{\"kind\":\"ReplicaSet\",\"controller\":true}]",
        "spec>containers>0>env = []", NULL};
    static const char *const eexp[] = {"!source",
                                       "!reportingInstance",
                                       "!metadata>managedFields",
                                       "!involvedObject>apiVersion",
                                       "reason = \"R\"",
                                       NULL};

    (void)state;
    vkp_remote_transform(remote);
    expect(remote, rexp, "remote transform");
    vkp_home_transform(home);
    expect(home, hexp, "home transform");
    vkp_event_transform(ev);
    expect(ev, eexp, "event transform");
    json_decref(remote);
    json_decref(home);
    json_decref(ev);
}

/* Thousands of token volumes, mounts, owner references and propagated annotations: each list is
 * filtered in one pass, or looked up in a set (one by one, a pod's own lists cost their square:
 * 20,000 token volumes with their mounts held the loop 18 s, 20,000 propagated annotations 3.5 s);
 * the result is what it was, in order. */
static void test_many_dropped(void **state)
{
    enum { N = 5000 };
    json_t *vols = json_array(), *mounts = json_array(), *refs = json_array(), *home, *pod = NULL;
    json_t *remote, *annots = json_object(), *patch, *got;
    const struct vkp_ids ids = {HOME_ID, PEER_ID};
    char name[32], err[128], *list = malloc(N * 8);
    size_t len = 0, nulls = 0;
    const char *k;
    json_t *v;

    (void)state;
    assert_non_null(list);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "t%d", i);
        json_array_append_new(vols, json_pack("{s:s,s:{s:[{s:{}}]}}", "name", name, "projected",
                                              "sources", "serviceAccountToken"));
        json_array_append_new(mounts, json_pack("{s:s,s:s}", "name", name, "mountPath", "/t"));
        snprintf(name, sizeof(name), "k%d", i);
        json_array_append_new(vols,
                              json_pack("{s:s,s:{s:s}}", "name", name, "configMap", "name", "cm"));
        json_array_append_new(mounts, json_pack("{s:s,s:s}", "name", name, "mountPath", "/k"));
        json_array_append_new(refs, json_pack("{s:s,s:s}", "kind", "Other", "name", name));
    }
    json_array_insert_new(refs, N / 2, js("{\"kind\":\"ReplicaSet\",\"controller\":true}"));
    home = json_pack("{s:{s:s,s:s,s:s,s:o},s:{s:o,s:[{s:s,s:s,s:o}]}}", "metadata", "name", "p",
                     "namespace", "shop", "uid", UID, "ownerReferences", refs, "spec", "volumes",
                     vols, "containers", "name", "c", "image", "i", "volumeMounts", mounts);
    assert_int_equal(vkp_remote_pod(home, "r", &ids, &pod, err, sizeof(err)), 0);
    got = at(pod, "spec>volumes");
    assert_int_equal(json_array_size(got), N);
    got = at(pod, "spec>containers>0>volumeMounts");
    assert_int_equal(json_array_size(got), N);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "k%d", i);
        assert_string_equal(json_string_value(json_object_get(
                                json_array_get(at(pod, "spec>volumes"), (size_t)i), "name")),
                            name);
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(got, (size_t)i), "name")), name);
    }
    json_decref(pod);

    vkp_home_transform(home);
    expect(home,
           (const char *const[]){
               "metadata>ownerReferences = [{\"kind\":\"ReplicaSet\",\"controller\":true}]", NULL},
           "home transform");

    /* The remote pod lists N keys as propagated (x*), has N more of the provider's own (p*): the
     * home pod has none any more, so the x* go and the p* stay. */
    for (int i = 0; i < N; i++) {
        len += (size_t)snprintf(list + len, N * 8 - len, "%sx%d", i ? "," : "", i);
        snprintf(name, sizeof(name), "x%d", i);
        json_object_set_new(annots, name, json_string("1"));
        snprintf(name, sizeof(name), "p%d", i);
        json_object_set_new(annots, name, json_string("1"));
    }
    json_object_set_new(annots, "offloading.cliqo.io/propagated-annotations", json_string(list));
    remote = json_pack("{s:{s:s,s:s,s:o}}", "metadata", "name", "p", "namespace", "r",
                       "annotations", annots);
    patch = vkp_remote_update(home, remote, &ids);
    assert_non_null(patch);
    json_object_foreach(at(patch, "metadata>annotations"), k, v)
    {
        if (json_is_null(v)) {
            assert_int_equal(k[0], 'x');
            nulls++;
        }
        assert_int_not_equal(k[0], 'p');
    }
    assert_int_equal(nulls, N);
    json_decref(patch);
    json_decref(remote);
    json_decref(home);
    free(list);
}

/* ---- the namespace mapping
 * ------------------------------------------------------------------------- */

static void test_nsof_wants(void **state)
{
    static const struct {
        const char *what, *nsof;
        int rc;
        const char *remote;
    } cases[] = {
        {"defaults: every virtual node, DefaultName",
         "{\"metadata\":{\"name\":\"offloading\",\"namespace\":\"web\"},\"spec\":{}}", 1,
         "web-cluster-1-"},
        {"EnforceSameName",
         "{\"metadata\":{\"name\":\"offloading\",\"namespace\":\"web\"},\"spec\":{"
         "\"namespaceMappingStrategy\":\"EnforceSameName\"}}",
         1, "web"},
        {"a selector that matches",
         "{\"metadata\":{\"name\":\"offloading\",\"namespace\":\"web\"},\"spec\":{"
         "\"clusterSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
         "\"topology.kubernetes.io/region\",\"operator\":\"In\",\"values\":[\"eu\"]}]}]}}}",
         1, "web-cluster-1-"},
        {"a selector that does not match",
         "{\"metadata\":{\"name\":\"offloading\",\"namespace\":\"web\"},\"spec\":{"
         "\"clusterSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
         "\"topology.kubernetes.io/region\",\"operator\":\"In\",\"values\":[\"us\"]}]}]}}}",
         0, NULL},
        {"being deleted",
         "{\"metadata\":{\"name\":\"offloading\",\"namespace\":\"web\",\"deletionTimestamp\":"
         "\"2024-01-01T00:00:00Z\"},\"spec\":{}}",
         0, NULL},
        {"another name", "{\"metadata\":{\"name\":\"other\",\"namespace\":\"web\"},\"spec\":{}}",
         -EINVAL, NULL},
        {"an invalid strategy",
         "{\"metadata\":{\"name\":\"offloading\",\"namespace\":\"web\"},\"spec\":{"
         "\"podOffloadingStrategy\":\"Anywhere\"}}",
         -EINVAL, NULL},
    };
    json_t *labels = js("{\"liqo.io/type\":\"virtual-node\",\"topology.kubernetes.io/region\":"
                        "\"eu\"}");

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *nsof = js(cases[i].nsof);
        char remote[64] = "", err[256] = "";
        int rc = vkm_nsof_wants(nsof, "liqo-b", labels, "cluster-1", HOME_ID, remote,
                                sizeof(remote), err, sizeof(err));

        if (rc != cases[i].rc)
            fail_msg("%s: %d, want %d (%s)", cases[i].what, rc, cases[i].rc, err);
        if (rc == 1 && strncmp(remote, cases[i].remote, strlen(cases[i].remote)) != 0)
            fail_msg("%s: remote %s", cases[i].what, remote);
        if (rc == 1 && strcmp(cases[i].remote, "web") == 0)
            assert_string_equal(remote, "web");
        json_decref(nsof);
    }
    json_decref(labels);
}

static void test_map_entry_and_conditions(void **state)
{
    static const struct {
        const char *entry; /* currentMapping["web"], NULL: none */
        bool wanted;
        enum vkm_phase phase;
        const char *ready, *ready_reason, *required;
    } cases[] = {
        {"{\"remoteNamespace\":\"web-r\",\"phase\":\"Accepted\"}", true, VKM_ACCEPTED, "True",
         "Accepted", "True"},
        {NULL, true, VKM_NONE, "False", "Pending", "True"},
        {"{\"remoteNamespace\":\"web-r\",\"phase\":\"Refused\",\"reason\":\"AlreadyExists\","
         "\"message\":\"a namespace with this name exists\"}",
         true, VKM_REFUSED, "False", "AlreadyExists", "True"},
        {"{\"remoteNamespace\":\"web-r\",\"phase\":\"CreationFailed\",\"reason\":\"bad\\u0001\"}",
         true, VKM_REFUSED, "False", "Refused", "True"},
        {"{\"remoteNamespace\":\"web-r\",\"phase\":\"Terminating\"}", false, VKM_TERMINATING,
         "False", "Terminating", "False"},
        /* The provider names another namespace than the one asked for: not believed. */
        {"{\"remoteNamespace\":\"kube-system\",\"phase\":\"Accepted\"}", true, VKM_MISMATCH,
         "False", "Mismatch", "True"},
        {"{\"remoteNamespace\":\"web-r\",\"phase\":\"Whatever\"}", true, VKM_MISMATCH, "False",
         "Mismatch", "True"},
        {"\"web-r\"", true, VKM_MISMATCH, "False", "Mismatch", "True"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *cur = json_object(), *conds, *again;
        const char *reason = NULL, *msg = NULL;
        enum vkm_phase ph;

        if (cases[i].entry)
            json_object_set_new(cur, "web", js(cases[i].entry));
        ph = vkm_entry(cur, "web", "web-r", &reason, &msg);
        if (ph != cases[i].phase)
            fail_msg("case %zu: %s, want %s", i, vkm_phase_name(ph),
                     vkm_phase_name(cases[i].phase));
        conds = vkm_conditions(cases[i].wanted, ph, "web-r", reason, msg, NULL, NOW);
        assert_string_equal(json_string_value(at(conds, "0>type")), "OffloadingRequired");
        assert_string_equal(json_string_value(at(conds, "0>status")), cases[i].required);
        assert_string_equal(json_string_value(at(conds, "1>type")), "Ready");
        assert_string_equal(json_string_value(at(conds, "1>status")), cases[i].ready);
        assert_string_equal(json_string_value(at(conds, "1>reason")), cases[i].ready_reason);
        assert_string_equal(json_string_value(at(conds, "1>lastTransitionTime")), NOW);
        if (ph == VKM_REFUSED && msg)
            assert_non_null(strstr(json_string_value(at(conds, "1>message")), msg));
        /* Written, then computed again later: the same, with the transition times kept. */
        again = vkm_conditions(cases[i].wanted, ph, "web-r", reason, msg, conds,
                               "2030-01-01T00:00:00Z");
        assert_true(vkm_conditions_equal(conds, again));
        assert_string_equal(json_string_value(at(again, "1>lastTransitionTime")), NOW);
        json_decref(again);
        json_decref(conds);
        json_decref(cur);
    }
}

static void test_desired_patch(void **state)
{
    static const struct {
        const char *have, *want, *patch;
    } cases[] = {
        {"{\"a\":\"a-r\"}", "{\"a\":\"a-r\"}", NULL},
        {NULL, "{}", NULL},
        {NULL, "{\"a\":\"a-r\"}", "{\"spec\":{\"desiredMapping\":{\"a\":\"a-r\"}}}"},
        {"{\"a\":\"a-r\",\"b\":\"b-r\"}", "{\"a\":\"a-x\"}",
         "{\"spec\":{\"desiredMapping\":{\"a\":\"a-x\",\"b\":null}}}"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *have = cases[i].have ? js(cases[i].have) : NULL, *want = js(cases[i].want);
        json_t *p = vkm_desired_patch(have, want);

        if (!cases[i].patch) {
            assert_null(p);
        } else {
            json_t *exp = js(cases[i].patch);

            assert_true(json_equal(p, exp));
            json_decref(exp);
        }
        json_decref(p);
        json_decref(have);
        json_decref(want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remote_pod),
        cmocka_unit_test(test_daemonset_terminal),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_remote_update),
        cmocka_unit_test(test_home_status),
        cmocka_unit_test(test_home_status_bounds),
        cmocka_unit_test(test_status_quiet),
        cmocka_unit_test(test_unreachable_and_unscheduled),
        cmocka_unit_test(test_status_patch),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_decide_network_pending),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_refusal_transient),
        cmocka_unit_test(test_transforms),
        cmocka_unit_test(test_many_dropped),
        cmocka_unit_test(test_nsof_wants),
        cmocka_unit_test(test_map_entry_and_conditions),
        cmocka_unit_test(test_desired_patch),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
