#include "offloading/nsof.h"

#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "kube/names.h"

#define NAME_PART_MAX 20
#define HASH_HEX      6

const char *nsof_mapping_name(enum nsof_mapping m)
{
    return m == NSOF_MAP_ENFORCE_SAME_NAME ? "EnforceSameName" : "DefaultName";
}

const char *nsof_pods_name(enum nsof_pods p)
{
    switch (p) {
    case NSOF_PODS_LOCAL:
        return "Local";
    case NSOF_PODS_REMOTE:
        return "Remote";
    default:
        return "LocalAndRemote";
    }
}

/* ---- names ------------------------------------------------------------------------------------
 */

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* The first HASH_HEX hex digits of sha256(id). Returns 0, -EINVAL (empty id) or -EIO. */
static int id_hash(const char *id, char hash[HASH_HEX + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (!id || !*id)
        return -EINVAL;
    if (EVP_Digest(id, strlen(id), md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < HASH_HEX / 2)
        return -EIO;
    str_hex(md, HASH_HEX / 2, hash);
    return 0;
}

int nsof_remote_namespace(const char *ns, enum nsof_mapping m, const char *home_name,
                          const char *home_id, char *buf, size_t size)
{
    char part[NAME_PART_MAX + 1], hash[HASH_HEX + 1];
    size_t n = 0, start = 0, room, nslen;
    int r;

    if (!kname_dns_label(ns) || !buf || size < NSOF_NS_MAX + 1)
        return -EINVAL;
    if (m == NSOF_MAP_ENFORCE_SAME_NAME) {
        snprintf(buf, size, "%s", ns);
        return 0;
    }
    if ((r = id_hash(home_id, hash)) < 0)
        return r;
    for (const char *p = home_name ? home_name : ""; *p && n < NAME_PART_MAX; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;

        part[n++] = alnum(c) ? c : '-';
    }
    while (n > 0 && part[n - 1] == '-')
        n--;
    while (start < n && part[start] == '-')
        start++;
    part[n] = '\0';
    /* ns + "-" + name + "-" + hash, or ns + "-" + hash without a usable name. */
    room = NSOF_NS_MAX - HASH_HEX - 1 - (start < n ? n - start + 1 : 0);
    nslen = strlen(ns);
    if (nslen > room)
        nslen = room;
    while (nslen > 0 && ns[nslen - 1] == '-')
        nslen--;
    if (start < n)
        snprintf(buf, size, "%.*s-%s-%s", (int)nslen, ns, part + start, hash);
    else
        snprintf(buf, size, "%.*s-%s", (int)nslen, ns, hash);
    return 0;
}

/* ---- reserved names and the provider's allow list -------------------------------------------
 */

/* Names no consumer may offload to nor claim on a provider, whatever an allow list says: the
 * cluster's own, its control plane's and well-known system add-ons'. "*" ends a prefix. */
static const char *const system_names[] = {
    "default",
    "kube-*",
    "cliqo",
    "cliqo-*",
    "liqo",
    "liqo-*",
    "openshift",
    "openshift-*",
    "local-path-storage",
    "calico-system",
    "calico-apiserver",
    "tigera-operator",
    "gatekeeper-system",
    "cattle-system",
    NULL,
};

bool nsof_reserved(const char *name, const char *agent_ns)
{
    if (!kname_dns_label(name) || (agent_ns && strcmp(name, agent_ns) == 0))
        return true;
    for (const char *const *n = system_names; *n; n++)
        if (str_glob(*n, name))
            return true;
    return false;
}

int nsof_home_offloadable(const char *ns, const char *agent_ns, bool tenant, char *err,
                          size_t errlen)
{
    if (!kname_dns_label(ns)) {
        snprintf(err, errlen, "namespace name is not a DNS label");
        return -EINVAL;
    }
    if (tenant) {
        snprintf(err, errlen,
                 "namespace %s is a tenant namespace (a peer's credentials live there): it "
                 "cannot be offloaded",
                 ns);
        return -EPERM;
    }
    if (nsof_reserved(ns, agent_ns)) {
        snprintf(err, errlen,
                 "namespace %s is reserved (the agent's namespace, default, kube-* or another "
                 "system namespace): it cannot be offloaded",
                 ns);
        return -EPERM;
    }
    return 0;
}

bool nsof_default_shaped(const char *local, const char *remote, const char *home_id)
{
    char hash[HASH_HEX + 1];
    size_t n = local ? strlen(local) : 0, rn = remote ? strlen(remote) : 0, k;

    if (!kname_dns_label(local) || !kname_dns_label(remote) || id_hash(home_id, hash) < 0)
        return false;
    /* nsof_remote_namespace keeps at least NSOF_NS_MAX - HASH_HEX - 1 - (NAME_PART_MAX + 1)
     * characters of the namespace's name. */
    k = n < NSOF_NS_MAX - HASH_HEX - 2 - NAME_PART_MAX ? n
                                                       : NSOF_NS_MAX - HASH_HEX - 2 - NAME_PART_MAX;
    while (k > 0 && local[k - 1] == '-')
        k--;
    return rn >= k + HASH_HEX + 1 && strncmp(remote, local, k) == 0 &&
           remote[rn - HASH_HEX - 1] == '-' && strcmp(remote + rn - HASH_HEX, hash) == 0;
}

int nsof_remote_allowed(const char *local, const char *remote, const char *home_id,
                        const json_t *patterns, const char *agent_ns, char *err, size_t errlen)
{
    size_t n = json_array_size(patterns);

    if (!remote || nsof_reserved(remote, agent_ns)) {
        snprintf(err, errlen, "the name is reserved on this cluster or not a valid namespace name");
        return -EPERM;
    }
    if (nsof_default_shaped(local, remote, home_id))
        return 0;
    if (n > NSOF_MAX_NS_PATTERNS)
        n = NSOF_MAX_NS_PATTERNS;
    for (size_t i = 0; i < n; i++) {
        const char *p = json_string_value(json_array_get(patterns, i));

        if (p && strlen(p) <= NSOF_NS_MAX && str_glob(p, remote))
            return 0;
    }
    snprintf(err, errlen,
             "only the consumer's DefaultName namespaces (<namespace>-<cluster>-<hash of its ID>) "
             "and the names ClusterConfig spec.offloadingConfig.allowedRemoteNamespaces lists may "
             "be claimed on this cluster");
    return -EACCES;
}

/* ---- selectors --------------------------------------------------------------------------------
 */

enum op { OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST, OP_GT, OP_LT, OP_BAD };

static enum op op_of(const char *s)
{
    static const char *const names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

    for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(s, names[i]) == 0)
            return (enum op)i;
    return OP_BAD;
}

/* A whole decimal integer with an optional sign (as Kubernetes' Gt/Lt values), checked. */
static bool parse_int(const char *s, long long *ret)
{
    long long v = 0;
    bool neg = false;

    if (!s || !*s || strlen(s) > 20)
        return false;
    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, neg ? -(*s - '0') : (*s - '0'), &v))
            return false;
    }
    *ret = v;
    return true;
}

static int bad(char *err, size_t errlen, size_t t, size_t e, const char *what)
{
    snprintf(err, errlen, "term %zu, expression %zu: %s", t, e, what);
    return -EINVAL;
}

/* A user's string made fit for a one-line message: at most max characters, anything but printable
 * ASCII shown as '?'. */
static const char *printable(const char *s, char *buf, size_t max)
{
    size_t n = 0;

    for (; s && *s && n < max; s++)
        buf[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    buf[n] = '\0';
    return buf;
}

static int check_expr(const json_t *x, bool field, size_t t, size_t e, char *err, size_t errlen)
{
    const char *where = field ? "matchFields" : "matchExpressions";
    const char *key = json_string_value(json_object_get(x, "key"));
    const char *ops = json_string_value(json_object_get(x, "operator"));
    json_t *values = json_object_get(x, "values");
    enum op op = op_of(ops);
    size_t nv;
    long long dummy;
    char msg[192], shown[81];

    if (!json_is_object(x))
        return bad(err, errlen, t, e, "not an object");
    if (!key || !(field ? strcmp(key, "metadata.name") == 0 : kname_label_key(key))) {
        snprintf(msg, sizeof(msg), "%s key %s%s%s is not %s", where, key ? "'" : "",
                 key ? printable(key, shown, 80) : "(missing)", key ? "'" : "",
                 field ? "metadata.name" : "a valid label key");
        return bad(err, errlen, t, e, msg);
    }
    if (op == OP_BAD || (field && op != OP_IN && op != OP_NOT_IN)) {
        snprintf(msg, sizeof(msg), "operator %s%s%s is not one of %s", ops ? "'" : "",
                 ops ? printable(ops, shown, 40) : "(missing)", ops ? "'" : "",
                 field ? "In, NotIn" : "In, NotIn, Exists, DoesNotExist, Gt, Lt");
        return bad(err, errlen, t, e, msg);
    }
    if (values && !json_is_array(values))
        return bad(err, errlen, t, e, "values is not a list");
    nv = json_array_size(values);
    if (nv > NSOF_MAX_VALUES)
        return bad(err, errlen, t, e, "too many values (max 64)");
    for (size_t i = 0; i < nv; i++) {
        const char *v = json_string_value(json_array_get(values, i));

        if (!v || !(field ? kname_dns_subdomain_n(v, strlen(v)) : kname_label_value(v, true)))
            return bad(err, errlen, t, e, "a value is not a valid label value");
    }
    switch (op) {
    case OP_IN:
    case OP_NOT_IN:
        if (nv == 0)
            return bad(err, errlen, t, e, "In and NotIn need at least one value");
        break;
    case OP_EXISTS:
    case OP_DOES_NOT_EXIST:
        if (nv != 0)
            return bad(err, errlen, t, e, "Exists and DoesNotExist take no values");
        break;
    default:
        if (nv != 1 || !parse_int(json_string_value(json_array_get(values, 0)), &dummy))
            return bad(err, errlen, t, e, "Gt and Lt take exactly one integer value");
        break;
    }
    return 0;
}

int nsof_selector_validate(const json_t *sel, char *err, size_t errlen)
{
    json_t *terms;

    if (!sel || json_is_null(sel))
        return 0;
    if (!json_is_object(sel)) {
        snprintf(err, errlen, "clusterSelector is not an object");
        return -EINVAL;
    }
    terms = json_object_get(sel, "nodeSelectorTerms");
    if (terms && !json_is_array(terms)) {
        snprintf(err, errlen, "nodeSelectorTerms is not a list");
        return -EINVAL;
    }
    if (json_array_size(terms) > NSOF_MAX_TERMS) {
        snprintf(err, errlen, "too many nodeSelectorTerms (max %d)", NSOF_MAX_TERMS);
        return -EINVAL;
    }
    for (size_t t = 0; t < json_array_size(terms); t++) {
        const json_t *term = json_array_get(terms, t);
        static const char *const parts[] = {"matchExpressions", "matchFields"};

        if (!json_is_object(term)) {
            snprintf(err, errlen, "term %zu is not an object", t);
            return -EINVAL;
        }
        for (size_t p = 0; p < 2; p++) {
            json_t *xs = json_object_get(term, parts[p]);

            if (xs && !json_is_array(xs)) {
                snprintf(err, errlen, "term %zu: %s is not a list", t, parts[p]);
                return -EINVAL;
            }
            if (json_array_size(xs) > NSOF_MAX_EXPRESSIONS) {
                snprintf(err, errlen, "term %zu: too many %s (max %d)", t, parts[p],
                         NSOF_MAX_EXPRESSIONS);
                return -EINVAL;
            }
            for (size_t e = 0; e < json_array_size(xs); e++)
                if (check_expr(json_array_get(xs, e), p == 1, t, e, err, errlen) < 0)
                    return -EINVAL;
        }
    }
    return 0;
}

static bool in_values(const json_t *values, const char *v)
{
    for (size_t i = 0; v && i < json_array_size(values); i++)
        if (strcmp(json_string_value(json_array_get(values, i)), v) == 0)
            return true;
    return false;
}

static bool expr_match(const json_t *x, const char *value)
{
    const json_t *values = json_object_get(x, "values");
    long long have, want;

    switch (op_of(json_string_value(json_object_get(x, "operator")))) {
    case OP_IN:
        return in_values(values, value);
    case OP_NOT_IN:
        return !in_values(values, value);
    case OP_EXISTS:
        return value != NULL;
    case OP_DOES_NOT_EXIST:
        return value == NULL;
    case OP_GT:
    case OP_LT:
        if (!value || !parse_int(value, &have) ||
            !parse_int(json_string_value(json_array_get(values, 0)), &want))
            return false;
        return op_of(json_string_value(json_object_get(x, "operator"))) == OP_GT ? have > want
                                                                                 : have < want;
    default:
        return false;
    }
}

static bool term_match(const json_t *term, const char *node_name, const json_t *labels)
{
    const json_t *xs = json_object_get(term, "matchExpressions");
    const json_t *fs = json_object_get(term, "matchFields");

    if (json_array_size(xs) == 0 && json_array_size(fs) == 0)
        return false;
    for (size_t i = 0; i < json_array_size(xs); i++) {
        const json_t *x = json_array_get(xs, i);
        const char *key = json_string_value(json_object_get(x, "key"));

        if (!expr_match(x, json_string_value(json_object_get(labels, key))))
            return false;
    }
    for (size_t i = 0; i < json_array_size(fs); i++)
        if (!expr_match(json_array_get(fs, i), node_name))
            return false;
    return true;
}

bool nsof_selector_match(const json_t *sel, const char *node_name, const json_t *labels)
{
    char err[8];
    const json_t *terms = json_object_get(sel, "nodeSelectorTerms");

    if (!sel || json_is_null(sel) || json_array_size(terms) == 0) {
        const char *t = json_string_value(json_object_get(labels, NSOF_VNODE_LABEL));
        return t && strcmp(t, NSOF_VNODE_VALUE) == 0;
    }
    if (nsof_selector_validate(sel, err, sizeof(err)) < 0)
        return false;
    for (size_t t = 0; t < json_array_size(terms); t++)
        if (term_match(json_array_get(terms, t), node_name, labels))
            return true;
    return false;
}

int nsof_spec_parse(const json_t *obj, struct nsof_spec *ret, char *err, size_t errlen)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *sel = json_object_get(spec, "clusterSelector");
    const char *m = json_string_value(json_object_get(spec, "namespaceMappingStrategy"));
    const char *p = json_string_value(json_object_get(spec, "podOffloadingStrategy"));
    struct nsof_spec s = {NSOF_MAP_DEFAULT_NAME, NSOF_PODS_LOCAL_AND_REMOTE, NULL};
    char shown[41];

    if (spec && !json_is_object(spec)) {
        snprintf(err, errlen, "spec is not an object");
        return -EINVAL;
    }
    if (json_object_get(spec, "namespaceMappingStrategy") && !m) {
        snprintf(err, errlen, "namespaceMappingStrategy is not a string");
        return -EINVAL;
    }
    if (m && strcmp(m, "EnforceSameName") == 0)
        s.mapping = NSOF_MAP_ENFORCE_SAME_NAME;
    else if (m && strcmp(m, "DefaultName") != 0) {
        snprintf(err, errlen, "namespaceMappingStrategy '%s' is not DefaultName or EnforceSameName",
                 printable(m, shown, 40));
        return -EINVAL;
    }
    if (json_object_get(spec, "podOffloadingStrategy") && !p) {
        snprintf(err, errlen, "podOffloadingStrategy is not a string");
        return -EINVAL;
    }
    if (p && strcmp(p, "Local") == 0)
        s.pods = NSOF_PODS_LOCAL;
    else if (p && strcmp(p, "Remote") == 0)
        s.pods = NSOF_PODS_REMOTE;
    else if (p && strcmp(p, "LocalAndRemote") != 0) {
        snprintf(err, errlen, "podOffloadingStrategy '%s' is not Local, Remote or LocalAndRemote",
                 printable(p, shown, 40));
        return -EINVAL;
    }
    if (nsof_selector_validate(sel, err, errlen) < 0)
        return -EINVAL;
    if (sel && !json_is_null(sel) && json_array_size(json_object_get(sel, "nodeSelectorTerms")) > 0)
        s.selector = sel;
    *ret = s;
    return 0;
}

/* ---- status -----------------------------------------------------------------------------------
 */

const char *nsof_phase_name(enum nsof_phase p)
{
    static const char *const names[] = {"Ready",      "NoClusterSelected", "InProgress",
                                        "SomeFailed", "AllFailed",         "Terminating",
                                        "Invalid"};

    return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "InProgress";
}

enum nsof_cluster_state nsof_cluster_state(const json_t *conditions)
{
    for (size_t i = 0; i < json_array_size(conditions); i++) {
        const json_t *c = json_array_get(conditions, i);
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        const char *reason = json_string_value(json_object_get(c, "reason"));

        if (!type || strcmp(type, "Ready") != 0 || !status)
            continue;
        if (strcmp(status, "True") == 0)
            return NSOF_CLUSTER_READY;
        if (strcmp(status, "False") == 0 &&
            !(reason && (strcmp(reason, "Terminating") == 0 || strcmp(reason, "Pending") == 0)))
            return NSOF_CLUSTER_FAILED;
        return NSOF_CLUSTER_IN_PROGRESS;
    }
    return NSOF_CLUSTER_IN_PROGRESS;
}

enum nsof_phase nsof_phase_of(bool invalid, bool terminating, const json_t *conds,
                              const char *const *selected, size_t nselected)
{
    size_t ready = 0, failed = 0;

    if (invalid)
        return NSOF_PHASE_INVALID;
    if (terminating)
        return NSOF_PHASE_TERMINATING;
    if (nselected == 0)
        return NSOF_PHASE_NO_CLUSTER_SELECTED;
    for (size_t i = 0; i < nselected; i++) {
        const json_t *c =
            json_is_object(conds) && selected[i] ? json_object_get(conds, selected[i]) : NULL;

        switch (nsof_cluster_state(json_is_array(c) ? c : NULL)) {
        case NSOF_CLUSTER_READY:
            ready++;
            break;
        case NSOF_CLUSTER_FAILED:
            failed++;
            break;
        default:
            break;
        }
    }
    if (ready == nselected)
        return NSOF_PHASE_READY;
    if (failed == nselected)
        return NSOF_PHASE_ALL_FAILED;
    if (failed > 0)
        return NSOF_PHASE_SOME_FAILED;
    return NSOF_PHASE_IN_PROGRESS;
}
