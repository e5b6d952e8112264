/* libFuzzer harness for src/offloading/nsof.c: NamespaceOffloading specs and cluster selectors
 * written by users, and the remote namespace name.
 *
 * The input is JSON (anything else is skipped). It is read as a NamespaceOffloading, as a bare
 * clusterSelector and as a node's labels. Invariants:
 *   - nsof_spec_parse either refuses with a non-empty one-line reason or gives known strategies,
 *     and its selector (when set) validates;
 *   - a selector that fails validation matches no node;
 *   - with no selector only nodes labelled liqo.io/type=virtual-node match;
 *   - every string member of the input that is accepted as a namespace gives a remote name that
 *     is a DNS label of at most 63 characters, the same on a second call; EnforceSameName gives the
 *     namespace itself.
 * A violated invariant aborts, which libFuzzer reports as a crash. */
#include "../src/offloading/nsof.c"

#include "kube/names.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void names(const char *ns)
{
    char a[NSOF_NS_MAX + 1], b[NSOF_NS_MAX + 1];

    if (nsof_remote_namespace(ns, NSOF_MAP_DEFAULT_NAME, ns, "home-id", a, sizeof(a)) != 0) {
        check(nsof_remote_namespace(ns, NSOF_MAP_ENFORCE_SAME_NAME, NULL, "x", a, sizeof(a)) != 0);
        return;
    }
    check(kname_dns_label(a) && strlen(a) <= NSOF_NS_MAX);
    check(nsof_remote_namespace(ns, NSOF_MAP_DEFAULT_NAME, ns, "home-id", b, sizeof(b)) == 0);
    check(strcmp(a, b) == 0);
    check(nsof_remote_namespace(ns, NSOF_MAP_ENFORCE_SAME_NAME, NULL, "x", b, sizeof(b)) == 0);
    check(strcmp(b, ns) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    struct nsof_spec s;
    char err[256];
    const char *k;
    json_t *v;
    const json_t *labels;
    bool virt;

    if (!j)
        return 0;
    err[0] = '\0';
    if (nsof_spec_parse(j, &s, err, sizeof(err)) == 0) {
        check(s.mapping == NSOF_MAP_DEFAULT_NAME || s.mapping == NSOF_MAP_ENFORCE_SAME_NAME);
        check(s.pods <= NSOF_PODS_REMOTE);
        check(!s.selector || nsof_selector_validate(s.selector, err, sizeof(err)) == 0);
    } else {
        check(err[0] != '\0' && !strchr(err, '\n'));
    }
    labels = json_is_object(j) ? j : NULL;
    virt =
        labels && json_is_string(json_object_get(labels, NSOF_VNODE_LABEL)) &&
        strcmp(json_string_value(json_object_get(labels, NSOF_VNODE_LABEL)), NSOF_VNODE_VALUE) == 0;
    check(nsof_selector_match(NULL, "n", labels) == virt);
    if (nsof_selector_validate(j, err, sizeof(err)) != 0)
        check(!nsof_selector_match(j, "n", labels));
    else
        (void)nsof_selector_match(j, "liqo-x", labels);
    if (json_is_object(j))
        json_object_foreach(j, k, v)
        {
            names(k);
            if (json_is_string(v))
                names(json_string_value(v));
        }
    else if (json_is_string(j))
        names(json_string_value(j));
    json_decref(j);
    return 0;
}
