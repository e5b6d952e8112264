/* libFuzzer harness for src/admission/review.c (the AdmissionReview decoder, the answer, the JSON
 * patch applier) and the pod webhook's patch built on what it decodes (src/offloading/
 * nsof_patch.c): everything the webhook server does with a request body before it looks at its
 * caches.
 *
 * The input is a request body. Invariants:
 *   - the decoder accepts it or refuses it with a non-empty one-line reason, never anything else;
 *   - an accepted review gets an answer for every verdict;
 *   - for the decoded object (and for the input itself when it is a JSON object, read as a pod),
 *     under every strategy, nsof_pod_patch either refuses with a one-line reason or gives a patch
 *     of add/replace operations that applies to the pod; once applied, a Remote or LocalAndRemote
 *     pod that is not a DaemonSet's tolerates the virtual-node taint, a Remote pod has required
 *     node terms, each selecting virtual nodes only (unless the pod's own terms match nothing), and
 *     a LocalAndRemote pod (no selector: any node) keeps its own node affinity unchanged, unless it
 *     is a consumer's pod sent onward (it then loses the no-loop expression); a patched Remote pod
 *     of at most 16 terms of 16 requirements, patched again, gets no operation.
 * A violated invariant aborts, which libFuzzer reports as a crash. */
#include "../src/admission/review.c"

#include <stdlib.h>

#include "offloading/nsof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static bool one_line(const char *s)
{
    return s[0] != '\0' && !strchr(s, '\n');
}

static bool has_vk_toleration(const json_t *pod)
{
    const json_t *tols = json_object_get(json_object_get(pod, "spec"), "tolerations");

    for (size_t i = 0; i < json_array_size(tols); i++) {
        const json_t *t = json_array_get(tols, i);
        const char *k = json_string_value(json_object_get(t, "key"));
        const char *op = json_string_value(json_object_get(t, "operator"));

        if ((!k || !*k || strcmp(k, NSOF_VNODE_TAINT) == 0) && op && strcmp(op, "Exists") == 0)
            return true;
        if (k && strcmp(k, NSOF_VNODE_TAINT) == 0)
            return true; /* an Equal toleration of the pod's own, tolerating it or not */
    }
    return false;
}

static bool term_virtual_only(const json_t *term)
{
    const json_t *xs = json_object_get(term, "matchExpressions");

    for (size_t i = 0; i < json_array_size(xs); i++) {
        const json_t *x = json_array_get(xs, i);
        const char *k = json_string_value(json_object_get(x, "key"));
        const char *op = json_string_value(json_object_get(x, "operator"));
        const json_t *v = json_object_get(x, "values");

        if (k && op && strcmp(k, NSOF_VNODE_LABEL) == 0 && strcmp(op, "In") == 0 &&
            json_array_size(v) == 1 &&
            strcmp(json_string_value(json_array_get(v, 0)) ? json_string_value(json_array_get(v, 0))
                                                           : "",
                   NSOF_VNODE_VALUE) == 0)
            return true;
    }
    return false;
}

/* At most NSOF_SUBSUME_MAX terms of as many requirements each: where nsof_pod_patch drops subsumed
 * terms. */
static bool small_terms(const json_t *terms)
{
    if (json_array_size(terms) > NSOF_SUBSUME_MAX)
        return false;
    for (size_t i = 0; i < json_array_size(terms); i++) {
        const json_t *t = json_array_get(terms, i);

        if (json_array_size(json_object_get(t, "matchExpressions")) +
                json_array_size(json_object_get(t, "matchFields")) >
            NSOF_SUBSUME_MAX)
            return false;
    }
    return true;
}

/* The patched pod, patched again, gets no operation (a re-created pod gets nothing twice, and the
 * API server applies no patch to a pod that has all it needs). */
static bool no_second_patch(const json_t *patched, enum nsof_pods pods)
{
    json_t *again = NULL;
    char err[256];
    bool ok = nsof_pod_patch(patched, pods, NULL, 300, &again, err, sizeof(err)) == 0 &&
              json_array_size(again) == 0;

    json_decref(again);
    return ok;
}

static void pod_patches(const json_t *pod)
{
    static const enum nsof_pods strategies[] = {NSOF_PODS_LOCAL, NSOF_PODS_REMOTE,
                                                NSOF_PODS_LOCAL_AND_REMOTE};

    for (size_t s = 0; s < 3; s++) {
        json_t *patch = NULL, *copy;
        char err[256] = "";
        int rc = nsof_pod_patch(pod, strategies[s], NULL, 300, &patch, err, sizeof(err));

        if (rc < 0) {
            check(rc == -EINVAL || rc == -E2BIG);
            check(one_line(err));
            check(!patch);
            continue;
        }
        if (strategies[s] == NSOF_PODS_LOCAL)
            check(json_array_size(patch) == 0);
        for (size_t i = 0; i < json_array_size(patch); i++) {
            const char *op = json_string_value(json_object_get(json_array_get(patch, i), "op"));

            check(op && (strcmp(op, "add") == 0 || strcmp(op, "replace") == 0));
        }
        copy = json_deep_copy(pod);
        check(jpatch_apply(copy, patch, err, sizeof(err)) == 0);
        if (strategies[s] != NSOF_PODS_LOCAL && !nsof_pod_is_daemonset(pod)) {
            const json_t *terms = json_object_get(
                json_object_get(
                    json_object_get(json_object_get(json_object_get(copy, "spec"), "affinity"),
                                    "nodeAffinity"),
                    "requiredDuringSchedulingIgnoredDuringExecution"),
                "nodeSelectorTerms");
            bool own_empty = json_array_size(terms) > 0;

            check(has_vk_toleration(copy));
            for (size_t i = 0; i < json_array_size(terms); i++) {
                const json_t *t = json_array_get(terms, i);

                if (json_array_size(json_object_get(t, "matchExpressions")) ||
                    json_array_size(json_object_get(t, "matchFields")))
                    own_empty = false;
            }
            if (strategies[s] == NSOF_PODS_REMOTE) {
                check(json_array_size(terms) > 0);
                if (!own_empty)
                    for (size_t i = 0; i < json_array_size(terms); i++)
                        check(term_virtual_only(json_array_get(terms, i)));
                if (small_terms(terms))
                    check(no_second_patch(copy, strategies[s]));
            } else if (!json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"),
                                        NSOF_LABEL_ORIGIN)) {
                const json_t *before = json_object_get(json_object_get(pod, "spec"), "affinity");
                const json_t *after = json_object_get(json_object_get(copy, "spec"), "affinity");

                check(before == after || (before && after && json_equal(before, after)));
            }
        }
        json_decref(copy);
        json_decref(patch);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct adm_request r;
    char err[256] = "";
    json_t *j;
    int rc = adm_review_decode((const char *)data, size, &r, err, sizeof(err));

    if (rc < 0) {
        check(rc == -EINVAL || rc == -E2BIG);
        check(one_line(err));
    } else {
        char *a = adm_review_response(r.uid, true, 0, NULL, NULL);
        char *d = adm_review_response(r.uid, false, 403, "no\nway", NULL);

        check(a && d && !strchr(d, '\n'));
        x_free(a);
        x_free(d);
        if (r.object)
            pod_patches(r.object);
        adm_request_done(&r);
    }
    j = json_loadb((const char *)data, size, 0, NULL);
    if (json_is_object(j))
        pod_patches(j);
    json_decref(j);
    return 0;
}
