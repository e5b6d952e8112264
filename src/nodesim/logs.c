/* nodesim logs: the deterministic log of a simulated container (nodesim.h, docs/nodesim.md). */
#include "nodesim/nodesim.h"

#include "common/json.h"
#include "common/rfc3339.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int64_t ns_log_count(const struct ns_log_src *s, int64_t now)
{
    if (s->finished >= 0) {
        /* start line, ticks at started+1 .. finished-1, exit line */
        int64_t ticks = s->finished - s->started - 1;

        return 2 + (ticks > 0 ? ticks : 0);
    }
    if (now < s->started)
        return 0;
    return 1 + (now - s->started);
}

int64_t ns_log_time(const struct ns_log_src *s, int64_t k)
{
    if (s->finished >= 0 && k >= ns_log_count(s, 0) - 1)
        return s->finished;
    return s->started + k;
}

int ns_log_line(const struct ns_log_src *s, int64_t k, bool timestamps, char *buf, size_t size)
{
    char ts[NS_TIME_LEN + 16] = "";
    int n;

    if (timestamps) {
        char t[NS_TIME_LEN];

        rfc3339_format(ns_log_time(s, k), 0, 9, t, sizeof(t));
        snprintf(ts, sizeof(ts), "%s ", t);
    }
    if (k == 0)
        n = snprintf(buf, size,
                     "%snodesim: container %s of pod %s/%s started (image %s, restart %d)\n", ts,
                     s->container, s->ns, s->pod, s->image ? s->image : "?", s->restart);
    else if (s->finished >= 0 && k == ns_log_count(s, 0) - 1)
        n = snprintf(buf, size, "%snodesim: container %s exited with code %d\n", ts, s->container,
                     s->exit_code);
    else
        n = snprintf(buf, size, "%snodesim: %s is running, tick %lld\n", ts, s->container,
                     (long long)k);
    return n > 0 && (size_t)n < size ? n : -ENOSPC;
}

int64_t ns_log_first(const struct ns_log_src *s, int64_t now, int64_t since, int64_t tail)
{
    int64_t count = ns_log_count(s, now), first = 0;

    if (since >= 0) {
        /* Line k is at started + k, but the exit line, which is at finished. */
        first = since > s->started ? since - s->started : 0;
        if (s->finished >= 0) {
            if (first >= count - 1)
                first = s->finished >= since ? count - 1 : count;
        } else if (first > count) {
            first = count;
        }
    }
    if (tail >= 0 && count - tail > first)
        first = count - tail;
    return first;
}

static int instance(const json_t *st, bool previous, struct ns_log_src *ret, const char **reason)
{
    const json_t *state = json_object_get(st, previous ? "lastState" : "state");
    const json_t *run = json_object_get(state, "running");
    const json_t *term = json_object_get(state, "terminated");
    const json_t *wait = json_object_get(state, "waiting");
    int64_t t;
    json_int_t restarts = json_integer_value(json_object_get(st, "restartCount"));

    ret->restart = (int)(previous ? restarts - 1 : restarts);
    if (!previous && run) {
        if (rfc3339_parse(jsn_str_at(run, "startedAt", NULL), 0, &t) < 0)
            return -EAGAIN;
        ret->started = t;
        ret->finished = -1;
        return 0;
    }
    if (term) {
        if (rfc3339_parse(jsn_str_at(term, "startedAt", NULL), 0, &t) < 0)
            return -ENOENT;
        ret->started = t;
        if (rfc3339_parse(jsn_str_at(term, "finishedAt", NULL), 0, &t) < 0)
            return -ENOENT;
        ret->finished = t < ret->started ? ret->started : t;
        ret->exit_code = (int)json_integer_value(json_object_get(term, "exitCode"));
        return 0;
    }
    if (previous)
        return -ENOENT;
    *reason = wait ? jsn_str_at(wait, "reason", NULL) : NULL;
    if (!*reason)
        *reason = "ContainerCreating";
    return -EAGAIN;
}

int ns_log_source(const json_t *pod, const char *container, bool previous, struct ns_log_src *ret,
                  const char **ret_reason)
{
    static const char *const kinds[2][2] = {{"spec", "containers"}, {"spec", "initContainers"}};
    static const char *const stats[2] = {"containerStatuses", "initContainerStatuses"};
    const json_t *status = json_object_get(pod, "status");

    for (int k = 0; k < 2; k++) {
        const json_t *list = json_object_get(json_object_get(pod, kinds[k][0]), kinds[k][1]), *c;
        size_t i;

        json_array_foreach(list, i, c)
        {
            const char *name = jsn_str_at(c, "name", NULL);
            const json_t *sts = json_object_get(status, stats[k]), *st;
            size_t j;

            if (!name || strcmp(name, container) != 0)
                continue;
            memset(ret, 0, sizeof(*ret));
            ret->ns = jsn_str_at(pod, "metadata", "namespace", NULL);
            ret->pod = jsn_str_at(pod, "metadata", "name", NULL);
            ret->container = name;
            ret->image = jsn_str_at(c, "image", NULL);
            *ret_reason = NULL;
            json_array_foreach(sts, j, st)
            {
                const char *sn = jsn_str_at(st, "name", NULL);

                if (sn && strcmp(sn, container) == 0)
                    return instance(st, previous, ret, ret_reason);
            }
            if (previous)
                return -ENOENT;
            *ret_reason = "ContainerCreating";
            return -EAGAIN;
        }
    }
    return -ENOENT;
}
