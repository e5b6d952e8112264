/* identity: the cluster's identity as the ConfigMap cluster-id of the agent's namespace holds it
 * (keys cluster-id and cluster-name, docs/peering.md). Runs on every replica (the auth endpoint
 * answers /ids on any of them), so its informer handlers are AGENT_INF_ALWAYS. Ready once the
 * informer has synced; a missing ConfigMap is logged (the agent is not installed yet), not fatal.
 */
#include "agent/modules.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>

#define CONFIGMAP "cluster-id"

static struct {
    struct agent *a;
    struct inf_informer *inf;
    struct metrics_family *info;
    char id[128], name[128];
    bool warned_missing;
} st;

static void load(json_t *obj)
{
    json_t *data = json_object_get(obj, "data");
    const char *id = json_string_value(json_object_get(data, "cluster-id"));
    const char *name = json_string_value(json_object_get(data, "cluster-name"));

    if (!id || !*id || strlen(id) >= sizeof(st.id) || (name && strlen(name) >= sizeof(st.name))) {
        log_warn("identity", "ConfigMap %s/%s has no valid cluster-id key, ignoring",
                 agent_namespace(st.a), CONFIGMAP);
        return;
    }
    if (strcmp(st.id, id) == 0 && strcmp(st.name, name ? name : "") == 0)
        return;
    snprintf(st.id, sizeof(st.id), "%s", id);
    snprintf(st.name, sizeof(st.name), "%s", name ? name : "");
    log_info("identity", "cluster identity: cluster-id=%s cluster-name=%s", st.id, st.name);
}

static bool is_ours(const json_t *obj)
{
    const char *name = kapi_obj_name(obj);

    return name && strcmp(name, CONFIGMAP) == 0;
}

static void on_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)data;
    if (is_ours(obj))
        load(obj);
}

static void on_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_add(inf, new_obj, data);
}

static void on_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)data;
    if (!is_ours(obj))
        return;
    log_warn("identity", "ConfigMap %s/%s was deleted", agent_namespace(st.a), CONFIGMAP);
    st.id[0] = st.name[0] = '\0';
}

static void on_synced(struct inf_informer *inf, void *data)
{
    (void)inf;
    (void)data;
    if (!st.id[0] && !st.warned_missing) {
        st.warned_missing = true;
        log_warn("identity",
                 "ConfigMap %s/%s not found: the cluster has no identity yet (run "
                 "cliqoctl install)",
                 agent_namespace(st.a), CONFIGMAP);
    }
}

static void collect(struct metrics_registry *r, void *data)
{
    const char *labels[] = {st.id, st.name, NULL};

    (void)r;
    (void)data;
    metrics_family_reset(st.info);
    if (st.id[0])
        metrics_set(st.info, labels, 1);
}

int identity_init(struct agent *a)
{
    static const char *const labels[] = {"cluster_id", "cluster_name", NULL};
    static const struct inf_handlers h = {on_add, on_update, on_delete, on_synced, NULL};
    int r;

    memset(&st, 0, sizeof(st));
    st.a = a;
    r = metrics_family_new(agent_metrics(a), METRICS_GAUGE, "cliqo_cluster_info",
                           "The cluster's identity (ConfigMap cluster-id); always 1.", labels, NULL,
                           0, &st.info);
    if (r == 0)
        r = metrics_add_collector(agent_metrics(a), collect, NULL);
    if (r == 0)
        r = agent_informer(a, &kapi_configmaps, agent_namespace(a), NULL, AGENT_INF_ALWAYS, &h,
                           NULL, &st.inf);
    return r;
}

void identity_fini(struct agent *a)
{
    (void)a;
    st.inf = NULL; /* the agent frees the shared informer */
}

bool identity_ready(struct agent *a)
{
    (void)a;
    return st.inf && inf_synced(st.inf);
}

const char *identity_cluster_id(void)
{
    return st.id[0] ? st.id : NULL;
}

const char *identity_cluster_name(void)
{
    return st.id[0] ? st.name : NULL;
}
