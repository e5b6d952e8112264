/* The pod webhook's patch: see nsof.h ("the pod webhook's patch"). */
#include "common/errbuf.h"
#include "common/json.h"
#include "common/jsonpatch.h"
#include "offloading/nsof.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define REQ_PATH "requiredDuringSchedulingIgnoredDuringExecution"

bool nsof_pod_is_daemonset(const json_t *pod)
{
    const json_t *owners = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");

    for (size_t i = 0; i < json_array_size(owners); i++) {
        const json_t *o = json_array_get(owners, i);
        const char *kind = json_string_value(json_object_get(o, "kind"));

        if (json_is_true(json_object_get(o, "controller")) && kind &&
            strcmp(kind, "DaemonSet") == 0)
            return true;
    }
    return false;
}

/* ---- tolerations --------------------------------------------------------------------------- */

/* Kubernetes' ToleratesTaint for a taint (key, value, effect). */
static bool tolerates(const json_t *tol, const char *key, const char *value, const char *effect)
{
    const char *te = jsn_str_or_empty(tol, "effect"), *tk = jsn_str_or_empty(tol, "key");
    const char *op = jsn_str_or_empty(tol, "operator");

    if (*te && strcmp(te, effect) != 0)
        return false;
    if (*tk && strcmp(tk, key) != 0)
        return false;
    if (strcmp(op, "Exists") == 0)
        return true;
    if (*op && strcmp(op, "Equal") != 0)
        return false;
    return strcmp(jsn_str_or_empty(tol, "value"), value) == 0;
}

static bool unbounded(const json_t *tol)
{
    const json_t *s = json_object_get(tol, "tolerationSeconds");

    return !s || json_is_null(s);
}

/* The shape the DefaultTolerationSeconds admission plugin adds. */
static bool plugin_default(const json_t *tol, const char *key)
{
    const json_t *s = json_object_get(tol, "tolerationSeconds");

    return strcmp(jsn_str_or_empty(tol, "key"), key) == 0 &&
           strcmp(jsn_str_or_empty(tol, "operator"), "Exists") == 0 &&
           strcmp(jsn_str_or_empty(tol, "effect"), "NoExecute") == 0 &&
           !*jsn_str_or_empty(tol, "value") && json_is_integer(s) &&
           json_integer_value(s) == NSOF_DEFAULT_TOLERATION_SECONDS;
}

/* Operations for one of the two node-condition taints. New tolerations go to add. */
static int grace_ops(const json_t *tols, const char *key, long long grace, json_t *patch,
                     json_t *add)
{
    bool found = false;
    char path[128], idx[24];

    for (size_t i = 0; i < json_array_size(tols); i++)
        if (tolerates(json_array_get(tols, i), key, "", "NoExecute") &&
            unbounded(json_array_get(tols, i)))
            return 0;
    for (size_t i = 0; i < json_array_size(tols); i++) {
        const json_t *t = json_array_get(tols, i);
        const json_t *s = json_object_get(t, "tolerationSeconds");

        if (strcmp(jsn_str_or_empty(t, "key"), key) != 0 || !tolerates(t, key, "", "NoExecute"))
            continue;
        found = true;
        if (!json_is_integer(s))
            continue; /* the API server's validation makes it an integer */
        if (!plugin_default(t, key) && json_integer_value(s) >= grace)
            continue;
        if (json_integer_value(s) == grace)
            continue;
        snprintf(idx, sizeof(idx), "%zu", i);
        {
            json_t *g = json_integer(grace);
            int rc = g && jpatch_pointer(path, sizeof(path), "spec", "tolerations", idx,
                                         "tolerationSeconds", NULL) == 0
                         ? jpatch_op(patch, "replace", path, g)
                         : -ENOMEM;

            json_decref(g);
            if (rc < 0)
                return rc;
        }
    }
    if (!found &&
        json_array_append_new(add, json_pack("{s:s,s:s,s:s,s:I}", "key", key, "operator", "Exists",
                                             "effect", "NoExecute", "tolerationSeconds",
                                             (json_int_t)grace)) != 0)
        return -ENOMEM;
    return 0;
}

static int toleration_ops(const json_t *spec, long long grace, json_t *patch)
{
    const json_t *tols = json_object_get(spec, "tolerations");
    json_t *add = json_array();
    bool has_vk = false;
    int rc = -ENOMEM;

    if (!add)
        return -ENOMEM;
    for (size_t i = 0; i < json_array_size(tols); i++) {
        const json_t *t = json_array_get(tols, i);

        if (tolerates(t, NSOF_VNODE_TAINT, "true", "NoExecute") && unbounded(t))
            has_vk = true;
    }
    if (!has_vk &&
        json_array_append_new(add, json_pack("{s:s,s:s,s:s}", "key", NSOF_VNODE_TAINT, "operator",
                                             "Exists", "effect", "NoExecute")) != 0)
        goto out;
    if (grace_ops(tols, NSOF_TAINT_UNREACHABLE, grace, patch, add) < 0 ||
        grace_ops(tols, NSOF_TAINT_NOT_READY, grace, patch, add) < 0)
        goto out;
    if (json_array_size(add) > 0) {
        if (!json_is_array(tols)) {
            if (jpatch_op(patch, "add", "/spec/tolerations", add) < 0)
                goto out;
        } else {
            for (size_t i = 0; i < json_array_size(add); i++)
                if (jpatch_op(patch, "add", "/spec/tolerations/-", json_array_get(add, i)) < 0)
                    goto out;
        }
    }
    rc = 0;
out:
    json_decref(add);
    return rc;
}

/* ---- affinity ------------------------------------------------------------------------------ */

static json_t *vnode_expr(const char *op)
{
    return json_pack("{s:s,s:s,s:[s]}", "key", NSOF_VNODE_LABEL, "operator", op, "values",
                     NSOF_VNODE_VALUE);
}

static bool term_empty(const json_t *t)
{
    return json_array_size(json_object_get(t, "matchExpressions")) == 0 &&
           json_array_size(json_object_get(t, "matchFields")) == 0;
}

/* Appends to dst the elements of src not already in dst, or all of them (dedup false). */
static int union_into(json_t *dst, const json_t *src, bool dedup)
{
    for (size_t i = 0; i < json_array_size(src); i++) {
        const json_t *e = json_array_get(src, i);
        bool dup = false;

        for (size_t j = 0; dedup && j < json_array_size(dst) && !dup; j++)
            dup = json_equal(json_array_get(dst, j), (json_t *)e);
        if (!dup && json_array_append(dst, (json_t *)e) != 0)
            return -ENOMEM;
    }
    return 0;
}

/* A new term: a's requirements as they are, then those of b that are not among them (either may
 * be NULL). a is the pod's own term, b the strategy's, small: the comparisons are |a| x |b|, not
 * the square of what a pod's author wrote (its duplicates stay, as the API server kept them). */
static json_t *term_union(const json_t *a, const json_t *b)
{
    json_t *xs = json_array(), *fs = json_array(), *t = NULL;

    if (!xs || !fs || union_into(xs, json_object_get(a, "matchExpressions"), false) < 0 ||
        union_into(xs, json_object_get(b, "matchExpressions"), true) < 0 ||
        union_into(fs, json_object_get(a, "matchFields"), false) < 0 ||
        union_into(fs, json_object_get(b, "matchFields"), true) < 0)
        goto out;
    t = json_object();
    if (!t)
        goto out;
    if (json_array_size(xs) && json_object_set(t, "matchExpressions", xs) < 0)
        goto bad;
    if (json_array_size(fs) && json_object_set(t, "matchFields", fs) < 0)
        goto bad;
    goto out;
bad:
    json_decref(t);
    t = NULL;
out:
    json_decref(xs);
    json_decref(fs);
    return t;
}

/* Requirements (expressions and fields) of a term. */
static size_t term_size(const json_t *t)
{
    return json_array_size(json_object_get(t, "matchExpressions")) +
           json_array_size(json_object_get(t, "matchFields"));
}

/* Whether every element of b's list `member` is in a's. */
static bool list_within(const json_t *a, const json_t *b, const char *member)
{
    const json_t *as = json_object_get(a, member), *bs = json_object_get(b, member);

    for (size_t i = 0; i < json_array_size(bs); i++) {
        bool in = false;

        for (size_t j = 0; j < json_array_size(as) && !in; j++)
            in = json_equal(json_array_get(as, j), json_array_get(bs, i));
        if (!in)
            return false;
    }
    return true;
}

/* Drops from terms (ORed) each term that holds every requirement of another, non-empty one (an
 * empty term selects no node): it selects a subset of that one's nodes, so the OR selects the same
 * without it (of equal terms, the first stays). Crossing terms already crossed then gives them back
 * as they were: a pod created again from a mutated one (or written with the strategy's terms) gets
 * the same terms, not their square. Only for small lists (NSOF_SUBSUME_MAX terms of as many
 * requirements each): the comparisons grow with the square of both, and a pod's terms are its
 * author's; past that the terms stay as crossed, which selects the same nodes. */
static void drop_subsumed(json_t *terms)
{
    if (json_array_size(terms) > NSOF_SUBSUME_MAX)
        return;
    for (size_t i = 0; i < json_array_size(terms); i++) {
        const json_t *t = json_array_get(terms, i);

        if (term_size(t) > NSOF_SUBSUME_MAX)
            return;
    }
    for (size_t i = json_array_size(terms); i-- > 0;) {
        const json_t *t = json_array_get(terms, i);

        for (size_t j = 0; j < json_array_size(terms); j++) {
            const json_t *o = json_array_get(terms, j);

            if (j == i || term_empty(o) || !list_within(t, o, "matchExpressions") ||
                !list_within(t, o, "matchFields"))
                continue;
            /* t holds all of o: drop t, unless they are equal and t comes first (o goes then) */
            if (j < i || !list_within(o, t, "matchExpressions") ||
                !list_within(o, t, "matchFields")) {
                json_array_remove(terms, i);
                break;
            }
        }
    }
}

/* The strategy's terms (S). */
static json_t *strategy_terms(enum nsof_pods pods, const json_t *selector)
{
    const json_t *sel = json_object_get(selector, "nodeSelectorTerms");
    json_t *s = json_array(), *in = vnode_expr("In"), *t;
    bool ok = s && in;

    if (json_array_size(sel) == 0) {
        t = json_pack("{s:[O]}", "matchExpressions", in);
        ok = ok && t && json_array_append_new(s, t) == 0;
    } else {
        for (size_t i = 0; ok && i < json_array_size(sel); i++) {
            json_t *extra =
                pods == NSOF_PODS_REMOTE ? json_pack("{s:[O]}", "matchExpressions", in) : NULL;

            t = term_union(json_array_get(sel, i), extra);
            json_decref(extra);
            ok = t && json_array_append_new(s, t) == 0;
        }
    }
    if (ok && pods == NSOF_PODS_LOCAL_AND_REMOTE) {
        t = json_pack("{s:[o]}", "matchExpressions", vnode_expr("NotIn"));
        ok = t && json_array_append_new(s, t) == 0;
    }
    json_decref(in);
    if (!ok) {
        json_decref(s);
        return NULL;
    }
    return s;
}

/* Whether e is the expression a virtual kubelet puts on every pod it offloads (liqo.io/type NotIn
 * [virtual-node]: the provider runs it on its own nodes, podxlate.c's no_loop_affinity). */
static bool no_loop_expr(const json_t *e)
{
    const json_t *v = json_object_get(e, "values");
    const char *key = json_string_value(json_object_get(e, "key"));
    const char *op = json_string_value(json_object_get(e, "operator"));

    return key && op && strcmp(key, NSOF_VNODE_LABEL) == 0 && strcmp(op, "NotIn") == 0 &&
           json_array_size(v) == 1 && json_string_value(json_array_get(v, 0)) &&
           strcmp(json_string_value(json_array_get(v, 0)), NSOF_VNODE_VALUE) == 0;
}

/* The pod's own terms without the virtual kubelets' no-loop expression (a new array, which shares
 * the pod's terms and expressions: none is changed), for a pod a consumer offloaded here that this
 * cluster's own NamespaceOffloading sends onward. Built anew, never by removing in place: a removal
 * moves the rest of the list, and a pod whose terms held 46,000 of those expressions (3 MB) held
 * the agent's loop 0.55 s that way. */
static json_t *without_no_loop(const json_t *own)
{
    json_t *out = json_array();

    for (size_t i = 0; out && i < json_array_size(own); i++) {
        json_t *t = json_array_get(own, i), *kept = NULL;
        const json_t *xs = json_object_get(t, "matchExpressions");
        size_t removed = 0;

        for (size_t j = 0; j < json_array_size(xs); j++)
            removed += no_loop_expr(json_array_get(xs, j));
        if (!removed) {
            t = json_incref(t);
        } else {
            t = json_copy(t); /* an object: xs is an array */
            kept = json_array();
            for (size_t j = 0; kept && j < json_array_size(xs); j++)
                if (!no_loop_expr(json_array_get(xs, j)) &&
                    json_array_append(kept, json_array_get(xs, j)) != 0) {
                    json_decref(kept);
                    kept = NULL;
                }
            if (!t || !kept) {
                json_decref(kept);
                json_decref(t);
                t = NULL;
            } else if (json_object_set_new(t, "matchExpressions", kept) != 0) {
                json_decref(t);
                t = NULL;
            }
        }
        /* A term that held only that expression constrained nothing else: it goes (an empty
         * term would match no node). */
        if (t && removed && term_empty(t)) {
            json_decref(t);
            continue;
        }
        if (!t || json_array_append_new(out, t) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

static int affinity_ops(const json_t *pod, const json_t *spec, enum nsof_pods pods,
                        const json_t *selector, json_t *patch, char *err, size_t errlen)
{
    const json_t *aff = json_object_get(spec, "affinity");
    const json_t *na = json_object_get(aff, "nodeAffinity");
    const json_t *req = json_object_get(na, REQ_PATH);
    const json_t *own = json_object_get(req, "nodeSelectorTerms");
    json_t *s = strategy_terms(pods, selector), *result = NULL, *value = NULL, *onward = NULL;
    size_t nown = 0, own_reqs = 0, s_reqs = 0;
    int rc = -ENOMEM;

    if (!s)
        return -ENOMEM;
    /* A consumer's pod (the origin label its virtual kubelet sets) in a namespace this cluster
     * offloads onward (a broker's): the cluster's own NamespaceOffloading decides where it runs, so
     * the no-loop expression of the hop before goes; the loop back to the origin is the
     * selector's to exclude (the broker's orchestrator does). */
    if (json_is_array(own) && jsn_label(pod, NSOF_LABEL_ORIGIN)) {
        onward = without_no_loop(own);
        if (!onward)
            goto out;
        own = onward;
    }
    if ((aff && !json_is_null(aff) && !json_is_object(aff)) ||
        (na && !json_is_null(na) && !json_is_object(na)) ||
        (req && !json_is_null(req) && !json_is_object(req)) ||
        (own && !json_is_null(own) && !json_is_array(own))) {
        rc = errbuf_fmt(err, errlen, -EINVAL, "%s", "spec.affinity.nodeAffinity is malformed");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(own); i++) {
        if (!json_is_object(json_array_get(own, i))) {
            rc = errbuf_fmt(err, errlen, -EINVAL, "%s",
                            "a nodeSelectorTerm of the pod is not an object");
            goto out;
        }
        if (!term_empty(json_array_get(own, i))) {
            nown++;
            own_reqs += term_size(json_array_get(own, i));
        }
    }
    if (json_array_size(own) > 0 && nown == 0) {
        rc = 0; /* the pod's own terms match no node: it stays as unschedulable as it was */
        goto out;
    }
    /* LocalAndRemote with no selector: every virtual node, or any other node, is every node. The
     * terms it would add (liqo.io/type In, or NotIn, crossed with the pod's own) select what the
     * pod's own terms select: nothing to add. A consumer's pod sent onward still loses the
     * no-loop expression of the hop before (below). */
    if (pods == NSOF_PODS_LOCAL_AND_REMOTE && !onward &&
        json_array_size(json_object_get(selector, "nodeSelectorTerms")) == 0) {
        rc = 0;
        goto out;
    }
    if (nown * json_array_size(s) > NSOF_MAX_POD_TERMS ||
        (nown == 0 && json_array_size(s) > NSOF_MAX_POD_TERMS)) {
        rc = errbuf_fmt(err, errlen, -E2BIG,
                        "the pod's %zu node affinity terms crossed with the %zu terms of the "
                        "namespace's offloading give more than %d",
                        nown, json_array_size(s), NSOF_MAX_POD_TERMS);
        goto out;
    }
    /* Each of the pod's terms is copied once per term of the strategy: what a pod's author wrote
     * is bounded by the review's size only, so the crossed terms are bounded too (the patch's
     * size, and the comparisons of term_union: the pod's requirements x the strategy's). */
    for (size_t j = 0; j < json_array_size(s); j++)
        s_reqs += term_size(json_array_get(s, j));
    if (nown && own_reqs * json_array_size(s) + nown * s_reqs > NSOF_MAX_POD_REQUIREMENTS) {
        rc = errbuf_fmt(err, errlen, -E2BIG,
                        "the pod's %zu node affinity requirements crossed with the %zu terms of "
                        "the namespace's offloading give more than %d requirements",
                        own_reqs, json_array_size(s), NSOF_MAX_POD_REQUIREMENTS);
        goto out;
    }
    if (nown == 0) {
        result = json_incref(s);
    } else {
        result = json_array();
        if (!result)
            goto out;
        for (size_t i = 0; i < json_array_size(own); i++) {
            const json_t *p = json_array_get(own, i);

            if (term_empty(p))
                continue;
            for (size_t j = 0; j < json_array_size(s); j++) {
                json_t *t = term_union(p, json_array_get(s, j));

                if (!t || json_array_append_new(result, t) != 0)
                    goto out;
            }
        }
        drop_subsumed(result);
    }
    /* The pod's own terms already are the crossed ones (a re-created pod, or one written with the
     * strategy's terms): no operation, so that a pod with nothing to change gets an empty answer
     * and the API server applies no patch (a replace by the same value still costs it a patch, a
     * decoding and a comparison). */
    if (json_is_array(own) && json_equal(result, own)) {
        rc = 0;
        goto out;
    }
    if (!aff || json_is_null(aff)) {
        value = json_pack("{s:{s:{s:O}}}", "nodeAffinity", REQ_PATH, "nodeSelectorTerms", result);
        rc = value ? jpatch_op(patch, "add", "/spec/affinity", value) : -ENOMEM;
    } else if (!na || json_is_null(na)) {
        value = json_pack("{s:{s:O}}", REQ_PATH, "nodeSelectorTerms", result);
        rc = value ? jpatch_op(patch, "add", "/spec/affinity/nodeAffinity", value) : -ENOMEM;
    } else if (!req || json_is_null(req)) {
        value = json_pack("{s:O}", "nodeSelectorTerms", result);
        rc = value ? jpatch_op(patch, "add", "/spec/affinity/nodeAffinity/" REQ_PATH, value)
                   : -ENOMEM;
    } else {
        rc = jpatch_op(patch, own ? "replace" : "add",
                       "/spec/affinity/nodeAffinity/" REQ_PATH "/nodeSelectorTerms", result);
    }
out:
    json_decref(s);
    json_decref(result);
    json_decref(value);
    json_decref(onward);
    return rc;
}

int nsof_pod_patch(const json_t *pod, enum nsof_pods pods, const json_t *selector, long long grace,
                   json_t **ret, char *err, size_t errlen)
{
    const json_t *spec = json_object_get(pod, "spec"), *tols;
    json_t *patch = json_array();
    int rc;

    if (!patch)
        return -ENOMEM;
    if (err && errlen)
        err[0] = '\0';
    if (pods == NSOF_PODS_LOCAL || nsof_pod_is_daemonset(pod)) {
        *ret = patch;
        return 0;
    }
    rc = -EINVAL;
    if (!json_is_object(spec)) {
        errbuf_fmt(err, errlen, rc, "%s", "the pod has no spec");
        goto out;
    }
    tols = json_object_get(spec, "tolerations");
    if (tols && !json_is_null(tols) && !json_is_array(tols)) {
        errbuf_fmt(err, errlen, rc, "%s", "spec.tolerations is not a list");
        goto out;
    }
    if (json_array_size(tols) > NSOF_MAX_TOLERATIONS) {
        errbuf_fmt(err, errlen, rc, "%s", "the pod has too many tolerations");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(tols); i++)
        if (!json_is_object(json_array_get(tols, i))) {
            errbuf_fmt(err, errlen, rc, "%s", "a toleration of the pod is not an object");
            goto out;
        }
    if (grace < 0)
        grace = 0;
    rc = toleration_ops(spec, grace, patch);
    if (rc == 0)
        rc = affinity_ops(pod, spec, pods, selector, patch, err, errlen);
    if (rc < 0)
        goto out;
    *ret = patch;
    patch = NULL;
out:
    json_decref(patch);
    return rc;
}
