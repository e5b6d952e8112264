#include "kube/discovery.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MAX_VERSIONS 16

struct resolve {
    char *group, *resource;
    char *versions[MAX_VERSIONS];
    int nversions, next;
    kdisc_cb cb;
    void *data;
};

static void resolve_free(struct resolve *rs)
{
    for (int i = 0; i < rs->nversions; i++)
        x_free(rs->versions[i]);
    x_free(rs->group);
    x_free(rs->resource);
    x_free(rs);
}

static void finish(struct kapi_client *c, struct resolve *rs, int err, const char *version,
                   const char *kind, bool namespaced)
{
    rs->cb(c, err, version, kind, namespaced, rs->data);
    resolve_free(rs);
}

static void try_next(struct kapi_client *c, struct resolve *rs);

static void on_version_doc(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct resolve *rs = data;
    const char *version = rs->versions[rs->next - 1];
    json_t *list = json_object_get(res->body, "resources"), *r;
    size_t i;

    if (res->err < 0 && res->err != -ENOENT) {
        finish(c, rs, res->err, NULL, NULL, false);
        return;
    }
    json_array_foreach(list, i, r)
    {
        const char *name = json_string_value(json_object_get(r, "name"));
        if (name && strcmp(name, rs->resource) == 0) {
            finish(c, rs, 0, version, json_string_value(json_object_get(r, "kind")),
                   json_is_true(json_object_get(r, "namespaced")));
            return;
        }
    }
    try_next(c, rs);
}

static void try_next(struct kapi_client *c, struct resolve *rs)
{
    char path[512];
    struct kapi_request req = {.method = "GET", .path = path};
    int r;

    if (rs->next >= rs->nversions) {
        finish(c, rs, -ENOENT, NULL, NULL, false);
        return;
    }
    if (rs->group[0])
        snprintf(path, sizeof(path), "/apis/%s/%s", rs->group, rs->versions[rs->next]);
    else
        snprintf(path, sizeof(path), "/api/%s", rs->versions[rs->next]);
    rs->next++;
    r = kapi_send(c, &req, on_version_doc, rs, NULL);
    if (r < 0)
        finish(c, rs, r, NULL, NULL, false);
}

static int add_version(struct resolve *rs, const char *v)
{
    for (int i = 0; i < rs->nversions; i++)
        if (strcmp(rs->versions[i], v) == 0)
            return 0;
    if (rs->nversions >= MAX_VERSIONS)
        return 0;
    rs->versions[rs->nversions] = x_strdup(v);
    if (!rs->versions[rs->nversions])
        return -ENOMEM;
    rs->nversions++;
    return 0;
}

/* The group document lists what the server offers: keep the preferred ones it has, in order. */
static void on_group_doc(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct resolve *rs = data;
    json_t *versions, *v;
    const char *offered[MAX_VERSIONS];
    int noffered = 0;
    size_t i;

    if (res->err < 0) {
        finish(c, rs, res->err == -ENOENT ? -ENOENT : res->err, NULL, NULL, false);
        return;
    }
    /* Core: {"versions": ["v1"]}; groups: {"versions": [{"version": "v1"}], "preferredVersion":
     * ...} */
    versions = json_object_get(res->body, "versions");
    json_array_foreach(versions, i, v)
    {
        const char *s = json_is_string(v) ? json_string_value(v)
                                          : json_string_value(json_object_get(v, "version"));
        if (s && noffered < MAX_VERSIONS)
            offered[noffered++] = s;
    }
    /* The caller's preference list was stashed as the first entries of rs->versions. */
    int npref = rs->nversions;
    char *pref[MAX_VERSIONS];
    memcpy(pref, rs->versions, sizeof(char *) * (size_t)npref);
    rs->nversions = 0;
    for (int p = 0; p < npref; p++)
        for (int o = 0; o < noffered; o++)
            if (strcmp(pref[p], offered[o]) == 0 && add_version(rs, offered[o]) < 0)
                goto oom;
    if (npref == 0) {
        const char *pv = json_string_value(
            json_object_get(json_object_get(res->body, "preferredVersion"), "version"));
        if (pv && add_version(rs, pv) < 0)
            goto oom;
        for (int o = 0; o < noffered; o++)
            if (add_version(rs, offered[o]) < 0)
                goto oom;
    }
    for (int p = 0; p < npref; p++)
        x_free(pref[p]);
    try_next(c, rs);
    return;
oom:
    for (int p = 0; p < npref; p++)
        x_free(pref[p]);
    finish(c, rs, -ENOMEM, NULL, NULL, false);
}

int kdisc_resolve(struct kapi_client *c, const char *group, const char *resource,
                  const char *const *prefer, kdisc_cb cb, void *data)
{
    struct resolve *rs;
    char path[300];
    struct kapi_request req = {.method = "GET", .path = path};
    int r = -ENOMEM;

    if (!c || !resource || !cb || (group && strlen(group) > 253) || strchr(resource, '/'))
        return -EINVAL;
    if (group && strchr(group, '/'))
        return -EINVAL;
    rs = x_calloc(1, sizeof(*rs));
    if (!rs)
        return -ENOMEM;
    rs->group = x_strdup(group ? group : "");
    rs->resource = x_strdup(resource);
    rs->cb = cb;
    rs->data = data;
    if (!rs->group || !rs->resource)
        goto fail;
    for (int i = 0; prefer && prefer[i] && i < MAX_VERSIONS; i++) {
        rs->versions[i] = x_strdup(prefer[i]);
        if (!rs->versions[i])
            goto fail;
        rs->nversions++;
    }
    if (rs->group[0])
        snprintf(path, sizeof(path), "/apis/%s", rs->group);
    else
        snprintf(path, sizeof(path), "/api");
    r = kapi_send(c, &req, on_group_doc, rs, NULL);
    if (r < 0)
        goto fail;
    return 0;
fail:
    resolve_free(rs);
    return r;
}
