/* libFuzzer harness for src/admission/podsec.c (the Pod Security Standards checked on a pod, and a
 * consumer's level read from a ClusterConfig): the provider's webhook runs it on every pod a
 * consumer's virtual kubelet creates, so the pod is hostile.
 *
 * The input is JSON text, read as a pod and as a ClusterConfig. Invariants:
 *   - privileged admits everything that is an object; a non-object is -EINVAL at every level;
 *   - otherwise the answer is 0 or -EACCES, and a refusal is one non-empty line that starts with
 *     `violates PodSecurity "<level>:latest": ` and fits the buffer;
 *   - restricted refuses every pod baseline refuses;
 *   - a buffer too small gets the same answer, cut and ending in "...";
 *   - the level read from the input as a ClusterConfig is one of the three.
 * A violated invariant aborts, which libFuzzer reports as a crash. */
#include "../src/admission/podsec.c"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void check_message(enum adm_podsec_level level, const char *msg, size_t len)
{
    char prefix[64];

    snprintf(prefix, sizeof(prefix),
             "violates PodSecurity \"%s:latest\": ", adm_podsec_level_name(level));
    check(strlen(msg) < len);
    check(!strchr(msg, '\n') && !strchr(msg, '\r'));
    check(strncmp(msg, prefix, strlen(prefix)) == 0 || strlen(msg) == len - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *pod =
        json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    char msg[ADM_MESSAGE_MAX + 1], small[24];
    int base, restr, r;
    enum adm_podsec_level l;

    if (!pod)
        return 0;
    if (!json_is_object(pod)) {
        for (int i = 0; i <= ADM_PODSEC_RESTRICTED; i++)
            check(adm_podsec_check((enum adm_podsec_level)i, pod, msg, sizeof(msg)) == -EINVAL);
        json_decref(pod);
        return 0;
    }
    check(adm_podsec_check(ADM_PODSEC_PRIVILEGED, pod, msg, sizeof(msg)) == 0);
    base = adm_podsec_check(ADM_PODSEC_BASELINE, pod, msg, sizeof(msg));
    check(base == 0 || base == -EACCES);
    if (base)
        check_message(ADM_PODSEC_BASELINE, msg, sizeof(msg));
    restr = adm_podsec_check(ADM_PODSEC_RESTRICTED, pod, msg, sizeof(msg));
    check(restr == 0 || restr == -EACCES);
    check(!base || restr);
    if (restr) {
        check_message(ADM_PODSEC_RESTRICTED, msg, sizeof(msg));
        r = adm_podsec_check(ADM_PODSEC_RESTRICTED, pod, small, sizeof(small));
        check(r == restr);
        check(strlen(small) == sizeof(small) - 1 && strcmp(small + sizeof(small) - 4, "...") == 0);
    }
    l = adm_podsec_level_for(pod, "a", NULL);
    check(l == ADM_PODSEC_PRIVILEGED || l == ADM_PODSEC_BASELINE || l == ADM_PODSEC_RESTRICTED);
    json_decref(pod);
    return 0;
}
