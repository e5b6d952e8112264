/* Unit tests of src/offloading/nsof.c: strategies, the cluster selector, remote namespace names. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "offloading/nsof.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);

    if (!j)
        fail_msg("bad test JSON: %s: %s", e.text, text);
    return j;
}

static void test_remote_namespace(void **state)
{
    static const struct {
        const char *ns, *name, *id;
        enum nsof_mapping m;
        int rc;
        const char *want;
    } cases[] = {
        /* sha256("11111111-2222-4333-8444-555555555555") begins with cf4c47. */
        {"web", "cluster-1", "11111111-2222-4333-8444-555555555555", NSOF_MAP_DEFAULT_NAME, 0,
         "web-cluster-1-cf4c47"},
        {"web", "Cluster_One!", "11111111-2222-4333-8444-555555555555", NSOF_MAP_DEFAULT_NAME, 0,
         "web-cluster-one-cf4c47"},
        {"web", "", "11111111-2222-4333-8444-555555555555", NSOF_MAP_DEFAULT_NAME, 0, "web-cf4c47"},
        {"web", "---", "11111111-2222-4333-8444-555555555555", NSOF_MAP_DEFAULT_NAME, 0,
         "web-cf4c47"},
        {"web", NULL, "11111111-2222-4333-8444-555555555555", NSOF_MAP_DEFAULT_NAME, 0,
         "web-cf4c47"},
        /* The name part keeps 20 characters; a long namespace is cut to fit 63. */
        {"web", "a-very-long-cluster-name-indeed", "11111111-2222-4333-8444-555555555555",
         NSOF_MAP_DEFAULT_NAME, 0, "web-a-very-long-cluster-cf4c47"},
        {"n123456789-123456789-123456789-123456789-123456789-123456789-12", "c1",
         "11111111-2222-4333-8444-555555555555", NSOF_MAP_DEFAULT_NAME, 0,
         "n123456789-123456789-123456789-123456789-123456789-12-c1-cf4c47"},
        /* A cut that would end with '-' drops it. */
        {"n123456789-123456789-123456789-123456789-12345678901-xyz", "c1",
         "11111111-2222-4333-8444-555555555555", NSOF_MAP_DEFAULT_NAME, 0,
         "n123456789-123456789-123456789-123456789-12345678901-c1-cf4c47"},
        {"web", "cluster-1", "11111111-2222-4333-8444-555555555555", NSOF_MAP_ENFORCE_SAME_NAME, 0,
         "web"},
        {"Web", "c", "x", NSOF_MAP_DEFAULT_NAME, -EINVAL, NULL},
        {"-web", "c", "x", NSOF_MAP_ENFORCE_SAME_NAME, -EINVAL, NULL},
        {"", "c", "x", NSOF_MAP_DEFAULT_NAME, -EINVAL, NULL},
        {"web", "c", "", NSOF_MAP_DEFAULT_NAME, -EINVAL, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[NSOF_NS_MAX + 1];
        int rc = nsof_remote_namespace(cases[i].ns, cases[i].m, cases[i].name, cases[i].id, buf,
                                       sizeof(buf));

        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d, want %d", i, rc, cases[i].rc);
        if (rc == 0 && strcmp(buf, cases[i].want) != 0)
            fail_msg("case %zu: got '%s', want '%s'", i, buf, cases[i].want);
        if (rc == 0 && strlen(buf) > NSOF_NS_MAX)
            fail_msg("case %zu: longer than a namespace name", i);
    }
}

static void test_selector_validate(void **state)
{
    static const struct {
        const char *sel;
        const char *err; /* NULL: valid */
    } cases[] = {
        {"null", NULL},
        {"{}", NULL},
        {"{\"nodeSelectorTerms\":[]}", NULL},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"liqo.io/provider\","
         "\"operator\":\"In\",\"values\":[\"aws\",\"gcp\"]}]}]}",
         NULL},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]"
         ","
         "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"liqo-"
         "x\"]}]}]}",
         NULL},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"cores\",\"operator\":\"Gt\","
         "\"values\":[\"8\"]}]}]}",
         NULL},
        {"[]", "clusterSelector is not an object"},
        {"{\"nodeSelectorTerms\":{}}", "nodeSelectorTerms is not a list"},
        {"{\"nodeSelectorTerms\":[1]}", "term 0 is not an object"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":{}}]}",
         "term 0: matchExpressions is not a list"},
        {"{\"nodeSelectorTerms\":[{},{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Near\","
         "\"values\":[\"x\"]}]}]}",
         "term 1, expression 0: operator 'Near' is not one of"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"operator\":\"Exists\"}]}]}",
         "term 0, expression 0: matchExpressions key (missing) is not a valid label key"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"bad "
         "key\",\"operator\":\"Exists\"}]}]}",
         "term 0, expression 0: matchExpressions key 'bad key' is not a valid label key"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"-x.io/"
         "a\",\"operator\":\"Exists\"}]}]}",
         "term 0, expression 0: matchExpressions key '-x.io/a' is not a valid label key"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}]}",
         "term 0, expression 0: In and NotIn need at least one value"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\","
         "\"values\":[\"x\"]}]}]}",
         "term 0, expression 0: Exists and DoesNotExist take no values"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Lt\","
         "\"values\":[\"x\"]}]}]}",
         "term 0, expression 0: Gt and Lt take exactly one integer value"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
         "\"values\":[\"not a value\"]}]}]}",
         "term 0, expression 0: a value is not a valid label value"},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
         "\"values\":\"x\"}]}]}",
         "term 0, expression 0: values is not a list"},
        {"{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.labels\",\"operator\":"
         "\"In\","
         "\"values\":[\"x\"]}]}]}",
         "term 0, expression 0: matchFields key 'metadata.labels' is not metadata.name"},
        {"{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
         "\"Exists\"}]}]}",
         "term 0, expression 0: operator 'Exists' is not one of In, NotIn"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *sel = js(cases[i].sel);
        char err[256] = "";
        int rc = nsof_selector_validate(sel, err, sizeof(err));

        if (!cases[i].err && rc != 0)
            fail_msg("case %zu: refused: %s", i, err);
        if (cases[i].err && (rc != -EINVAL || strncmp(err, cases[i].err, strlen(cases[i].err))))
            fail_msg("case %zu: rc %d err '%s', want '%s...'", i, rc, err, cases[i].err);
        json_decref(sel);
    }
}

static void test_selector_bounds(void **state)
{
    json_t *sel = js("{\"nodeSelectorTerms\":[]}"),
           *terms = json_object_get(sel, "nodeSelectorTerms");
    json_t *vals = json_array();
    char err[256];

    (void)state;
    for (int i = 0; i <= NSOF_MAX_TERMS; i++)
        json_array_append_new(
            terms, js("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"}]}"));
    assert_int_equal(nsof_selector_validate(sel, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "too many nodeSelectorTerms (max 32)");
    json_array_clear(terms);
    for (int i = 0; i <= NSOF_MAX_VALUES; i++)
        json_array_append_new(vals, json_string("v"));
    json_array_append_new(terms, json_pack("{s:[{s:s,s:s,s:o}]}", "matchExpressions", "key", "a",
                                           "operator", "In", "values", vals));
    assert_int_equal(nsof_selector_validate(sel, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "term 0, expression 0: too many values (max 64)");
    json_decref(sel);
}

static void test_selector_match(void **state)
{
    static const char *vnode = "{\"liqo.io/type\":\"virtual-node\",\"liqo.io/provider\":\"aws\","
                               "\"cores\":\"16\",\"zone\":\"eu\"}";
    static const struct {
        const char *sel;
        const char *labels;
        const char *node;
        bool want;
    } cases[] = {
        /* No selector: every virtual node, and only virtual nodes. */
        {"null", "{\"liqo.io/type\":\"virtual-node\"}", "liqo-a", true},
        {"null", "{\"kubernetes.io/os\":\"linux\"}", "n1", false},
        {"null", "null", "n1", false},
        {"{\"nodeSelectorTerms\":[]}", "{\"liqo.io/type\":\"virtual-node\"}", "liqo-a", true},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"liqo.io/"
         "provider\",\"operator\":\"In\","
         "\"values\":[\"aws\",\"gcp\"]}]}]}",
         NULL, "liqo-a", true},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"liqo.io/"
         "provider\",\"operator\":\"NotIn\","
         "\"values\":[\"aws\"]}]}]}",
         NULL, "liqo-a", false},
        /* NotIn matches a node without the label, as Kubernetes. */
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"missing\",\"operator\":"
         "\"NotIn\","
         "\"values\":[\"x\"]}]}]}",
         NULL, "liqo-a", true},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}"
         ","
         "{\"key\":\"gpu\",\"operator\":\"DoesNotExist\"}]}]}",
         NULL, "liqo-a", true},
        /* ANDed: one false expression fails the term; ORed terms. */
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}"
         ","
         "{\"key\":\"gpu\",\"operator\":\"Exists\"}]}]}",
         NULL, "liqo-a", false},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]"
         "},"
         "{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"eu\"]}]}]}",
         NULL, "liqo-a", true},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"cores\",\"operator\":\"Gt\","
         "\"values\":[\"8\"]}]}]}",
         NULL, "liqo-a", true},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"cores\",\"operator\":\"Lt\","
         "\"values\":[\"8\"]}]}]}",
         NULL, "liqo-a", false},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Gt\","
         "\"values\":[\"8\"]}]}]}",
         NULL, "liqo-a", false},
        {"{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
         "\"values\":[\"liqo-a\"]}]}]}",
         NULL, "liqo-a", true},
        {"{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
         "\"values\":[\"liqo-a\"]}]}]}",
         NULL, "liqo-b", false},
        /* An empty term matches nothing; an invalid selector matches nothing. */
        {"{\"nodeSelectorTerms\":[{}]}", NULL, "liqo-a", false},
        {"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Near\"}]}"
         "]}",
         NULL, "liqo-a", false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *sel = js(cases[i].sel), *labels = js(cases[i].labels ? cases[i].labels : vnode);

        if (nsof_selector_match(json_is_null(sel) ? NULL : sel, cases[i].node,
                                json_is_null(labels) ? NULL : labels) != cases[i].want)
            fail_msg("case %zu: want %s", i, cases[i].want ? "match" : "no match");
        json_decref(sel);
        json_decref(labels);
    }
}

static void test_spec_parse(void **state)
{
    static const struct {
        const char *obj;
        int rc;
        enum nsof_mapping m;
        enum nsof_pods p;
        bool has_selector;
        const char *err;
    } cases[] = {
        {"{}", 0, NSOF_MAP_DEFAULT_NAME, NSOF_PODS_LOCAL_AND_REMOTE, false, NULL},
        {"{\"spec\":{}}", 0, NSOF_MAP_DEFAULT_NAME, NSOF_PODS_LOCAL_AND_REMOTE, false, NULL},
        {"{\"spec\":{\"namespaceMappingStrategy\":\"EnforceSameName\",\"podOffloadingStrategy\":"
         "\"Remote\"}}",
         0, NSOF_MAP_ENFORCE_SAME_NAME, NSOF_PODS_REMOTE, false, NULL},
        {"{\"spec\":{\"podOffloadingStrategy\":\"Local\",\"clusterSelector\":{"
         "\"nodeSelectorTerms\":[]}}}",
         0, NSOF_MAP_DEFAULT_NAME, NSOF_PODS_LOCAL, false, NULL},
        {"{\"spec\":{\"clusterSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
         "\"a\","
         "\"operator\":\"Exists\"}]}]}}}",
         0, NSOF_MAP_DEFAULT_NAME, NSOF_PODS_LOCAL_AND_REMOTE, true, NULL},
        {"{\"spec\":[]}", -EINVAL, 0, 0, false, "spec is not an object"},
        {"{\"spec\":{\"namespaceMappingStrategy\":\"Other\"}}", -EINVAL, 0, 0, false,
         "namespaceMappingStrategy 'Other' is not DefaultName or EnforceSameName"},
        {"{\"spec\":{\"podOffloadingStrategy\":7}}", -EINVAL, 0, 0, false,
         "podOffloadingStrategy is not a string"},
        {"{\"spec\":{\"podOffloadingStrategy\":\"remote\"}}", -EINVAL, 0, 0, false,
         "podOffloadingStrategy 'remote' is not Local, Remote or LocalAndRemote"},
        {"{\"spec\":{\"clusterSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
         "\"a\","
         "\"operator\":\"In\"}]}]}}}",
         -EINVAL, 0, 0, false, "term 0, expression 0: In and NotIn need at least one value"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *obj = js(cases[i].obj);
        struct nsof_spec s;
        char err[256] = "";
        int rc = nsof_spec_parse(obj, &s, err, sizeof(err));

        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d (%s), want %d", i, rc, err, cases[i].rc);
        if (rc == 0 && (s.mapping != cases[i].m || s.pods != cases[i].p ||
                        (s.selector != NULL) != cases[i].has_selector))
            fail_msg("case %zu: parsed wrong", i);
        if (rc < 0 && strcmp(err, cases[i].err) != 0)
            fail_msg("case %zu: err '%s', want '%s'", i, err, cases[i].err);
        json_decref(obj);
    }
    assert_string_equal(nsof_pods_name(NSOF_PODS_REMOTE), "Remote");
    assert_string_equal(nsof_pods_name(NSOF_PODS_LOCAL), "Local");
    assert_string_equal(nsof_pods_name(NSOF_PODS_LOCAL_AND_REMOTE), "LocalAndRemote");
    assert_string_equal(nsof_mapping_name(NSOF_MAP_ENFORCE_SAME_NAME), "EnforceSameName");
    assert_string_equal(nsof_mapping_name(NSOF_MAP_DEFAULT_NAME), "DefaultName");
}

/* The phase from the providers' conditions (docs/offloading.md): Ready=True ready; Ready=False
 * failed unless its reason is Terminating or Pending; anything else in progress. */
static void test_phase(void **state)
{
    json_t *conds = js("{\"ok\": [{\"type\": \"OffloadingRequired\", \"status\": \"True\"},"
                       "        {\"type\": \"Ready\", \"status\": \"True\"}],"
                       " \"bad\": [{\"type\": \"Ready\", \"status\": \"False\","
                       "          \"reason\": \"AlreadyExists\"}],"
                       " \"bad2\": [{\"type\": \"Ready\", \"status\": \"False\"}],"
                       " \"term\": [{\"type\": \"Ready\", \"status\": \"False\","
                       "           \"reason\": \"Terminating\"}],"
                       " \"pend\": [{\"type\": \"Ready\", \"status\": \"False\","
                       "           \"reason\": \"Pending\"}],"
                       " \"unk\": [{\"type\": \"Ready\", \"status\": \"Unknown\"}],"
                       " \"req\": [{\"type\": \"OffloadingRequired\", \"status\": \"True\"}],"
                       " \"junk\": 7}");
    static const struct {
        bool invalid, terminating;
        const char *ids[4];
        size_t n;
        enum nsof_phase want;
    } cases[] = {
        {true, true, {"ok"}, 1, NSOF_PHASE_INVALID},
        {false, true, {"ok"}, 1, NSOF_PHASE_TERMINATING},
        {false, false, {NULL}, 0, NSOF_PHASE_NO_CLUSTER_SELECTED},
        {false, false, {"ok"}, 1, NSOF_PHASE_READY},
        {false, false, {"ok", "ok"}, 2, NSOF_PHASE_READY},
        {false, false, {"bad"}, 1, NSOF_PHASE_ALL_FAILED},
        {false, false, {"bad", "bad2"}, 2, NSOF_PHASE_ALL_FAILED},
        {false, false, {"ok", "bad"}, 2, NSOF_PHASE_SOME_FAILED},
        {false, false, {"missing", "bad"}, 2, NSOF_PHASE_SOME_FAILED},
        {false, false, {"ok", "missing"}, 2, NSOF_PHASE_IN_PROGRESS},
        {false, false, {"term"}, 1, NSOF_PHASE_IN_PROGRESS},
        {false, false, {"pend"}, 1, NSOF_PHASE_IN_PROGRESS},
        {false, false, {"unk"}, 1, NSOF_PHASE_IN_PROGRESS},
        {false, false, {"req"}, 1, NSOF_PHASE_IN_PROGRESS},
        {false, false, {"junk"}, 1, NSOF_PHASE_IN_PROGRESS},
        {false, false, {"ok", "ok", "ok", "missing"}, 4, NSOF_PHASE_IN_PROGRESS},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum nsof_phase p =
            nsof_phase_of(cases[i].invalid, cases[i].terminating, conds, cases[i].ids, cases[i].n);

        if (p != cases[i].want)
            fail_msg("case %zu: %s, want %s", i, nsof_phase_name(p),
                     nsof_phase_name(cases[i].want));
    }
    /* No status at all. */
    assert_int_equal(nsof_phase_of(false, false, NULL, (const char *[]){"x"}, 1),
                     NSOF_PHASE_IN_PROGRESS);
    assert_string_equal(nsof_phase_name(NSOF_PHASE_NO_CLUSTER_SELECTED), "NoClusterSelected");
    assert_string_equal(nsof_phase_name(NSOF_PHASE_SOME_FAILED), "SomeFailed");
    assert_string_equal(nsof_phase_name(NSOF_PHASE_INVALID), "Invalid");
    json_decref(conds);
}

/* Reserved names, at home and on a provider. */
static void test_reserved(void **state)
{
    static const struct {
        const char *name, *agent_ns;
        bool reserved;
    } cases[] = {
        {"default", NULL, true},
        {"kube-system", NULL, true},
        {"kube-public", NULL, true},
        {"kube-node-lease", NULL, true},
        {"kube", NULL, false},
        {"cliqo", NULL, true},
        {"cliqo-tenant-abc", NULL, true},
        {"liqo", NULL, true},
        {"liqo-storage", NULL, true},
        {"openshift-etcd", NULL, true},
        {"local-path-storage", NULL, true},
        {"calico-system", NULL, true},
        {"my-agent", "my-agent", true},
        {"my-agent", "other", false},
        {"monitoring", NULL, false},
        {"cert-manager", NULL, false},
        {"web", NULL, false},
        {"defaults", NULL, false},
        {"Web", NULL, true},
        {"", NULL, true},
        {"a-", NULL, true},
        {"a0123456789012345678901234567890123456789012345678901234567890123", NULL, true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (nsof_reserved(cases[i].name, cases[i].agent_ns) != cases[i].reserved)
            fail_msg("case %zu (%s): reserved %d", i, cases[i].name, !cases[i].reserved);
}

static void test_home_offloadable(void **state)
{
    static const struct {
        const char *ns, *agent_ns;
        bool tenant;
        int rc;
        const char *msg;
    } cases[] = {
        {"web", "cliqo", false, 0, NULL},
        {"cliqo", "cliqo", false, -EPERM, "namespace cliqo is reserved"},
        {"agents", "agents", false, -EPERM, "namespace agents is reserved"},
        {"kube-system", "cliqo", false, -EPERM, "namespace kube-system is reserved"},
        {"default", NULL, false, -EPERM, "namespace default is reserved"},
        {"peers", "cliqo", true, -EPERM, "namespace peers is a tenant namespace"},
        {"Bad_Name", "cliqo", false, -EINVAL, "not a DNS label"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "";
        int r = nsof_home_offloadable(cases[i].ns, cases[i].agent_ns, cases[i].tenant, err,
                                      sizeof(err));

        if (r != cases[i].rc)
            fail_msg("case %zu: %d (%s)", i, r, err);
        if (cases[i].msg && !strstr(err, cases[i].msg))
            fail_msg("case %zu: '%s' does not contain '%s'", i, err, cases[i].msg);
    }
}

/* The provider's rule: DefaultName shape of this consumer, else the allow list; never reserved. */
static void test_remote_allowed(void **state)
{
    static const char *const id = "11111111-2222-4333-8444-555555555555"; /* hash cf4c47 */
    static const struct {
        const char *local, *remote, *patterns; /* patterns NULL: none */
        int rc;
    } cases[] = {
        {"web", "web-cluster-1-cf4c47", NULL, 0},
        {"web", "web-cf4c47", NULL, 0},
        {"web", "web-anything-cf4c47", NULL, 0},
        /* another consumer's suffix, another namespace's prefix, no suffix */
        {"web", "web-cluster-1-000000", NULL, -EACCES},
        {"web", "db-cluster-1-cf4c47", NULL, -EACCES},
        {"web", "web", NULL, -EACCES},
        {"web", "cf4c47", NULL, -EACCES},
        {"monitoring", "monitoring", NULL, -EACCES},
        {"cert-manager", "cert-manager", "[]", -EACCES},
        /* the allow list */
        {"monitoring", "monitoring", "[\"monitoring\"]", 0},
        {"x", "team-a-x", "[\"team-*\"]", 0},
        {"x", "teamx", "[\"team-*\"]", -EACCES},
        {"x", "anything", "[\"*\"]", 0},
        {"x", "anything", "[5, \"*\"]", 0},
        /* reserved beats everything */
        {"kube-system", "kube-system", "[\"*\"]", -EPERM},
        {"default", "default", "[\"*\"]", -EPERM},
        {"x", "cliqo-tenant-other", "[\"*\"]", -EPERM},
        {"x", "agent-ns", "[\"*\"]", -EPERM},
        {"kube-x", "kube-x-cluster-1-cf4c47", NULL, -EPERM},
        {"x", "Not_A_Label", "[\"*\"]", -EPERM},
        /* a long namespace, cut by nsof_remote_namespace */
        {"a123456789012345678901234567890123456789012345678901234567890",
         "a12345678901234567890123456789012345678-cluster-1-cf4c47", NULL, 0},
        {"a123456789012345678901234567890123456789012345678901234567890",
         "a1234567890123456789012345678901234-cf4c47", NULL, 0},
        {"a123456789012345678901234567890123456789012345678901234567890",
         "a123456789012345678901234567890123-cf4c47", NULL, -EACCES},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *p = cases[i].patterns ? js(cases[i].patterns) : NULL;
        char err[320] = "";
        int r = nsof_remote_allowed(cases[i].local, cases[i].remote, id, p, "agent-ns", err,
                                    sizeof(err));

        if (r != cases[i].rc)
            fail_msg("case %zu (%s -> %s): %d (%s)", i, cases[i].local, cases[i].remote, r, err);
        if (r < 0 && (!err[0] || strchr(err, '\n')))
            fail_msg("case %zu: no one-line reason", i);
        json_decref(p);
    }
    /* Every name nsof_remote_namespace gives has the shape. */
    {
        static const char *const names[] = {"cluster-1", "", "Cluster_One!",
                                            "a-very-long-cluster-name-indeed", NULL};
        static const char *const nss[] = {
            "web", "a", "a123456789012345678901234567890123456789012345678901234567890",
            "abcdefghijklmnopqrstuvwxyzabcdefghi-jklmnop", NULL};

        for (const char *const *n = names; *n; n++)
            for (const char *const *ns = nss; *ns; ns++) {
                char remote[NSOF_NS_MAX + 1];

                assert_int_equal(nsof_remote_namespace(*ns, NSOF_MAP_DEFAULT_NAME, *n, id, remote,
                                                       sizeof(remote)),
                                 0);
                if (!nsof_default_shaped(*ns, remote, id))
                    fail_msg("%s of %s (%s) is not DefaultName-shaped", remote, *ns, *n);
                assert_false(nsof_default_shaped(*ns, remote, "another-id"));
            }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remote_namespace), cmocka_unit_test(test_selector_validate),
        cmocka_unit_test(test_selector_bounds),  cmocka_unit_test(test_selector_match),
        cmocka_unit_test(test_spec_parse),       cmocka_unit_test(test_phase),
        cmocka_unit_test(test_reserved),         cmocka_unit_test(test_home_offloadable),
        cmocka_unit_test(test_remote_allowed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
