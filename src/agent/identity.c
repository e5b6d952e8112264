/* identity: the cluster's identity as the ConfigMap cluster-id of the agent's namespace holds it
 * (keys cluster-id and cluster-name, docs/peering.md). Runs on every replica (the auth endpoint
 * answers /ids on any of them), so its informer handlers are AGENT_INF_ALWAYS. Ready once the
 * informer has synced; a missing ConfigMap is logged (the agent is not installed yet), not fatal.
 *
 * It also keeps the cluster's identity key (peering/idkey.h): the Secret identity-key of the
 * agent's namespace, key tls.key. When the Secrets are synced and it is missing (a new install, or
 * an upgrade from before identity keys), this replica makes one (AlreadyExists: another replica
 * was first, and the informer brings its key). The key is never sent anywhere; its key ID is
 * published by GET /ids and bound by providers to the identities they issue to this cluster, so
 * replacing it makes every provider refuse this cluster's next POST /identity (docs/peering.md).
 */
#include "agent/identity.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "peering/idkey.h"
#include "peering/objects.h"
#include "peering/resources.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#define CONFIGMAP "cluster-id"

#define MOD "identity"

/* The module's state (agent_module_data "identity"). */
struct ident {
    struct agent *a;
    struct inf_informer *inf;
    struct metrics_family *info;
    char id[128], name[128];
    bool warned_missing;
    struct inf_informer *secrets;
    EVP_PKEY *key;
    char key_id[PEER_KEY_ID_LEN + 1];
    bool creating;
};

static void load(struct ident *s, json_t *obj)
{
    json_t *data = json_object_get(obj, "data");
    const char *id = json_string_value(json_object_get(data, "cluster-id"));
    const char *name = json_string_value(json_object_get(data, "cluster-name"));

    if (!id || !*id || strlen(id) >= sizeof(s->id) || (name && strlen(name) >= sizeof(s->name))) {
        log_warn("identity", "ConfigMap %s/%s has no valid cluster-id key, ignoring",
                 agent_namespace(s->a), CONFIGMAP);
        return;
    }
    if (strcmp(s->id, id) == 0 && strcmp(s->name, name ? name : "") == 0)
        return;
    snprintf(s->id, sizeof(s->id), "%s", id);
    snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
    log_info("identity", "cluster identity: cluster-id=%s cluster-name=%s", s->id, s->name);
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
        load(data, obj);
}

static void on_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_add(inf, new_obj, data);
}

static void on_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct ident *s = data;

    (void)inf;
    if (!is_ours(obj))
        return;
    log_warn("identity", "ConfigMap %s/%s was deleted", agent_namespace(s->a), CONFIGMAP);
    s->id[0] = s->name[0] = '\0';
}

static void on_synced(struct inf_informer *inf, void *data)
{
    struct ident *s = data;

    (void)inf;
    if (!s->id[0] && !s->warned_missing) {
        s->warned_missing = true;
        log_warn("identity",
                 "ConfigMap %s/%s not found: the cluster has no identity yet (run "
                 "cliqoctl install)",
                 agent_namespace(s->a), CONFIGMAP);
    }
}

static void collect(struct metrics_registry *r, void *data)
{
    struct ident *s = data;

    const char *labels[] = {s->id, s->name, NULL};

    (void)r;
    metrics_family_reset(s->info);
    if (s->id[0])
        metrics_set(s->info, labels, 1);
}

/* ---- the identity key ------------------------------------------------------------------------ */

static void key_load(struct ident *s, const json_t *obj)
{
    const char *b64 = json_string_value(json_object_get(json_object_get(obj, "data"), "tls.key"));
    unsigned char spki[PEER_WIRE_KEY_MAX];
    char *pem = NULL, key_id[PEER_KEY_ID_LEN + 1], err[128];
    EVP_PKEY *key = NULL;
    size_t len = 0, spki_len = 0;

    if (!b64 || peer_base64_decode(b64, PEER_IDKEY_PEM_MAX, &pem, &len) < 0 ||
        peer_idkey_load(pem, len, &key, err, sizeof(err)) < 0 ||
        peer_idkey_spki(key, spki, sizeof(spki), &spki_len) < 0 ||
        peer_idkey_id(spki, spki_len, key_id) < 0) {
        log_error("identity",
                  "Secret %s/%s holds no usable EC P-256 key in tls.key: this cluster cannot "
                  "prove its identity to providers (delete the Secret to make a new key)",
                  agent_namespace(s->a), PEER_IDENTITY_KEY_SECRET);
        goto out;
    }
    if (s->key && strcmp(s->key_id, key_id) == 0)
        goto out;
    EVP_PKEY_free(s->key);
    s->key = key;
    key = NULL;
    snprintf(s->key_id, sizeof(s->key_id), "%s", key_id);
    log_info("identity", "identity key loaded: key ID %s", s->key_id);
out:
    if (pem)
        OPENSSL_cleanse(pem, len);
    x_free(pem);
    EVP_PKEY_free(key);
}

static void on_key_created(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ident *s = data;

    (void)c;
    s->creating = false;
    if (res->err == -ECANCELED)
        return;
    if (res->err < 0 && res->err != -EEXIST)
        log_error("identity", "cannot create Secret %s/%s: %s", agent_namespace(s->a),
                  PEER_IDENTITY_KEY_SECRET, res->status.message);
    else if (res->err == 0)
        log_info("identity", "made the cluster's identity key (Secret %s/%s)",
                 agent_namespace(s->a), PEER_IDENTITY_KEY_SECRET);
}

/* Makes the key Secret when it is missing (the informer then loads it). */
static void key_ensure(struct ident *s)
{
    json_t *sec, *o = NULL;
    char *pem = NULL;

    if (s->creating || !inf_synced(s->secrets))
        return;
    sec = inf_get(s->secrets, agent_namespace(s->a), PEER_IDENTITY_KEY_SECRET);
    if (sec) {
        json_decref(sec);
        return;
    }
    if (peer_idkey_generate(&pem) < 0) {
        log_error("identity", "cannot generate the identity key");
        return;
    }
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
                  "metadata", "name", PEER_IDENTITY_KEY_SECRET, "namespace", agent_namespace(s->a),
                  "labels", "app.kubernetes.io/managed-by", "cliqo-agent", "type", "Opaque",
                  "stringData", "tls.key", pem);
    if (o && kapi_create(agent_kube(s->a), &kapi_secrets, agent_namespace(s->a), o, on_key_created,
                         s) == 0)
        s->creating = true;
    else
        log_error("identity", "cannot create Secret %s/%s", agent_namespace(s->a),
                  PEER_IDENTITY_KEY_SECRET);
    json_decref(o);
    OPENSSL_cleanse(pem, strlen(pem));
    x_free(pem);
}

static bool is_key(const json_t *obj)
{
    const char *name = kapi_obj_name(obj);

    return name && strcmp(name, PEER_IDENTITY_KEY_SECRET) == 0;
}

static void on_key_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)data;
    if (is_key(obj))
        key_load(data, obj);
}

static void on_key_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_key_add(inf, new_obj, data);
}

static void on_key_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct ident *s = data;

    (void)inf;
    if (!is_key(obj))
        return;
    log_warn("identity",
             "Secret %s/%s was deleted: making a new identity key (providers that bound this "
             "cluster's identity to the old one will refuse it)",
             agent_namespace(s->a), PEER_IDENTITY_KEY_SECRET);
    EVP_PKEY_free(s->key);
    s->key = NULL;
    s->key_id[0] = '\0';
    key_ensure(s);
}

static void on_key_synced(struct inf_informer *inf, void *data)
{
    (void)inf;
    key_ensure(data);
}

static struct ident *state(struct agent *a)
{
    return a ? agent_module_data(a, MOD) : NULL;
}

int identity_init(struct agent *a)
{
    static const char *const labels[] = {"cluster_id", "cluster_name", NULL};
    static const struct inf_handlers h = {on_add, on_update, on_delete, on_synced, NULL};
    static const struct inf_handlers kh = {on_key_add, on_key_update, on_key_delete, on_key_synced,
                                           NULL};
    struct ident *s = x_calloc(1, sizeof(*s));
    int r;

    if (!s)
        return -ENOMEM;
    s->a = a;
    r = agent_set_module_data(a, MOD, s);
    if (r < 0) {
        x_free(s);
        return r;
    }
    r = metrics_family_new(agent_metrics(a), METRICS_GAUGE, "cliqo_cluster_info",
                           "The cluster's identity (ConfigMap cluster-id); always 1.", labels, NULL,
                           0, &s->info);
    if (r == 0)
        r = metrics_add_collector(agent_metrics(a), collect, s);
    if (r == 0)
        r = agent_informer(a, &kapi_configmaps, agent_namespace(a), NULL, AGENT_INF_ALWAYS, &h, s,
                           &s->inf);
    if (r == 0)
        r = agent_informer(a, &kapi_secrets, agent_namespace(a), NULL, AGENT_INF_ALWAYS, &kh, s,
                           &s->secrets);
    return r;
}

void identity_fini(struct agent *a)
{
    struct ident *s = state(a);

    if (!s)
        return;
    EVP_PKEY_free(s->key);
    x_free(s);
    agent_set_module_data(a, MOD, NULL);
}

bool identity_ready(struct agent *a)
{
    struct ident *s = state(a);

    return s && s->inf && inf_synced(s->inf) && s->secrets && inf_synced(s->secrets);
}

const char *identity_cluster_id(struct agent *a)
{
    struct ident *s = state(a);

    return s && s->id[0] ? s->id : NULL;
}

const char *identity_cluster_name(struct agent *a)
{
    struct ident *s = state(a);

    return s && s->id[0] ? s->name : NULL;
}

struct evp_pkey_st *identity_key(struct agent *a)
{
    struct ident *s = state(a);

    return s ? s->key : NULL;
}

const char *identity_key_id(struct agent *a)
{
    struct ident *s = state(a);

    return s && s->key ? s->key_id : NULL;
}
