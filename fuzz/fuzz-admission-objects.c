/* libFuzzer harness for src/admission/placement.c and src/admission/objects.c: the provider's
 * checks of what a consumer's credentials write (pods' placement, Services, EndpointSlices,
 * Secrets) and of who writes it (the ServiceAccount user name).
 *
 * The input is one object as JSON (a pod, a Service, a slice, a Secret: every check reads it), or,
 * when it is not JSON, a user name. Invariants:
 *   - every check returns 0 or -EPERM, and -EPERM comes with a non-empty one-line message;
 *   - a pod the placement check admits under the empty placement has no nodeName, no runtime or
 *     priority class, and only the tolerations every pod may carry; everything admitted under the
 *     empty placement is admitted under the permissive one;
 *   - a user name is split into a namespace shorter than the buffer, or refused.
 * A violated invariant aborts, which libFuzzer reports as a crash. */
#include "../src/admission/objects.c"
#include "../src/admission/placement.c"

#include "common/json.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void verdict(int r, const char *msg)
{
    check(r == 0 || r == -EPERM);
    check(r == 0 || (msg[0] && !strchr(msg, '\n')));
}

static bool ip_odd(const char *ip, void *data)
{
    (void)data;
    return strlen(ip) % 2 == 1;
}

static void check_pod(const json_t *pod, const json_t *none, const json_t *all)
{
    const json_t *spec = json_object_get(pod, "spec"), *tols = json_object_get(spec, "tolerations");
    char msg[ADM_MESSAGE_MAX + 1] = "";
    int r = adm_placement_check(pod, none, msg, sizeof(msg));
    const char *s;

    verdict(r, msg);
    if (r != 0)
        return;
    check(!(s = jsn_str(spec, "nodeName")) || !*s);
    check(!(s = jsn_str(spec, "runtimeClassName")) || !*s);
    check(!(s = jsn_str(spec, "priorityClassName")) || !*s);
    for (size_t i = 0; i < json_array_size(tols); i++) {
        s = jsn_str(json_array_get(tols, i), "key");
        check(s && standard_toleration(s));
    }
    msg[0] = '\0';
    check(adm_placement_check(pod, all, msg, sizeof(msg)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *none, *all;
    static struct cidr c;
    char msg[ADM_MESSAGE_MAX + 1] = "", ns[64], user[ADM_USER_MAX + 1];
    json_t *obj;

    if (!none) {
        none = json_object();
        all = json_pack("{s:b,s:[s],s:[s],s:[s]}", "allowNodeNames", 1, "allowedTolerations", "*",
                        "allowedPriorityClasses", "high", "allowedRuntimeClasses", "kata");
        if (!none || !all || cidr_parse("10.70.0.0/16", &c) < 0)
            abort();
    }
    obj = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!obj) {
        if (size < sizeof(user)) {
            memcpy(user, data, size);
            user[size] = '\0';
            if (adm_objects_sa_namespace(user, ns, sizeof(ns)) == 0)
                check(strlen(ns) > 0 && strlen(ns) < sizeof(ns) && !strchr(ns, ':'));
        }
        return 0;
    }
    check_pod(obj, none, all);
    msg[0] = '\0';
    verdict(adm_objects_service_check(obj, msg, sizeof(msg)), msg);
    msg[0] = '\0';
    verdict(adm_objects_slice_check(obj, "ns", &c, 1, ip_odd, NULL, msg, sizeof(msg)), msg);
    msg[0] = '\0';
    verdict(adm_objects_secret_check(obj, msg, sizeof(msg)), msg);
    json_decref(obj);
    return 0;
}
