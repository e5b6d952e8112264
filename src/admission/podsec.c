/* admission/podsec: see podsec.h. Each check gathers its offenders (container or volume names,
 * values) into fixed lists of borrowed strings, then writes its "reason (detail)" once. */
#include "admission/podsec.h"
#include "admission/review.h"
#include "common/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_MAX    2048 /* the message before it is cut to the caller's buffer */
#define DETAIL_MAX 1024
#define SHOWN_MAX  96 /* one name or value as shown */

/* ---- bounded text --------------------------------------------------------------------------- */

struct sb {
    char *p;
    size_t cap, len;
    bool cut;
};

static void sb_init(struct sb *b, char *p, size_t cap)
{
    b->p = p;
    b->cap = cap;
    b->len = 0;
    b->cut = false;
    p[0] = '\0';
}

__attribute__((format(printf, 2, 3))) static void sb_add(struct sb *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->cut)
        return;
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->cut = true;
        b->len = b->cap - 1;
        return;
    }
    b->len += (size_t)n;
}

/* A list of distinct borrowed strings (or numbers), at most ADM_PODSEC_LIST_MAX kept. */
struct list {
    const char *v[ADM_PODSEC_LIST_MAX];
    json_int_t num[ADM_PODSEC_LIST_MAX];
    size_t n;
    bool more;
};

static void list_add(struct list *l, const char *s)
{
    if (!s)
        s = "";
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return;
    if (l->n >= ADM_PODSEC_LIST_MAX) {
        l->more = true;
        return;
    }
    l->v[l->n++] = s;
}

static void list_add_num(struct list *l, json_int_t x)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->num[i] == x)
            return;
    if (l->n >= ADM_PODSEC_LIST_MAX) {
        l->more = true;
        return;
    }
    l->v[l->n] = "";
    l->num[l->n++] = x;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Count of l as shown: a list cut short counts as many. */
static size_t many(const struct list *l)
{
    return l->more ? l->n + 1 : l->n;
}

static const char *plural(const struct list *l, const char *one, const char *more)
{
    return many(l) == 1 ? one : more;
}

/* `"a", "b"` (quoted), sorted when asked, ", ..." when cut short. */
static void put_quoted(struct sb *b, struct list *l, bool sort)
{
    char shown[SHOWN_MAX];

    if (sort)
        qsort(l->v, l->n, sizeof(l->v[0]), str_cmp);
    for (size_t i = 0; i < l->n; i++)
        sb_add(b, "%s\"%s\"", i ? ", " : "", adm_printable(l->v[i], shown, sizeof(shown)));
    if (l->more)
        sb_add(b, ", ...");
}

static void put_plain(struct sb *b, const struct list *l)
{
    char shown[SHOWN_MAX];

    for (size_t i = 0; i < l->n; i++)
        sb_add(b, "%s%s", i ? ", " : "", adm_printable(l->v[i], shown, sizeof(shown)));
    if (l->more)
        sb_add(b, ", ...");
}

static void put_nums(struct sb *b, const struct list *l)
{
    for (size_t i = 0; i < l->n; i++)
        sb_add(b, "%s%lld", i ? ", " : "", (long long)l->num[i]);
    if (l->more)
        sb_add(b, ", ...");
}

/* `container "a"` or `containers "a", "b"` */
static void put_containers(struct sb *b, struct list *l)
{
    sb_add(b, "%s ", plural(l, "container", "containers"));
    put_quoted(b, l, false);
}

/* ---- the pod -------------------------------------------------------------------------------- */

static const char *const container_lists[] = {"initContainers", "containers",
                                              "ephemeralContainers"};

/* Every container c of spec, in the order Kubernetes visits them. */
#define FOR_EACH_CONTAINER(spec, k, i, c)                                                          \
    for (size_t k = 0; k < sizeof(container_lists) / sizeof(container_lists[0]); k++)              \
        for (size_t i = 0;                                                                         \
             (c = json_array_get(json_object_get(spec, container_lists[k]), i)) != NULL; i++)

struct pod {
    const json_t *spec, *sc, *ann; /* spec, spec.securityContext, metadata.annotations */
};

struct report {
    struct sb sb;
    size_t n;
    struct sb d; /* the detail of the check at hand */
    char dbuf[DETAIL_MAX];
};

static struct sb *detail(struct report *r)
{
    sb_init(&r->d, r->dbuf, sizeof(r->dbuf));
    return &r->d;
}

static const json_t *sc_of(const json_t *c)
{
    return json_object_get(c, "securityContext");
}

static const char *name_of(const json_t *c)
{
    const char *s = jsn_str(c, "name");

    return s ? s : "";
}

static bool in_set(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The check at hand found reason, with the detail in r->d. */
static void violation(struct report *r, const char *reason)
{
    sb_add(&r->sb, "%s%s (%s%s)", r->n++ ? ", " : "", reason, r->d.p, r->d.cut ? "..." : "");
}

/* A check of securityContexts: the containers whose context is bad (and the pod, when pod_too
 * and its own is), reported as `reason ([pod and ]containers "a", "b" <must>)`. */
static void check_contexts(const struct pod *p, struct report *r, bool (*bad)(const json_t *sc),
                           bool pod_too, const char *reason, const char *must)
{
    struct list l = {0};
    bool pod = pod_too && bad(p->sc);
    const json_t *c;
    struct sb *d;

    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        if (bad(sc_of(c)))
            list_add(&l, name_of(c));
    }
    if (!pod && !l.n)
        return;
    d = detail(r);
    if (pod)
        sb_add(d, "pod%s", l.n ? " and " : "");
    if (l.n)
        put_containers(d, &l);
    sb_add(d, " %s", must);
    violation(r, reason);
}

/* ---- the checks, in the order of their IDs -------------------------------------------------- */

#define APPARMOR_PREFIX "container.apparmor.security.beta.kubernetes.io/"

static bool apparmor_type_ok(const char *t)
{
    return !t || strcmp(t, "RuntimeDefault") == 0 || strcmp(t, "Localhost") == 0;
}

static void check_apparmor(const struct pod *p, struct report *r)
{
    const char *k, *t;
    const json_t *v, *c;
    char s1[SHOWN_MAX], s2[SHOWN_MAX];
    struct sb *d;
    size_t n = 0;

    d = detail(r);
    json_object_foreach((json_t *)p->ann, k, v)
    {
        const char *val = json_string_value(v);

        if (!has_prefix(k, APPARMOR_PREFIX) || !val || !*val ||
            strcmp(val, "runtime/default") == 0 || has_prefix(val, "localhost/"))
            continue;
        sb_add(d, "%s%s=\"%s\"", n++ ? ", " : "", adm_printable(k, s1, sizeof(s1)),
               adm_printable(val, s2, sizeof(s2)));
    }
    t = jsn_str(json_object_get(p->sc, "appArmorProfile"), "type");
    if (!apparmor_type_ok(t))
        sb_add(d, "%spod securityContext.appArmorProfile.type=\"%s\"", n++ ? ", " : "",
               adm_printable(t, s1, sizeof(s1)));
    FOR_EACH_CONTAINER(p->spec, kk, i, c)
    {
        t = jsn_str(json_object_get(sc_of(c), "appArmorProfile"), "type");
        if (!apparmor_type_ok(t))
            sb_add(d, "%scontainer \"%s\" securityContext.appArmorProfile.type=\"%s\"",
                   n++ ? ", " : "", adm_printable(name_of(c), s1, sizeof(s1)),
                   adm_printable(t, s2, sizeof(s2)));
    }
    if (n)
        violation(r, n == 1 ? "forbidden AppArmor profile" : "forbidden AppArmor profiles");
}

/* Docker's default set: what baseline lets a container add. */
static const char *const default_caps[] = {
    "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",       "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT", NULL};

static const char *const restricted_caps[] = {"NET_BIND_SERVICE", NULL};

/* Containers adding a capability outside allowed into bad, the capabilities into caps. */
static void caps_added(const struct pod *p, const char *const *allowed, struct list *bad,
                       struct list *caps)
{
    const json_t *c, *cap;
    size_t j;

    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        json_array_foreach(json_object_get(json_object_get(sc_of(c), "capabilities"), "add"), j,
                           cap)
        {
            const char *s = json_string_value(cap);

            if (in_set(s, allowed))
                continue;
            list_add(bad, name_of(c));
            list_add(caps, s ? s : "?");
        }
    }
}

static void put_caps_added(struct sb *d, struct list *bad, struct list *caps)
{
    put_containers(d, bad);
    sb_add(d, " must not include ");
    put_quoted(d, caps, true);
    sb_add(d, " in securityContext.capabilities.add");
}

static void check_capabilities_baseline(const struct pod *p, struct report *r)
{
    struct list bad = {0}, caps = {0};
    struct sb *d;

    caps_added(p, default_caps, &bad, &caps);
    if (!bad.n)
        return;
    d = detail(r);
    put_caps_added(d, &bad, &caps);
    violation(r, "non-default capabilities");
}

static void check_capabilities_restricted(const struct pod *p, struct report *r)
{
    struct list nodrop = {0}, bad = {0}, caps = {0};
    const json_t *c, *cap;
    struct sb *d;
    size_t j;

    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        bool all = false;

        json_array_foreach(json_object_get(json_object_get(sc_of(c), "capabilities"), "drop"), j,
                           cap)
        {
            if (json_is_string(cap) && strcmp(json_string_value(cap), "ALL") == 0)
                all = true;
        }
        if (!all)
            list_add(&nodrop, name_of(c));
    }
    caps_added(p, restricted_caps, &bad, &caps);
    if (!nodrop.n && !bad.n)
        return;
    d = detail(r);
    if (nodrop.n) {
        put_containers(d, &nodrop);
        sb_add(d, " must set securityContext.capabilities.drop=[\"ALL\"]");
    }
    if (bad.n) {
        if (nodrop.n)
            sb_add(d, "; ");
        put_caps_added(d, &bad, &caps);
    }
    violation(r, "unrestricted capabilities");
}

static void check_host_namespaces(const struct pod *p, struct report *r)
{
    static const char *const fields[] = {"hostNetwork", "hostPID", "hostIPC"};
    struct sb *d;
    size_t n = 0;

    d = detail(r);
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (json_is_true(json_object_get(p->spec, fields[i])))
            sb_add(d, "%s%s=true", n++ ? ", " : "", fields[i]);
    if (n)
        violation(r, "host namespaces");
}

static void check_host_path(const struct pod *p, struct report *r)
{
    struct list bad = {0};
    const json_t *vol;
    struct sb *d;
    size_t i;

    json_array_foreach(json_object_get(p->spec, "volumes"), i, vol)
    {
        const json_t *hp = json_object_get(vol, "hostPath");

        if (hp && !json_is_null(hp))
            list_add(&bad, name_of(vol));
    }
    if (!bad.n)
        return;
    d = detail(r);
    sb_add(d, "%s ", plural(&bad, "volume", "volumes"));
    put_quoted(d, &bad, false);
    violation(r, "hostPath volumes");
}

static void check_host_ports(const struct pod *p, struct report *r)
{
    struct list bad = {0}, ports = {0};
    const json_t *c, *port;
    struct sb *d;
    size_t j;

    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        json_array_foreach(json_object_get(c, "ports"), j, port)
        {
            const json_t *hp = json_object_get(port, "hostPort");

            if (!hp || json_is_null(hp) || (json_is_integer(hp) && json_integer_value(hp) == 0))
                continue;
            list_add(&bad, name_of(c));
            list_add_num(&ports, json_is_integer(hp) ? json_integer_value(hp) : -1);
        }
    }
    if (!bad.n)
        return;
    d = detail(r);
    put_containers(d, &bad);
    sb_add(d, " %s %s ", plural(&bad, "uses", "use"), plural(&ports, "hostPort", "hostPorts"));
    put_nums(d, &ports);
    violation(r, "hostPort");
}

static void check_proc_mount(const struct pod *p, struct report *r)
{
    struct list bad = {0}, vals = {0};
    const json_t *c;
    struct sb *d;

    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        const json_t *pm = json_object_get(sc_of(c), "procMount");
        const char *s = json_string_value(pm);

        if (!pm || json_is_null(pm) || (s && (!*s || strcmp(s, "Default") == 0)))
            continue;
        list_add(&bad, name_of(c));
        list_add(&vals, s ? s : "?");
    }
    if (!bad.n)
        return;
    d = detail(r);
    put_containers(d, &bad);
    sb_add(d, " must not set securityContext.procMount to ");
    put_quoted(d, &vals, true);
    violation(r, "procMount");
}

static const char *const allowed_volumes[] = {"configMap", "csi",       "downwardAPI",
                                              "emptyDir",  "ephemeral", "persistentVolumeClaim",
                                              "projected", "secret",    NULL};

static void check_restricted_volumes(const struct pod *p, struct report *r)
{
    struct list bad = {0}, types = {0};
    const json_t *vol, *v;
    const char *key;
    struct sb *d;
    size_t i;

    json_array_foreach(json_object_get(p->spec, "volumes"), i, vol)
    {
        bool known = false;

        json_object_foreach((json_t *)vol, key, v)
        {
            if (strcmp(key, "name") == 0 || json_is_null(v))
                continue;
            known = true;
            if (in_set(key, allowed_volumes))
                continue;
            list_add(&bad, name_of(vol));
            list_add(&types, key);
        }
        if (!known) {
            list_add(&bad, name_of(vol));
            list_add(&types, "unknown");
        }
    }
    if (!bad.n)
        return;
    d = detail(r);
    sb_add(d, "%s ", plural(&bad, "volume", "volumes"));
    put_quoted(d, &bad, false);
    sb_add(d, " %s restricted volume %s ", plural(&bad, "uses", "use"),
           plural(&types, "type", "types"));
    put_quoted(d, &types, true);
    violation(r, "restricted volume types");
}

static void check_run_as_non_root(const struct pod *p, struct report *r)
{
    struct list explicit_bad = {0}, implicit_bad = {0};
    const json_t *pv = json_object_get(p->sc, "runAsNonRoot"), *c;
    bool pod_true = json_is_true(pv), pod_false = json_is_false(pv);
    struct sb *d;
    const char *sep = "";

    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        const json_t *cv = json_object_get(sc_of(c), "runAsNonRoot");

        if (json_is_false(cv))
            list_add(&explicit_bad, name_of(c));
        else if (!json_is_true(cv) && !pod_true)
            list_add(&implicit_bad, name_of(c));
    }
    if (!pod_false && !explicit_bad.n && !implicit_bad.n)
        return;
    d = detail(r);
    if (pod_false) {
        sb_add(d, "pod must not set securityContext.runAsNonRoot=false");
        sep = "; ";
    }
    if (explicit_bad.n) {
        sb_add(d, "%s", sep);
        put_containers(d, &explicit_bad);
        sb_add(d, " must not set securityContext.runAsNonRoot=false");
        sep = "; ";
    }
    if (implicit_bad.n) {
        sb_add(d, "%spod or ", sep);
        put_containers(d, &implicit_bad);
        sb_add(d, " must set securityContext.runAsNonRoot=true");
    }
    violation(r, "runAsNonRoot != true");
}

static const char *const selinux_types[] = {"container_t", "container_init_t", "container_kvm_t",
                                            "container_engine_t", NULL};

/* The forbidden parts of one seLinuxOptions, or nothing; container NULL: the pod's. */
static bool selinux_one(struct sb *d, bool first, const char *container, const json_t *o)
{
    static const char *const fields[] = {"type", "user", "role"};
    char s[SHOWN_MAX];
    size_t n = 0;

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *v = jsn_str(o, fields[i]);

        if (!v || !*v || (i == 0 && in_set(v, selinux_types)))
            continue;
        if (n++ == 0 && !container)
            sb_add(d, "%spod set forbidden securityContext.seLinuxOptions: ", first ? "" : "; ");
        else if (n == 1)
            sb_add(d, "%scontainer \"%s\" set forbidden securityContext.seLinuxOptions: ",
                   first ? "" : "; ", adm_printable(container, s, sizeof(s)));
        else
            sb_add(d, ", ");
        sb_add(d, "%s \"%s\"", fields[i], adm_printable(v, s, sizeof(s)));
    }
    return n > 0;
}

static void check_selinux(const struct pod *p, struct report *r)
{
    const json_t *c;
    struct sb *d;
    size_t n = 0;

    d = detail(r);
    n += selinux_one(d, true, NULL, json_object_get(p->sc, "seLinuxOptions"));
    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        n += selinux_one(d, n == 0, name_of(c), json_object_get(sc_of(c), "seLinuxOptions"));
    }
    if (n)
        violation(r, "seLinuxOptions");
}

#define SECCOMP_POD_ANNOTATION       "seccomp.security.alpha.kubernetes.io/pod"
#define SECCOMP_CONTAINER_ANNOTATION "container.seccomp.security.alpha.kubernetes.io/"

/* The seccomp profile type of a securityContext, else of its annotation (NULL: none). */
static const char *seccomp_type(const json_t *sc, const json_t *ann, const char *container)
{
    const char *t = jsn_str(json_object_get(sc, "seccompProfile"), "type"), *a;
    char key[sizeof(SECCOMP_CONTAINER_ANNOTATION) + 256];

    if (t || !ann)
        return t;
    if (!container) {
        a = jsn_str(ann, SECCOMP_POD_ANNOTATION);
    } else {
        int n = snprintf(key, sizeof(key), SECCOMP_CONTAINER_ANNOTATION "%s", container);

        a = n > 0 && (size_t)n < sizeof(key) ? jsn_str(ann, key) : NULL;
    }
    if (!a || !*a)
        return NULL;
    if (strcmp(a, "runtime/default") == 0 || strcmp(a, "docker/default") == 0)
        return "RuntimeDefault";
    if (has_prefix(a, "localhost/"))
        return "Localhost";
    if (strcmp(a, "unconfined") == 0)
        return "Unconfined";
    return a;
}

static bool seccomp_ok(const char *t)
{
    return t && (strcmp(t, "RuntimeDefault") == 0 || strcmp(t, "Localhost") == 0);
}

/* pod must not set ...; containers "a" must not set ... to "X" (the explicitly bad ones). */
static void put_seccomp_explicit(struct sb *d, const char *pod_type, struct list *bad,
                                 struct list *vals)
{
    char s[SHOWN_MAX];

    if (pod_type)
        sb_add(d, "pod must not set securityContext.seccompProfile.type to \"%s\"",
               adm_printable(pod_type, s, sizeof(s)));
    if (bad->n) {
        if (pod_type)
            sb_add(d, "; ");
        put_containers(d, bad);
        sb_add(d, " must not set securityContext.seccompProfile.type to ");
        put_quoted(d, vals, true);
    }
}

static void check_seccomp_baseline(const struct pod *p, struct report *r)
{
    struct list bad = {0}, vals = {0};
    const char *pt = seccomp_type(p->sc, p->ann, NULL), *t;
    const json_t *c;
    struct sb *d;

    if (!pt || seccomp_ok(pt))
        pt = NULL;
    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        t = seccomp_type(sc_of(c), p->ann, name_of(c));
        if (t && !seccomp_ok(t)) {
            list_add(&bad, name_of(c));
            list_add(&vals, t);
        }
    }
    if (!pt && !bad.n)
        return;
    d = detail(r);
    put_seccomp_explicit(d, pt, &bad, &vals);
    violation(r, "seccompProfile");
}

static void check_seccomp_restricted(const struct pod *p, struct report *r)
{
    struct list bad = {0}, vals = {0}, unset = {0};
    const char *pt = seccomp_type(p->sc, p->ann, NULL), *t;
    bool pod_ok = seccomp_ok(pt);
    const json_t *c;
    struct sb *d;

    if (pod_ok)
        pt = NULL;
    FOR_EACH_CONTAINER(p->spec, k, i, c)
    {
        t = seccomp_type(sc_of(c), p->ann, name_of(c));
        if (t && !seccomp_ok(t)) {
            list_add(&bad, name_of(c));
            list_add(&vals, t);
        } else if (!t && !pod_ok) {
            list_add(&unset, name_of(c));
        }
    }
    if (!pt && !bad.n && !unset.n)
        return;
    d = detail(r);
    put_seccomp_explicit(d, pt, &bad, &vals);
    if (unset.n) {
        sb_add(d, "%spod or ", pt || bad.n ? "; " : "");
        put_containers(d, &unset);
        sb_add(d, " must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
                  "\"Localhost\"");
    }
    violation(r, "seccompProfile");
}

/* Namespaced sysctls that isolate from the node and its other pods. */
static const char *const safe_sysctls[] = {"kernel.shm_rmid_forced",
                                           "net.ipv4.ip_local_port_range",
                                           "net.ipv4.ip_unprivileged_port_start",
                                           "net.ipv4.tcp_syncookies",
                                           "net.ipv4.ping_group_range",
                                           "net.ipv4.ip_local_reserved_ports",
                                           "net.ipv4.tcp_keepalive_time",
                                           "net.ipv4.tcp_fin_timeout",
                                           "net.ipv4.tcp_keepalive_intvl",
                                           "net.ipv4.tcp_keepalive_probes",
                                           NULL};

static void check_sysctls(const struct pod *p, struct report *r)
{
    struct list bad = {0};
    const json_t *s;
    struct sb *d;
    size_t i;

    json_array_foreach(json_object_get(p->sc, "sysctls"), i, s)
    {
        const char *name = jsn_str(s, "name");

        if (!in_set(name, safe_sysctls))
            list_add(&bad, name ? name : "?");
    }
    if (!bad.n)
        return;
    d = detail(r);
    put_plain(d, &bad);
    violation(r, "forbidden sysctls");
}

/* ---- the checks of one securityContext field -------------------------------------------------
 */

static bool escalates(const json_t *sc)
{
    return !json_is_false(json_object_get(sc, "allowPrivilegeEscalation"));
}

static bool privileged(const json_t *sc)
{
    return json_is_true(json_object_get(sc, "privileged"));
}

static bool root_user(const json_t *sc)
{
    const json_t *v = json_object_get(sc, "runAsUser");

    return json_is_integer(v) && json_integer_value(v) == 0;
}

static bool host_process(const json_t *sc)
{
    return json_is_true(json_object_get(json_object_get(sc, "windowsOptions"), "hostProcess"));
}

/* ---- public --------------------------------------------------------------------------------- */

static const char *const level_names[] = {"privileged", "baseline", "restricted"};

int adm_podsec_parse_level(const char *name, enum adm_podsec_level *ret)
{
    for (size_t i = 0; name && i < sizeof(level_names) / sizeof(level_names[0]); i++)
        if (strcmp(name, level_names[i]) == 0) {
            *ret = (enum adm_podsec_level)i;
            return 0;
        }
    return -EINVAL;
}

const char *adm_podsec_level_name(enum adm_podsec_level level)
{
    return (unsigned)level < sizeof(level_names) / sizeof(level_names[0]) ? level_names[level]
                                                                          : "restricted";
}

static enum adm_podsec_level level_of(const json_t *v, enum adm_podsec_level def, bool *bad)
{
    enum adm_podsec_level l;

    if (!v || json_is_null(v))
        return def;
    if (adm_podsec_parse_level(json_string_value(v), &l) == 0)
        return l;
    *bad = true;
    return ADM_PODSEC_RESTRICTED;
}

enum adm_podsec_level adm_podsec_level_for(const json_t *clusterconfig, const char *id,
                                           bool *ret_bad)
{
    const json_t *ps = json_object_get(
        json_object_get(json_object_get(clusterconfig, "spec"), "offloadingConfig"), "podSecurity");
    const json_t *e;
    bool bad = false;
    enum adm_podsec_level l = level_of(json_object_get(ps, "level"), ADM_PODSEC_BASELINE, &bad);
    size_t i;

    json_array_foreach(json_object_get(ps, "perCluster"), i, e)
    {
        const char *cid = jsn_str(e, "clusterID");

        if (id && cid && strcmp(cid, id) == 0) {
            l = level_of(json_object_get(e, "level"), l, &bad);
            break;
        }
    }
    if (ret_bad)
        *ret_bad = bad;
    return l;
}

int adm_podsec_check(enum adm_podsec_level level, const json_t *pod, char *msg, size_t len)
{
    struct pod p;
    struct report r = {.n = 0};
    char buf[MSG_MAX];
    bool restricted = level == ADM_PODSEC_RESTRICTED;

    if (!json_is_object(pod))
        return -EINVAL;
    if (level == ADM_PODSEC_PRIVILEGED)
        return 0;
    p.spec = json_object_get(pod, "spec");
    p.sc = json_object_get(p.spec, "securityContext");
    p.ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
    if (!json_is_object(p.ann))
        p.ann = NULL;
    sb_init(&r.sb, buf, sizeof(buf));
    sb_add(&r.sb, "violates PodSecurity \"%s:latest\": ", adm_podsec_level_name(level));
    if (restricted)
        check_contexts(&p, &r, escalates, false, "allowPrivilegeEscalation != false",
                       "must set securityContext.allowPrivilegeEscalation=false");
    check_apparmor(&p, &r);
    if (restricted)
        check_capabilities_restricted(&p, &r);
    else
        check_capabilities_baseline(&p, &r);
    check_host_namespaces(&p, &r);
    check_host_path(&p, &r);
    check_host_ports(&p, &r);
    check_contexts(&p, &r, privileged, false, "privileged",
                   "must not set securityContext.privileged=true");
    check_proc_mount(&p, &r);
    if (restricted) {
        check_restricted_volumes(&p, &r);
        check_run_as_non_root(&p, &r);
        check_contexts(&p, &r, root_user, true, "runAsUser=0", "must not set runAsUser=0");
    }
    check_selinux(&p, &r);
    if (restricted)
        check_seccomp_restricted(&p, &r);
    else
        check_seccomp_baseline(&p, &r);
    check_sysctls(&p, &r);
    check_contexts(&p, &r, host_process, true, "hostProcess",
                   "must not set securityContext.windowsOptions.hostProcess=true");
    if (r.n == 0)
        return 0;
    if (msg && len) {
        snprintf(msg, len, "%s", buf);
        if ((r.sb.cut || r.sb.len >= len) && len > 4)
            snprintf(msg + len - 4, 4, "...");
    }
    return -EACCES;
}
