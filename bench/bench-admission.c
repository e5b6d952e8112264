/* bench-admission: what one admission decision costs in the agent's loop, without the network
 * (docs/offloading.md, "Admission"). Prints figures; asserts nothing about time.
 *
 *   pod webhook     decode a ~3 KB AdmissionReview of a pod with two own node affinity terms and
 *                   four tolerations, build the Remote patch with a two-term selector, encode the
 *                   answer (base64 JSONPatch): per review.
 *   offer check     the offer enforcement for a consumer with N live pods on the provider in 4
 *                   namespaces, two ways side by side: recounting every pod's effective requests
 *                   per admission (before issue 17: it grew with N), and summing the running
 *                   totals the pod informer keeps per namespace (now: flat in N), with the cost
 *                   of keeping them per pod event.
 *   pod security    the Pod Security check of the pod webhook's pod (two containers) and of a pod
 *                   of 100 containers that restricted admits (each with its securityContext,
 *                   ports and a seccomp annotation), at baseline and at restricted: per check. The
 *                   provider's webhook runs it once per pod a consumer creates.
 *
 * Usage: bench-admission [--reviews N] [--pods N,N,...]. Use an optimised build (release preset).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/offer.h"
#include "admission/podsec.h"
#include "admission/review.h"
#include "common/xalloc.h"
#include "offloading/nsof.h"

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static const char review_text[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
    "\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"namespace\":\"web\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":"
    "\"system:serviceaccount:kube-system:replicaset-controller\",\"groups\":["
    "\"system:serviceaccounts\",\"system:serviceaccounts:kube-system\",\"system:authenticated\"]},"
    "\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"generateName\":"
    "\"web-7d4b9c8f5-\",\"namespace\":\"web\",\"labels\":{\"app\":\"web\",\"pod-template-hash\":"
    "\"7d4b9c8f5\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
    "\"name\":\"web-7d4b9c8f5\",\"uid\":\"0c8d1ab2-0000-4000-8000-000000000001\",\"controller\":"
    "true,\"blockOwnerDeletion\":true}]},\"spec\":{\"volumes\":[{\"name\":\"kube-api-access-x\","
    "\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":"
    "\"token\"}}]}}],\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.25\",\"ports\":[{"
    "\"containerPort\":80,\"protocol\":\"TCP\"}],\"env\":[{\"name\":\"MODE\",\"value\":\"prod\"}],"
    "\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"512Mi\"},\"requests\":{\"cpu\":\"250m\","
    "\"memory\":\"256Mi\"}},\"readinessProbe\":{\"httpGet\":{\"path\":\"/\",\"port\":80}},"
    "\"volumeMounts\":[{\"name\":\"kube-api-access-x\",\"readOnly\":true,\"mountPath\":"
    "\"/var/run/secrets/kubernetes.io/serviceaccount\"}]},{\"name\":\"sidecar\",\"image\":"
    "\"busybox:1.36\",\"resources\":{\"requests\":{\"cpu\":\"50m\",\"memory\":\"32Mi\"}}}],"
    "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"
    "\"ClusterFirst\",\"serviceAccountName\":\"default\",\"affinity\":{\"nodeAffinity\":{"
    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
    "\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\",\"values\":[\"ssd\"]}]},{"
    "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"z9\"]}]}]}}},"
    "\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"web\",\"effect\":"
    "\"NoSchedule\"},{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"},{\"key\":"
    "\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
    "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],\"priority\":0}},"
    "\"oldObject\":null,\"dryRun\":false,\"options\":{\"kind\":\"CreateOptions\",\"apiVersion\":"
    "\"meta.k8s.io/v1\"}}}";

static int bench_reviews(long n)
{
    json_t *sel = json_loads("{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"region\","
                             "\"operator\":\"In\",\"values\":[\"eu\"]}]},{\"matchExpressions\":[{"
                             "\"key\":\"tier\",\"operator\":\"Exists\"}]}]}",
                             0, NULL);
    size_t len = strlen(review_text), out_bytes = 0;
    double t0 = now_s(), t;
    char err[256];

    for (long i = 0; i < n; i++) {
        struct adm_request r;
        json_t *patch = NULL;
        char *answer;

        if (adm_review_decode(review_text, len, &r, err, sizeof(err)) < 0 ||
            nsof_pod_patch(r.object, NSOF_PODS_REMOTE, sel, 300, &patch, err, sizeof(err)) < 0) {
            fprintf(stderr, "bench-admission: %s\n", err);
            return 1;
        }
        answer = adm_review_response(r.uid, true, 0, NULL, patch);
        if (!answer)
            return 1;
        out_bytes = strlen(answer);
        x_free(answer);
        json_decref(patch);
        adm_request_done(&r);
    }
    t = now_s() - t0;
    printf("pod webhook: %ld reviews of %zu bytes in %.3f s: %.1f us per review (decode + Remote "
           "patch + answer of %zu bytes), %.0f reviews/s\n",
           n, len, t, t / (double)n * 1e6, out_bytes, (double)n / t);
    json_decref(sel);
    return 0;
}

/* ns per adm_podsec_check of pod at level (n rounds); the refusal is expected or not. */
static double podsec_ns(const json_t *pod, enum adm_podsec_level level, long n)
{
    char msg[ADM_MESSAGE_MAX + 1];
    double t0 = now_s();
    int sum = 0;

    for (long i = 0; i < n; i++)
        sum += adm_podsec_check(level, pod, msg, sizeof(msg));
    if (sum == 1) /* never: keeps the loop */
        puts(msg);
    return (now_s() - t0) / (double)n * 1e9;
}

static int bench_podsec(long n)
{
    struct adm_request r;
    json_t *big = NULL, *cs, *ann;
    char err[256], name[32], key[96];
    int rc = 1;

    if (adm_review_decode(review_text, strlen(review_text), &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "bench-admission: %s\n", err);
        return 1;
    }
    big = json_pack("{s:{s:s,s:{}},s:{s:{s:b,s:{s:s}},s:[]}}", "metadata", "name", "big",
                    "annotations", "spec", "securityContext", "runAsNonRoot", 1, "seccompProfile",
                    "type", "RuntimeDefault", "containers");
    cs = json_object_get(json_object_get(big, "spec"), "containers");
    ann = json_object_get(json_object_get(big, "metadata"), "annotations");
    for (int i = 0; big && i < 100; i++) {
        snprintf(name, sizeof(name), "c%d", i);
        snprintf(key, sizeof(key), "container.seccomp.security.alpha.kubernetes.io/%s", name);
        json_array_append_new(
            cs, json_pack("{s:s,s:s,s:[{s:i}],s:{s:b,s:{s:[s],s:[s]},s:i}}", "name", name, "image",
                          "busybox", "ports", "containerPort", 8000 + i, "securityContext",
                          "allowPrivilegeEscalation", 0, "capabilities", "drop", "ALL", "add",
                          "NET_BIND_SERVICE", "runAsUser", 1000 + i));
        json_object_set_new(ann, key, json_string("runtime/default"));
    }
    if (!big || adm_podsec_check(ADM_PODSEC_RESTRICTED, big, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench-admission: the 100-container pod is not restricted: %s\n", err);
        goto out;
    }
    printf("pod security: typical pod (2 containers): %.0f ns per check at baseline, %.0f ns at "
           "restricted (refused: the pod is not hardened)\n",
           podsec_ns(r.object, ADM_PODSEC_BASELINE, n),
           podsec_ns(r.object, ADM_PODSEC_RESTRICTED, n));
    printf("pod security: pod of 100 containers: %.0f ns per check at baseline, %.0f ns at "
           "restricted (admitted)\n",
           podsec_ns(big, ADM_PODSEC_BASELINE, n / 20 + 1),
           podsec_ns(big, ADM_PODSEC_RESTRICTED, n / 20 + 1));
    rc = 0;
out:
    json_decref(big);
    adm_request_done(&r);
    return rc;
}

#define BENCH_NAMESPACES 4 /* the consumer's namespaces on the provider */

static void offer_all(struct shr_list *offer)
{
    static const char *const names[] = {"cpu", "memory", "pods"};

    offer->n = 0;
    for (size_t i = 0; i < 3; i++) {
        snprintf(offer->items[i].name, SHR_NAME_MAX, "%s", names[i]);
        offer->items[i].value = INT64_MAX / 2;
        offer->n++;
    }
}

/* The offer check for a consumer with npods live pods, both ways: recounting every pod per
 * admission (what the agent did before issue 17), and from the running totals the pod informer
 * keeps (what it does now: the totals of the consumer's namespaces summed, then the check). The
 * cost of keeping the totals, one pod event each, is printed too. */
static int bench_offer(long npods)
{
    json_t **pods = calloc((size_t)npods, sizeof(*pods)), *newpod;
    struct shr_list used = {0}, req, offer;
    struct adm_usage *usage = NULL;
    int rounds = npods >= 10000 ? 20 : 200, trounds = 20000;
    double t0, t_recount, t_totals, t_event;
    char msg[256], ns[16];
    int rc = 1;

    if (!pods || adm_usage_new(&usage) < 0)
        goto out;
    for (long i = 0; i < npods; i++) {
        snprintf(ns, sizeof(ns), "n%ld", i % BENCH_NAMESPACES);
        pods[i] =
            json_pack("{s:{s:s,s:s,s:{s:s}},s:{s:[{s:{s:{s:s,s:s}}}]},s:{s:s}}", "metadata", "name",
                      "p", "namespace", ns, "labels", "virtualkubelet.liqo.io/origin", "a", "spec",
                      "containers", "resources", "requests", "cpu", i % 2 ? "100m" : "0.25",
                      "memory", i % 3 ? "64Mi" : "128Mi", "status", "phase", "Running");
        if (!pods[i])
            goto out;
    }
    newpod = pods[0];
    offer_all(&offer);

    t0 = now_s();
    for (int r = 0; r < rounds; r++) {
        used.n = 0;
        for (long i = 0; i < npods; i++) {
            if (!adm_offer_pod_live(pods[i]) ||
                adm_offer_pod_requests(pods[i], &req, msg, sizeof(msg)) < 0 ||
                adm_offer_add(&used, &req) < 0)
                goto out;
        }
        if (adm_offer_pod_requests(newpod, &req, msg, sizeof(msg)) < 0 ||
            adm_offer_check(&used, &req, &offer, "c", true, msg, sizeof(msg)) != 0)
            goto out;
    }
    t_recount = (now_s() - t0) / rounds;

    t0 = now_s();
    for (long i = 0; i < npods; i++)
        if (adm_usage_pod(usage, pods[i], 1) < 0)
            goto out;
    t_event = (now_s() - t0) / (double)npods;

    t0 = now_s();
    for (int r = 0; r < trounds; r++) {
        used.n = 0;
        for (int n = 0; n < BENCH_NAMESPACES; n++) {
            snprintf(ns, sizeof(ns), "n%d", n);
            if (adm_usage_add_ns(usage, ns, &used) < 0)
                goto out;
        }
        if (adm_offer_pod_requests(newpod, &req, msg, sizeof(msg)) < 0 ||
            adm_offer_check(&used, &req, &offer, "c", true, msg, sizeof(msg)) != 0)
            goto out;
    }
    t_totals = (now_s() - t0) / trounds;
    if (adm_usage_pods(usage) != (size_t)npods)
        goto out;
    printf("offer check: consumer with %6ld pods in %d namespaces: recounting %.3f ms, running "
           "totals %.4f ms per admission (%.0fx); keeping the totals %.2f us per pod event\n",
           npods, BENCH_NAMESPACES, t_recount * 1e3, t_totals * 1e3, t_recount / t_totals,
           t_event * 1e6);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "bench-admission: offer check failed at %ld pods\n", npods);
    for (long i = 0; pods && i < npods; i++)
        json_decref(pods[i]);
    free(pods);
    adm_usage_free(usage);
    return rc;
}

int main(int argc, char **argv)
{
    long reviews = 20000;
    const char *pods = "100,1000,10000";

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reviews") == 0 && i + 1 < argc) {
            const char *v = argv[++i];

            reviews = 0;
            while (*v >= '0' && *v <= '9' && reviews < 100000000)
                reviews = reviews * 10 + (*v++ - '0');
            if (*v || reviews == 0) {
                fprintf(stderr, "bench-admission: --reviews takes a positive number\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--pods") == 0 && i + 1 < argc) {
            pods = argv[++i];
        } else {
            fprintf(stderr, "usage: bench-admission [--reviews N] [--pods N,N,...]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (bench_reviews(reviews) || bench_podsec(reviews))
        return 1;
    for (const char *p = pods; *p;) {
        long n = 0;

        while (*p >= '0' && *p <= '9')
            n = n * 10 + (*p++ - '0');
        if (n > 0 && bench_offer(n))
            return 1;
        if (*p == ',')
            p++;
        else if (*p)
            return 2;
    }
    return 0;
}
