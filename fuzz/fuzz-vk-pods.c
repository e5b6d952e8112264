/* libFuzzer harness for src/offloading/podxlate.c (and mapxlate.c's reading of a NamespaceMap
 * status): what a virtual kubelet reads from the provider, remote pods, remote Events and the
 * NamespaceMap's currentMapping, all hostile.
 *
 * The input is JSON (anything else is skipped). It is read as a remote pod (after the informer's
 * transform), as a remote Event, as a home pod and as a currentMapping. Invariants:
 *   - the home status built from any remote pod is bounded (messages, reasons, counts), names only
 *     the home pod's containers, shows containerIDs prefixed cliqo://, a known phase and valid
 *     addresses; writing its patch to the home pod and asking again gives no patch (a status
 *     written once is not written again);
 *   - a forwarded Event is about the home pod, named within 253 characters, with a count in
 *     1..1,000,000, a bounded message and RFC 3339 timestamps; the same input names the same
 *     Event;
 *   - a remote pod translated from any home pod carries our origin and the home UID, no nodeName,
 *     no service account and automountServiceAccountToken false;
 *   - the NamespaceMap's answer is believed (Accepted) only for the remote name asked for, and the
 *     conditions made of it are bounded.
 * A violated invariant aborts, which libFuzzer reports as a crash. */
#include "../src/offloading/podxlate.c"

#include <stdlib.h>

#include "virtualkubelet/mapxlate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOME_ID "aaaaaaaa-1111-4111-8111-111111111111"

static void check(bool ok)
{
    if (!ok)
        abort();
}

static int xlate(void *d, const char *ip, char *out, size_t size)
{
    (void)d;
    if (strncmp(ip, "10.", 3) != 0)
        return -EINVAL;
    snprintf(out, size, "11.%s", ip + 3);
    return 0;
}

static bool bounded(const json_t *o, const char *k, size_t max)
{
    const json_t *v = json_object_get(o, k);

    return !v || (json_is_string(v) && strlen(json_string_value(v)) <= max);
}

static void check_statuses(const json_t *list, const json_t *home_containers)
{
    size_t i;
    const json_t *c;

    check(json_array_size(list) <= VKP_MAX_CONTAINERS);
    json_array_foreach(list, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "containerID"));

        check(has_container(home_containers, json_string_value(json_object_get(c, "name"))));
        check(!id || strncmp(id, VKP_CONTAINER_ID_PREFIX, strlen(VKP_CONTAINER_ID_PREFIX)) == 0);
        check(json_integer_value(json_object_get(c, "restartCount")) >= 0);
        check(bounded(json_object_get(json_object_get(c, "state"), "waiting"), "message",
                      VKP_MAX_MESSAGE));
    }
}

static void apply_patch(json_t *status, const json_t *patch)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)patch, k, v)
    {
        if (json_is_null(v))
            json_object_del(status, k);
        else
            json_object_set(status, k, v);
    }
}

static void status_from(const json_t *remote_in)
{
    static const char *const phases[] = {"Pending", "Running", "Succeeded",
                                         "Failed",  "Unknown", NULL};
    json_t *home = json_loads("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\"},"
                              "\"spec\":{\"containers\":[{\"name\":\"c\"},{\"name\":\"d\"}],"
                              "\"initContainers\":[{\"name\":\"i\"}]},\"status\":{}}",
                              0, NULL);
    json_t *remote = json_deep_copy(remote_in), *st, *patch, *again;
    struct vkp_status_ctx ctx = {"192.0.2.1", xlate, NULL, true, NULL, "2024-01-01T00:00:00Z"};
    size_t i;
    const json_t *c;

    if (!home || !remote)
        goto out;
    vkp_remote_transform(remote);
    for (int reach = 0; reach < 2; reach++) {
        ctx.reachable = reach;
        st = vkp_home_status(home, remote, &ctx);
        check(st != NULL);
        check(one_of(json_string_value(json_object_get(st, "phase")), phases));
        check(bounded(st, "message", VKP_MAX_MESSAGE) && bounded(st, "reason", VKP_MAX_REASON));
        check(json_array_size(json_object_get(st, "conditions")) <= VKP_MAX_CONDITIONS + 1);
        json_array_foreach(json_object_get(st, "conditions"), i, c)
        {
            check(bounded(c, "message", VKP_MAX_MESSAGE) && bounded(c, "reason", VKP_MAX_REASON));
        }
        check(!json_object_get(st, "podIP") ||
              ip_ok(json_string_value(json_object_get(st, "podIP"))));
        check(json_array_size(json_object_get(st, "podIPs")) <= 2);
        check_statuses(json_object_get(st, "containerStatuses"),
                       json_object_get(json_object_get(home, "spec"), "containers"));
        check_statuses(json_object_get(st, "initContainerStatuses"),
                       json_object_get(json_object_get(home, "spec"), "initContainers"));
        patch = vkp_status_patch(home, st);
        if (patch) {
            apply_patch(json_object_get(home, "status"), patch);
            again = vkp_status_patch(home, st);
            check(again == NULL);
        }
        json_decref(patch);
        json_decref(st);
    }
    (void)vkp_classify(home, remote, HOME_ID);
    patch = vkp_remote_update(home, remote, &(struct vkp_ids){HOME_ID, "peer"});
    check(!patch || json_is_object(patch));
    json_decref(patch);
out:
    json_decref(home);
    json_decref(remote);
}

static void event_from(const json_t *ev_in)
{
    json_t *home =
        json_pack("{s:{s:s,s:s,s:s}}", "metadata", "name", "p", "namespace", "n", "uid", "u");
    json_t *ev = json_deep_copy(ev_in), *out, *out2;
    char name[VKP_EVENT_NAME_MAX + 1], name2[VKP_EVENT_NAME_MAX + 1], t[32];
    json_int_t count;

    if (!home || !ev)
        goto out;
    vkp_event_transform(ev);
    out = vkp_home_event(ev, home, "remote-uid", "peer", name);
    if (out) {
        check(strlen(name) <= VKP_EVENT_NAME_MAX);
        check(strcmp(json_string_value(
                         json_object_get(json_object_get(out, "involvedObject"), "name")),
                     "p") == 0);
        count = json_integer_value(json_object_get(out, "count"));
        check(count >= 1 && count <= 1000000);
        check(bounded(out, "message", VKP_MAX_MESSAGE) && bounded(out, "reason", VKP_MAX_REASON));
        check(vkp_rfc3339_seconds(json_string_value(json_object_get(out, "lastTimestamp")), t,
                                  sizeof(t)));
        check(vkp_rfc3339_seconds(json_string_value(json_object_get(out, "firstTimestamp")), t,
                                  sizeof(t)));
        out2 = vkp_home_event(ev, home, "remote-uid", "peer", name2);
        check(out2 && strcmp(name, name2) == 0);
        json_decref(out2);
    }
    json_decref(out);
out:
    json_decref(home);
    json_decref(ev);
}

static void remote_from_home(const json_t *home)
{
    struct vkp_ids ids = {HOME_ID, "peer"};
    json_t *pod = NULL;
    char err[256];

    if (vkp_remote_pod(home, "remote-ns", &ids, &pod, err, sizeof(err)) != 0) {
        check(err[0] != '\0');
        return;
    }
    check(strcmp(json_string_value(json_object_get(
                     json_object_get(json_object_get(pod, "metadata"), "labels"), VK_LABEL_ORIGIN)),
                 HOME_ID) == 0);
    check(!json_object_get(json_object_get(pod, "spec"), "nodeName"));
    check(!json_object_get(json_object_get(pod, "spec"), "serviceAccountName"));
    check(json_is_false(
        json_object_get(json_object_get(pod, "spec"), "automountServiceAccountToken")));
    check(vkp_classify(home, pod, HOME_ID) == VKP_OURS);
    json_decref(pod);
}

static void mapping_from(const json_t *current)
{
    const char *reason = NULL, *msg = NULL;
    enum vkm_phase ph = vkm_entry(current, "web", "web-r", &reason, &msg);
    json_t *conds;

    check(!reason || strlen(reason) <= VKM_MAX_REASON);
    check(!msg || strlen(msg) <= VKM_MAX_MESSAGE);
    if (ph == VKM_ACCEPTED)
        check(strcmp(json_string_value(
                         json_object_get(json_object_get(current, "web"), "remoteNamespace")),
                     "web-r") == 0);
    conds = vkm_conditions(true, ph, "web-r", reason, msg, NULL, "2024-01-01T00:00:00Z");
    check(json_array_size(conds) == 2);
    json_decref(conds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);

    if (!j)
        return 0;
    status_from(j);
    event_from(j);
    if (json_is_object(j))
        remote_from_home(j);
    mapping_from(j);
    json_decref(j);
    return 0;
}
