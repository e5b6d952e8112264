/* Unit tests of the agent's shutdown contract (src/agent/agent.c, "Requests still in flight
 * complete now, as cancelled, while the modules that issued them still exist") for the credential
 * issuance of the auth module (src/peering/controllers/auth.c), which waits for the token
 * controller on a timer, not only on requests. The agent runs with a few real modules against a
 * fake API server (src/httpd, plain HTTP on loopback) that never fills the ServiceAccount token, so
 * that an issuance is still waiting when the agent shuts down:
 *  - with a stand-in module that asks for a credential and frees its state in fini (as the
 *    broadcaster does): its callback runs exactly once, with -ECANCELED, before its fini; once
 *    the auth module stopped, no new issuance is accepted (-ESHUTDOWN);
 *  - with the real broadcaster (e2e.peering.peer-down aborted with a heap-use-after-free: the
 *    broadcaster's fini freed the consumer whose virtual-kubelet credential was being issued, and
 *    the auth module's fini then ran the callback, which logged the consumer's ID): the agent
 *    shuts down cleanly (ASan checks that nothing is used after its free), both with the issuance
 *    sleeping between two polls of the token and with its poll in flight;
 *  - with the real outgoing controller, whose POST /identity to a peer's auth endpoint runs on a
 *    client of its own (not one the agent aborts): the request is cancelled when the module stops,
 *    so its callback (which writes the ForeignCluster's AuthenticationStatus) never runs after the
 *    module's fini, even when the peer answers later. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/kubeconfig.h"
#include "advertisement/advertisement.h"
#include "agent/agent-internal.h"
#include "agent/ctl.h"
#include "agent/identity.h"
#include "agent/peers.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "httpd/httpd.h"
#include "peering/controllers/controllers.h"
#include "peering/idkey.h"
#include "peering/objects.h"

#define PROVIDER_ID "5f0c2d7e-9a41-4b6e-8d3c-2a7b9e1f4c60"
#define CONSUMER_ID "0b6a1c2e-5d3f-4a8b-9c7d-1e2f3a4b5c6d"
#define TENANT      "cliqo-tenant-consumer-0b6a1c" /* the consumer's tenant namespace here */
#define REMOTE_NS   "cliqo-tenant-provider-5f0c2d" /* ours on the consumer */
#define TOKEN_PATH  "/api/v1/namespaces/" TENANT "/secrets/vk-" CONSUMER_ID "-token"
#define PEER_TOKEN  "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define MAX_HELD    64

/* ---- the fake API server ------------------------------------------------------------------- */

struct collection {
    const char *path;
    const char *kind;
    json_t *(*items)(void);
};

static struct {
    uv_loop_t loop;
    struct httpd_server *h;
    char server[64];
    struct httpd_request *held[MAX_HELD]; /* watches, and token reads when hold_token */
    bool hold_token;
    int token_gets, creates;
    bool token_created;             /* the token Secret: not found until it is created */
    int identity_posts;             /* POST /identity (the fake is the peer's auth endpoint too) */
    struct httpd_request *identity; /* the one held */
    char patches[2][256];           /* PATCH of the tenant namespace: the first bodies */
    int npatches;
} api;

static void respond_json(struct httpd_request *req, unsigned status, json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);

    httpd_respond(req, status, "application/json", s, strlen(s));
    free(s);
    json_decref(o);
}

static void on_held_abort(struct httpd_request *req, void *data)
{
    (void)data;
    for (int i = 0; i < MAX_HELD; i++)
        if (api.held[i] == req)
            api.held[i] = NULL;
}

/* Never answered: the client sees a request in flight until it gives up or the server closes. */
static void hold(struct httpd_request *req)
{
    for (int i = 0; i < MAX_HELD; i++) {
        if (!api.held[i]) {
            api.held[i] = req;
            httpd_req_on_abort(req, on_held_abort, NULL);
            return;
        }
    }
    fail_msg("more than %d held requests", MAX_HELD);
}

static json_t *no_items(void)
{
    return json_array();
}

static json_t *cluster_id_configmap(void)
{
    return json_pack("[{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s,s:s}}]", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", "cluster-id", "namespace", "cliqo",
                     "resourceVersion", "2", "data", "cluster-id", PROVIDER_ID, "cluster-name",
                     "provider");
}

static json_t *cluster_config(void)
{
    return json_pack("[{s:s,s:s,s:{s:s,s:s},s:{}}]", "apiVersion", "config.liqo.io/v1alpha1",
                     "kind", "ClusterConfig", "metadata", "name", "configuration",
                     "resourceVersion", "3", "spec");
}

/* The consumer's admitted PeeringRequest: the broadcaster shares with it. */
static json_t *peering_request(void)
{
    return json_pack("[{s:s,s:s,s:{s:s,s:s,s:s},s:{s:{s:s,s:s},s:s},s:{s:s}}]", "apiVersion",
                     "discovery.liqo.io/v1alpha1", "kind", "PeeringRequest", "metadata", "name",
                     CONSUMER_ID, "namespace", TENANT, "resourceVersion", "5", "spec",
                     "clusterIdentity", "clusterID", CONSUMER_ID, "clusterName", "consumer",
                     "namespace", REMOTE_NS, "status", "phase", "Accepted");
}

/* A ForeignCluster we peer with (finalizer on, no identity yet): the outgoing controller asks the
 * peer's auth endpoint (this fake server too) for one. */
static json_t *foreign_cluster(void)
{
    return json_pack("[{s:s,s:s,s:{s:s,s:s,s:[s]},s:{s:{s:s,s:s},s:s,s:s,s:b}}]", "apiVersion",
                     "discovery.liqo.io/v1alpha1", "kind", "ForeignCluster", "metadata", "name",
                     "consumer", "resourceVersion", "7", "finalizers", "cliqo.io/peering", "spec",
                     "clusterIdentity", "clusterID", CONSUMER_ID, "clusterName", "consumer",
                     "outgoingPeeringEnabled", "Yes", "foreignAuthUrl", api.server,
                     "insecureSkipTLSVerify", 1);
}

/* The peer's token, as cliqoctl add stores it. */
static json_t *remote_auth_secret(void)
{
    char b64[128];

    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)PEER_TOKEN,
                    (int)strlen(PEER_TOKEN));
    return json_pack("[{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s}}]", "apiVersion", "v1", "kind", "Secret",
                     "metadata", "name", "remote-auth-" CONSUMER_ID, "namespace", "cliqo",
                     "resourceVersion", "8", "data", "token", b64);
}

static bool with_fc;

/* The cluster's identity key (the identity module loads it; the outgoing controller signs its
 * POST /identity with it). */
static json_t *identity_key_secret(void)
{
    char *pem = NULL, *b64 = NULL;
    json_t *o;

    assert_int_equal(peer_idkey_generate(&pem), 0);
    assert_int_equal(peer_base64_encode(pem, strlen(pem), &b64), 0);
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
                  "metadata", "name", "identity-key", "namespace", "cliqo", "resourceVersion", "9",
                  "data", "tls.key", b64);
    x_free(pem);
    x_free(b64);
    return o;
}

static json_t *secrets(void)
{
    json_t *a = with_fc ? remote_auth_secret() : json_array();

    json_array_append_new(a, identity_key_secret());
    return a;
}

static json_t *foreign_clusters(void)
{
    return with_fc ? foreign_cluster() : json_array();
}

static const struct collection collections[] = {
    {"/api/v1/namespaces/cliqo/configmaps", "ConfigMapList", cluster_id_configmap},
    {"/api/v1/namespaces/cliqo/secrets", "SecretList", secrets},
    {"/api/v1/nodes", "NodeList", no_items},
    {"/api/v1/namespaces", "NamespaceList", no_items}, /* the outgoing controller's tenants */
    {"/api/v1/pods", "PodList", no_items},
    {"/apis/discovery.liqo.io/v1alpha1/peeringrequests", "PeeringRequestList", peering_request},
    {"/apis/discovery.liqo.io/v1alpha1/foreignclusters", "ForeignClusterList", foreign_clusters},
    {"/apis/config.liqo.io/v1alpha1/clusterconfigs", "ClusterConfigList", cluster_config},
    /* on the consumer (the requester credential points here too) */
    {"/apis/sharing.liqo.io/v1alpha1/namespaces/" REMOTE_NS "/advertisements", "AdvertisementList",
     no_items},
};

static void on_collection(struct httpd_request *req, void *data)
{
    const struct collection *c = data;

    if (httpd_req_query(req, "watch")) {
        hold(req);
        return;
    }
    respond_json(req, 200,
                 json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "v1", "kind", c->kind, "metadata",
                           "resourceVersion", "10", "items", c->items()));
}

static void on_version(struct httpd_request *req, void *data)
{
    (void)data;
    respond_json(req, 200,
                 json_pack("{s:s,s:s,s:s}", "major", "1", "minor", "20", "gitVersion", "v1.20.2"));
}

/* The tenant namespace exists and belongs to the consumer. */
static void on_tenant(struct httpd_request *req, void *data)
{
    (void)data;
    respond_json(req, 200,
                 json_pack("{s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "v1", "kind", "Namespace",
                           "metadata", "name", TENANT, "labels", "discovery.liqo.io/cluster-id",
                           CONSUMER_ID));
}

/* ServiceAccount, RoleBindings, token Secret: created (the answer echoes the object). */
static void on_create(struct httpd_request *req, void *data)
{
    size_t len;
    const char *body = httpd_req_body(req, &len);
    json_t *o = json_loadb(body, len, 0, NULL);

    (void)data;
    api.creates++;
    if (o && json_is_string(json_object_get(o, "kind")) &&
        strcmp(json_string_value(json_object_get(o, "kind")), "Secret") == 0)
        api.token_created = true;
    respond_json(req, 201, o ? o : json_object());
}

/* The tenant namespace's ResourceQuota, counted by kube-controller-manager. */
static void on_quota(struct httpd_request *req, void *data)
{
    json_t *hard = json_pack("{s:s}", "count/secrets", "64");

    (void)data;
    respond_json(req, 200,
                 json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:O},s:{s:O,s:{s:s}}}", "apiVersion", "v1",
                           "kind", "ResourceQuota", "metadata", "name", "cliqo-tenant-objects",
                           "namespace", TENANT, "spec", "hard", hard, "status", "hard", hard,
                           "used", "count/secrets", "1"));
    json_decref(hard);
}

/* Not found until created (the issuance looks before it creates); then the token controller
 * never fills the token. */
static void on_token(struct httpd_request *req, void *data)
{
    (void)data;
    if (!api.token_created) {
        httpd_respond_error(req, 404, "NotFound", "secrets \"vk-" CONSUMER_ID "-token\" not found");
        return;
    }
    api.token_gets++;
    if (api.hold_token) {
        hold(req);
        return;
    }
    respond_json(req, 200,
                 json_pack("{s:s,s:s,s:{s:s,s:s},s:s}", "apiVersion", "v1", "kind", "Secret",
                           "metadata", "name", "vk-" CONSUMER_ID "-token", "namespace", TENANT,
                           "type", "kubernetes.io/service-account-token"));
}

/* A merge patch of the tenant namespace: its body kept, the namespace answered. */
static void on_patch(struct httpd_request *req, void *data)
{
    size_t len;
    const char *body = httpd_req_body(req, &len);

    if (api.npatches < 2)
        snprintf(api.patches[api.npatches], sizeof(api.patches[0]), "%.*s", (int)len, body);
    api.npatches++;
    on_tenant(req, data);
}

static void on_identity_abort(struct httpd_request *req, void *data)
{
    (void)req, (void)data;
    api.identity = NULL;
}

/* The peer's auth endpoint takes its time: answered by the test (or never). */
static void on_identity(struct httpd_request *req, void *data)
{
    (void)data;
    api.identity_posts++;
    if (api.identity) {
        httpd_respond_error(req, 429, "RateLimited", "one at a time");
        return;
    }
    api.identity = req;
    httpd_req_on_abort(req, on_identity_abort, NULL);
}

static void fake_start(bool hold_token)
{
    struct httpd_options ho = {.addr = "127.0.0.1:0",
                               .handler_timeout_ms = 600000,
                               .connection_limit = 256,
                               .per_ip_connection_limit = 256};
    char err[128];

    memset(&api, 0, sizeof(api));
    api.hold_token = hold_token;
    assert_int_equal(uv_loop_init(&api.loop), 0);
    assert_int_equal(httpd_new(&api.loop, &ho, &api.h), 0);
    for (size_t i = 0; i < sizeof(collections) / sizeof(collections[0]); i++)
        assert_int_equal(httpd_route(api.h, "GET", collections[i].path, 0, on_collection,
                                     (void *)&collections[i]),
                         0);
    assert_int_equal(httpd_route(api.h, "GET", "/version", 0, on_version, NULL), 0);
    assert_int_equal(httpd_route(api.h, "GET", "/api/v1/namespaces/" TENANT, 0, on_tenant, NULL),
                     0);
    assert_int_equal(
        httpd_route(api.h, "PATCH", "/api/v1/namespaces/" TENANT, 65536, on_patch, NULL), 0);
    assert_int_equal(httpd_route(api.h, "POST", "/api/v1/namespaces/" TENANT "/serviceaccounts",
                                 65536, on_create, NULL),
                     0);
    assert_int_equal(
        httpd_route(api.h, "POST", "/api/v1/namespaces/" TENANT "/secrets", 65536, on_create, NULL),
        0);
    assert_int_equal(httpd_route(api.h, "POST",
                                 "/apis/rbac.authorization.k8s.io/v1/namespaces/" TENANT
                                 "/rolebindings",
                                 65536, on_create, NULL),
                     0);
    assert_int_equal(httpd_route(api.h, "POST", "/api/v1/namespaces/" TENANT "/resourcequotas",
                                 65536, on_create, NULL),
                     0);
    assert_int_equal(httpd_route(api.h, "GET",
                                 "/api/v1/namespaces/" TENANT
                                 "/resourcequotas/cliqo-tenant-objects",
                                 0, on_quota, NULL),
                     0);
    assert_int_equal(httpd_route(api.h, "GET", TOKEN_PATH, 0, on_token, NULL), 0);
    assert_int_equal(httpd_route(api.h, "POST", "/identity", 65536, on_identity, NULL), 0);
    assert_int_equal(httpd_start(api.h, err, sizeof(err)), 0);
    snprintf(api.server, sizeof(api.server), "http://127.0.0.1:%u", httpd_port(api.h));
}

/* ---- the agent ------------------------------------------------------------------------------ */

static char kc_dir[64], kc_path[128];

static void kubeconfig_json(char *buf, size_t size, const char *ns)
{
    snprintf(buf, size,
             "{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"current-context\":\"c\","
             "\"clusters\":[{\"name\":\"x\",\"cluster\":{\"server\":\"%s\"}}],"
             "\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"t\"}}],"
             "\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"x\",\"user\":\"u\","
             "\"namespace\":\"%s\"}}]}",
             api.server, ns);
}

static void write_kubeconfig(void)
{
    char text[1024];
    FILE *f;

    snprintf(kc_dir, sizeof(kc_dir), "/tmp/test-agent-shutdown-XXXXXX");
    assert_non_null(mkdtemp(kc_dir));
    snprintf(kc_path, sizeof(kc_path), "%s/kubeconfig", kc_dir);
    kubeconfig_json(text, sizeof(text), "cliqo");
    f = fopen(kc_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void config(struct agent_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->kubeconfig = kc_path;
    cfg->namespace_ = "cliqo";
    cfg->http_addr = "127.0.0.1:0";
    cfg->auth_addr = "127.0.0.1:0";
    cfg->kubelet_addr = "127.0.0.1:10250";
    cfg->kubelet_port = 10250;
    cfg->webhook_addr = "127.0.0.1:0";
    snprintf(cfg->identity, sizeof(cfg->identity), "test-agent");
    cfg->leader_elect = false; /* the modules start at once */
    cfg->lease_name = "cliqo-agent";
    cfg->shutdown_timeout_ms = 20000;
    cfg->log_level = LOG_LEVEL_WARN;
}

/* The first module of the tables below, so the last one finished: the agent's shutdown is over. */
static bool finished;

static void sentinel_fini(struct agent *a)
{
    (void)a;
    finished = true;
}

#define SENTINEL_MODULE                                                                            \
    {                                                                                              \
        "sentinel", NULL, NULL, NULL, sentinel_fini, NULL                                          \
    }

/* Runs the loop until *flag, or *count >= min, or the deadline; returns whether it got there. */
static bool run_until(const bool *flag, const int *count, int min, uint64_t ms)
{
    uint64_t deadline = uv_hrtime() + ms * 1000000ull;

    while (!(flag && *flag) && !(count && *count >= min) && uv_hrtime() < deadline) {
        uv_run(&api.loop, UV_RUN_NOWAIT);
        uv_sleep(1);
    }
    return (flag && *flag) || (count && *count >= min);
}

static void run_for(uint64_t ms)
{
    uint64_t deadline = uv_hrtime() + ms * 1000000ull;

    while (uv_hrtime() < deadline) {
        uv_run(&api.loop, UV_RUN_NOWAIT);
        uv_sleep(1);
    }
}

/* Starts an agent of these modules against a fresh fake API server (hold_token: see fake_start).
 * The agent keeps its configuration: it is static. */
static struct agent *start_agent(const struct agent_module *modules, bool hold_token)
{
    static struct agent_config cfg;
    struct agent *a = NULL;

    finished = false;
    fake_start(hold_token);
    write_kubeconfig();
    config(&cfg);
    assert_int_equal(agent_new(&api.loop, &cfg, modules, &a), 0);
    assert_int_equal(agent_start(a), 0);
    return a;
}

/* Shuts the agent down, waits for its end, closes the fake server; returns the exit status. A
 * POST /identity still held is answered once the modules are finished: a client still waiting
 * for it would run its callback now. */
static int shutdown_agent(struct agent *a)
{
    int code;

    agent_shutdown(a, 0);
    assert_true(run_until(&finished, NULL, 0, 30000));
    if (api.identity) {
        httpd_respond_error(api.identity, 500, "InternalError", "late answer");
        api.identity = NULL;
        run_for(200);
    }
    httpd_close(api.h, NULL, NULL);
    code = agent_free(a); /* runs the loop until every handle is closed */
    uv_run(&api.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&api.loop), 0);
    unlink(kc_path);
    rmdir(kc_dir);
    return code;
}

/* ---- a stand-in for the broadcaster: asks for a credential, frees its state in fini ---------- */

struct requester_state {
    bool alive;
    char id[64];
};

static struct {
    struct agent *a;
    struct requester_state *state; /* NULL after fini */
    bool fini_done;
    int calls, err, reissue;
    bool called_after_fini;
} rq;

static void on_credential(int err, const char *message, const char *ns, const char *kubeconfig,
                          void *data)
{
    struct requester_state *s = data;

    (void)message, (void)ns, (void)kubeconfig;
    rq.calls++;
    rq.err = err;
    if (rq.fini_done) {
        rq.called_after_fini = true;
        return; /* s is freed */
    }
    assert_true(s->alive);
    assert_string_equal(s->id, CONSUMER_ID);
    /* The auth module stopped: a new issuance is refused, so nothing can outlive it. */
    if (rq.calls == 1)
        rq.reissue = peer_issue_credential_kind(rq.a, PEER_CRED_VK, CONSUMER_ID, "consumer", TENANT,
                                                on_credential, s);
}

static int requester_init(struct agent *a)
{
    memset(&rq, 0, sizeof(rq));
    rq.a = a;
    rq.state = calloc(1, sizeof(*rq.state));
    if (!rq.state)
        return -ENOMEM;
    rq.state->alive = true;
    snprintf(rq.state->id, sizeof(rq.state->id), "%s", CONSUMER_ID);
    return 0;
}

static int requester_start(struct agent *a)
{
    return peer_issue_credential_kind(a, PEER_CRED_VK, CONSUMER_ID, "consumer", TENANT,
                                      on_credential, rq.state);
}

static void requester_fini(struct agent *a)
{
    (void)a;
    rq.state->alive = false;
    free(rq.state);
    rq.state = NULL;
    rq.fini_done = true;
}

static void test_issue_cancelled_before_fini(void **state, bool hold_token)
{
    /* In start order; fini runs in reverse: the requester's before auth's. */
    static const struct agent_module modules[] = {
        SENTINEL_MODULE,
        AGENT_MODULE_PEER_AUTH,
        {"requester", requester_init, requester_start, NULL, requester_fini, NULL},
        {NULL, NULL, NULL, NULL, NULL, NULL},
    };
    struct agent *a;

    (void)state;
    a = start_agent(modules, hold_token);
    /* The issuance got as far as waiting for the token. */
    assert_true(run_until(NULL, &api.token_gets, 1, 20000));
    if (!hold_token)
        run_for(50); /* the answer arrives: the issuance sleeps until its next poll */
    assert_int_equal(rq.calls, 0);
    assert_int_equal(shutdown_agent(a), 0);
    /* two RoleBindings, the ResourceQuota, the ServiceAccount, the token Secret */
    assert_int_equal(api.creates, 5);
    assert_false(rq.called_after_fini);
    assert_int_equal(rq.calls, 1);
    assert_int_equal(rq.err, -ECANCELED);
    assert_int_equal(rq.reissue, -ESHUTDOWN);
}

static void test_requester_sleeping(void **state)
{
    test_issue_cancelled_before_fini(state, false);
}

static void test_requester_in_flight(void **state)
{
    test_issue_cancelled_before_fini(state, true);
}

/* ---- the real broadcaster ------------------------------------------------------------------- */

static void test_broadcaster(void **state, bool hold_token)
{
    static const struct agent_module modules[] = {
        SENTINEL_MODULE,
        AGENT_MODULE_IDENTITY,
        AGENT_MODULE_PEER_AUTH,
        AGENT_MODULE_BROADCASTER,
        {NULL, NULL, NULL, NULL, NULL, NULL},
    };
    struct agent_config cfg;
    struct agent *a = NULL;
    struct pu_unit *u;
    char kc[1024], err[256];

    (void)state;
    finished = false;
    fake_start(hold_token);
    write_kubeconfig();
    config(&cfg);
    assert_int_equal(agent_new(&api.loop, &cfg, modules, &a), 0);
    /* The credential the consumer handed over with its request (the incoming controller installs
     * it in the agent): here it points at the fake server too. */
    kubeconfig_json(kc, sizeof(kc), REMOTE_NS);
    assert_int_equal(pu_acquire(agent_peers(a), CONSUMER_ID, "test", &u), 0);
    assert_int_equal(pu_set_credential(u, PU_REQUESTER, kc, strlen(kc), "1", err, sizeof(err)), 1);
    assert_int_equal(agent_start(a), 0);
    /* The broadcaster asked for the virtual kubelet's credential of the consumer, and the
     * issuance waits for the token. */
    assert_true(run_until(NULL, &api.token_gets, 1, 20000));
    if (!hold_token)
        run_for(50);
    assert_int_equal(shutdown_agent(a), 0);
    assert_int_equal(api.creates, 5);
}

static void test_broadcaster_sleeping(void **state)
{
    test_broadcaster(state, false);
}

static void test_broadcaster_in_flight(void **state)
{
    test_broadcaster(state, true);
}

/* ---- the real outgoing controller ------------------------------------------------------------ */

static off_t fini_offset; /* of stderr when the outgoing controller was finished */

static void outgoing_fini(struct agent *a)
{
    peer_outgoing_fini(a);
    fflush(stderr);
    fini_offset = lseek(2, 0, SEEK_CUR);
}

static void test_outgoing_identity_in_flight(void **state)
{
    static const struct agent_module modules[] = {
        SENTINEL_MODULE,
        AGENT_MODULE_IDENTITY,
        {"outgoing", peer_outgoing_init, peer_outgoing_start, peer_outgoing_stop, outgoing_fini,
         NULL},
        {NULL, NULL, NULL, NULL, NULL, NULL},
    };
    struct agent_config cfg;
    struct agent *a = NULL;
    char path[] = "/tmp/test-agent-shutdown-log-XXXXXX", line[4096];
    int saved, fd, code, late = 0;
    FILE *f;

    (void)state;
    finished = false;
    fini_offset = -1;
    with_fc = true;
    fake_start(false);
    write_kubeconfig();
    config(&cfg);
    /* The controller logs its condition changes (info): stderr goes to a file, read below. */
    fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    assert_true(saved >= 0);
    dup2(fd, 2);
    close(fd);
    log_set_level(LOG_LEVEL_INFO);
    assert_int_equal(agent_new(&api.loop, &cfg, modules, &a), 0);
    assert_int_equal(agent_start(a), 0);
    /* POST /identity reached the peer, which does not answer yet: it answers only once the
     * modules are finished (shutdown_agent). */
    assert_true(run_until(NULL, &api.identity_posts, 1, 20000));
    code = shutdown_agent(a);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    log_set_level(LOG_LEVEL_WARN);
    with_fc = false;
    /* A callback run after the controller's fini would have written (and logged) the
     * ForeignCluster's AuthenticationStatus from the late answer. */
    f = fopen(path, "r");
    assert_non_null(f);
    assert_true(fini_offset >= 0);
    assert_int_equal(fseeko(f, fini_offset, SEEK_SET), 0);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "AuthenticationStatus=")) {
            fprintf(stderr, "after the controller's fini: %s", line);
            late++;
        }
    fclose(f);
    unlink(path);
    assert_int_equal(code, 0);
    assert_int_equal(api.identity_posts, 1);
    assert_int_equal(late, 0);
}

/* ---- a controller on the skeleton (src/agent/ctl.h) ----------------------------------------- */

/* Its reconcile reads the token Secret, which the fake holds: a record is in flight at shutdown.
 * With early_free, the module frees its controller in stop (before the request is cancelled): the
 * record then ends on a freed controller, which must touch no queue and go with it. */
static struct {
    struct ctl *c;
    bool early_free;
    int reconciles, ends, requests;
    size_t records_at_fini;
    bool fini_done;
} sk;

struct sk_rec {
    struct ctl_rec h;
    json_t *held; /* something to release */
};

static void sk_release(struct ctl_rec *h)
{
    struct sk_rec *r = (struct sk_rec *)h;

    json_decref(r->held);
    sk.ends++;
}

static void sk_reconcile(struct ctl *c, const char *key)
{
    struct sk_rec *r = (struct sk_rec *)ctl_rec_begin(c, key);

    sk.reconciles++;
    if (!r)
        return;
    assert_string_equal(r->h.key, key);
    r->held = json_object();
    if (kapi_get(agent_kube(ctl_agent(c)), &kapi_secrets, TENANT, "vk-" CONSUMER_ID "-token",
                 ctl_after_write, r) < 0) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    sk.requests++;
}

static int sk_init(struct agent *a)
{
    struct ctl_options o = {.name = "skeleton",
                            .rec_size = sizeof(struct sk_rec),
                            .reconcile = sk_reconcile,
                            .rec_release = sk_release};
    bool early = sk.early_free;

    memset(&sk, 0, sizeof(sk));
    sk.early_free = early;
    assert_int_equal(ctl_new(a, &(struct ctl_options){.name = "x"}, NULL, &sk.c), -EINVAL);
    return ctl_new(a, &o, &sk, &sk.c);
}

static int sk_start(struct agent *a)
{
    (void)a;
    ctl_start(sk.c);
    assert_true(ctl_running(sk.c));
    ctl_enqueue(sk.c, "one");
    return 0;
}

static void sk_stop(struct agent *a)
{
    (void)a;
    if (sk.early_free && sk.c) {
        ctl_free(sk.c); /* the record in flight keeps it */
        sk.c = NULL;
    } else if (sk.c) {
        ctl_stop(sk.c);
    }
}

static void sk_fini(struct agent *a)
{
    (void)a;
    sk.records_at_fini = sk.c ? ctl_records(sk.c) : 0;
    ctl_free(sk.c);
    sk.c = NULL;
    sk.fini_done = true;
}

static void test_skeleton(bool early_free)
{
    static const struct agent_module modules[] = {
        SENTINEL_MODULE,
        {"skeleton", sk_init, sk_start, sk_stop, sk_fini, NULL},
        {NULL, NULL, NULL, NULL, NULL, NULL},
    };
    struct agent_config cfg;
    struct agent *a = NULL;

    finished = false;
    sk.early_free = early_free;
    fake_start(true);
    api.token_created = true; /* the reads are held */
    write_kubeconfig();
    config(&cfg);
    assert_int_equal(agent_new(&api.loop, &cfg, modules, &a), 0);
    assert_int_equal(agent_start(a), 0);
    assert_true(run_until(NULL, &api.token_gets, 1, 20000));
    assert_int_equal(sk.reconciles, 1);
    assert_int_equal(sk.ends, 0); /* in flight */
    assert_int_equal(shutdown_agent(a), 0);
    assert_true(sk.fini_done);
    /* The record ended exactly once (cancelled, not requeued: one reconcile in all), before fini
     * as the agent promises, or after the early free, with the controller still there for it. */
    assert_int_equal(sk.requests, 1);
    assert_int_equal(sk.reconciles, 1);
    assert_int_equal(sk.ends, 1);
    assert_int_equal(sk.records_at_fini, 0);
}

static void test_skeleton_record_in_flight(void **state)
{
    (void)state;
    test_skeleton(false);
}

static void test_skeleton_freed_with_record_in_flight(void **state)
{
    (void)state;
    test_skeleton(true);
}

/* The outcomes that need no request: CTL_BACKOFF counts a failure of the key (its next delay is
 * the queue's backoff) until ctl_forget; ctl_skip ends a pass that begins no record, with the
 * key requeued as asked. Each key comes back exactly once. */
static struct {
    int backoff, skip;
    int failures_after_backoff, failures_after_forget;
} oc;

static void oc_reconcile(struct ctl *c, const char *key)
{
    struct ctl_rec *r;

    if (strcmp(key, "skip") == 0) {
        ctl_skip(c, key, ++oc.skip == 1 ? CTL_WAIT : CTL_DONE);
        return;
    }
    r = ctl_rec_begin(c, key);
    assert_non_null(r);
    if (++oc.backoff == 1) {
        ctl_rec_end(r, CTL_BACKOFF); /* the queue may drop its copy of key: named below */
        oc.failures_after_backoff = wq_num_requeues(ctl_queue(c), "backoff");
        return;
    }
    ctl_forget(c, key);
    oc.failures_after_forget = wq_num_requeues(ctl_queue(c), "backoff");
    ctl_rec_end(r, CTL_DONE);
}

/* A module of one controller made with tc.o, whose start queues tc.keys (shared by the tests of
 * the skeleton's outcomes and writes). */
static struct {
    struct ctl *c;
    struct ctl_options o;
    const char *keys[2];
} tc;

static int tc_init(struct agent *a)
{
    return ctl_new(a, &tc.o, NULL, &tc.c);
}

static int tc_start(struct agent *a)
{
    (void)a;
    ctl_start(tc.c);
    for (size_t i = 0; i < sizeof(tc.keys) / sizeof(tc.keys[0]); i++)
        if (tc.keys[i])
            ctl_enqueue(tc.c, tc.keys[i]);
    return 0;
}

static void tc_stop(struct agent *a)
{
    (void)a;
    ctl_stop(tc.c);
}

static void tc_fini(struct agent *a)
{
    (void)a;
    ctl_free(tc.c);
    tc.c = NULL;
}

static struct agent *start_controller(const struct ctl_options *o, const char *key1,
                                      const char *key2)
{
    static const struct agent_module modules[] = {
        SENTINEL_MODULE,
        {"controller", tc_init, tc_start, tc_stop, tc_fini, NULL},
        {NULL, NULL, NULL, NULL, NULL, NULL},
    };

    memset(&tc, 0, sizeof(tc));
    tc.o = *o;
    tc.keys[0] = key1;
    tc.keys[1] = key2;
    return start_agent(modules, false);
}

static void test_skeleton_outcomes(void **state)
{
    struct ctl_options o = {.name = "outcomes",
                            .queue = {.base_delay_ms = 5, .max_delay_ms = 1000},
                            .rec_size = sizeof(struct ctl_rec),
                            .reconcile = oc_reconcile,
                            .wait_ms = 5};
    struct agent *a;

    (void)state;
    memset(&oc, 0, sizeof(oc));
    a = start_controller(&o, "backoff", "skip");
    assert_true(run_until(NULL, &oc.backoff, 2, 20000));
    assert_true(run_until(NULL, &oc.skip, 2, 20000));
    run_for(50); /* nothing more comes */
    assert_int_equal(oc.backoff, 2);
    assert_int_equal(oc.skip, 2);
    assert_int_equal(oc.failures_after_backoff, 1);
    assert_int_equal(oc.failures_after_forget, 0);
    assert_int_equal(shutdown_agent(a), 0);
}

/* A pass that goes again at once forever (as one whose write changes nothing, so that no event
 * comes) runs 32 times in a row, then slows down: the queue's backoff from 5 ms, doubling, capped
 * at 1 s. An event of the key brings it back at once, for 32 more. */
static int spin_passes;

static void spin_reconcile(struct ctl *c, const char *key)
{
    spin_passes++;
    ctl_skip(c, key, CTL_NOW);
}

static void test_skeleton_now_streak(void **state)
{
    struct ctl_options o = {.name = "spin",
                            .queue = {.base_delay_ms = 5, .max_delay_ms = 1000},
                            .rec_size = sizeof(struct ctl_rec),
                            .reconcile = spin_reconcile};
    struct agent *a;
    int before;

    (void)state;
    spin_passes = 0;
    a = start_controller(&o, "spin", NULL);
    assert_true(run_until(NULL, &spin_passes, 33, 20000));
    /* Then at most one pass per delay: 5, 10, 20, ... 640 ms add up to 1,275 ms, so no more than 8
     * in a second (one pass a millisecond, or hundreds, without the guard). */
    run_for(1000);
    if (spin_passes > 33 + 8)
        fail_msg("%d passes: the key did not slow down", spin_passes);
    before = spin_passes;
    ctl_enqueue(tc.c, "spin"); /* an event */
    assert_true(run_until(NULL, &spin_passes, before + 32, 20000));
    assert_int_equal(shutdown_agent(a), 0);
}

/* The shared writes as a step of a chain (ctl_set_finalizer_then): the result goes to the step
 * given, which ends the record; without one (ctl_set_finalizer), to ctl_after_write. Both send
 * the same merge patch, guarded by the object's resourceVersion. */
static struct {
    int passes, nexts, next_err;
} fz;

static void fz_next(void *owner)
{
    struct ctl_rec *r = owner;

    fz.nexts++;
    fz.next_err = r->ch.last.err;
    ctl_chain_after_write(r); /* success: CTL_NOW */
}

static void fz_reconcile(struct ctl *c, const char *key)
{
    json_t *ns = json_pack("{s:{s:s,s:s,s:[s,s]}}", "metadata", "name", TENANT, "resourceVersion",
                           "7", "finalizers", "other", "cliqo.io/test");
    struct ctl_rec *r = ctl_rec_begin(c, key);

    assert_non_null(ns);
    assert_non_null(r);
    switch (fz.passes++) {
    case 0:
        ctl_set_finalizer_then(r, &kapi_namespaces, ns, "cliqo.io/test", false, fz_next);
        break;
    case 1:
        ctl_set_finalizer(r, &kapi_namespaces, ns, "cliqo.io/test", true); /* CTL_NOW too */
        break;
    default:
        ctl_rec_end(r, CTL_DONE);
        break;
    }
    json_decref(ns);
}

static void test_skeleton_finalizer_steps(void **state)
{
    struct ctl_options o = {
        .name = "finalizers", .rec_size = sizeof(struct ctl_rec), .reconcile = fz_reconcile};
    struct agent *a;

    (void)state;
    memset(&fz, 0, sizeof(fz));
    a = start_controller(&o, "ns", NULL);
    assert_true(run_until(NULL, &fz.passes, 3, 20000));
    assert_int_equal(shutdown_agent(a), 0);
    assert_int_equal(fz.passes, 3);
    assert_int_equal(fz.nexts, 1);
    assert_int_equal(fz.next_err, 0);
    assert_int_equal(api.npatches, 2);
    assert_string_equal(api.patches[0],
                        "{\"metadata\":{\"resourceVersion\":\"7\",\"finalizers\":[\"other\"]}}");
    assert_string_equal(api.patches[1], "{\"metadata\":{\"resourceVersion\":\"7\",\"finalizers\":["
                                        "\"other\",\"cliqo.io/test\"]}}");
}

/* The keys the shared enqueue helpers and informer handlers queue: "namespace/name" of an object,
 * nothing for a missing part or a key longer than a record's. */
static struct {
    int n;
    char keys[8][sizeof(((struct ctl_rec *)0)->key)];
} ek;

static void ek_reconcile(struct ctl *c, const char *key)
{
    if (ek.n < 8)
        snprintf(ek.keys[ek.n], sizeof(ek.keys[0]), "%s", key);
    ek.n++;
    ctl_skip(c, key, CTL_DONE);
}

static int cmp_key(const void *x, const void *y)
{
    return strcmp(x, y);
}

static void test_skeleton_enqueue_keys(void **state)
{
    struct ctl_options o = {
        .name = "keys", .rec_size = sizeof(struct ctl_rec), .reconcile = ek_reconcile};
    char fits[251], too_long[300], want_fits[256];
    json_t *ab = json_pack("{s:{s:s,s:s}}", "metadata", "namespace", "a", "name", "b");
    json_t *cd = json_pack("{s:{s:s,s:s}}", "metadata", "namespace", "c", "name", "d");
    json_t *ef = json_pack("{s:{s:s,s:s}}", "metadata", "namespace", "e", "name", "f");
    json_t *cluster = json_pack("{s:{s:s}}", "metadata", "name", "node-1");
    struct ctl_module cm;
    struct agent *a;

    (void)state;
    memset(&ek, 0, sizeof(ek));
    memset(fits, 'x', sizeof(fits) - 1);
    fits[sizeof(fits) - 1] = 0; /* "ns/" + 250: 253 bytes, fits a record's key */
    memset(too_long, 'y', sizeof(too_long) - 1);
    too_long[sizeof(too_long) - 1] = 0;
    snprintf(want_fits, sizeof(want_fits), "ns/%s", fits);
    a = start_controller(&o, NULL, NULL);
    cm = (struct ctl_module){.a = a, .ctl = tc.c};
    ctl_enqueue_ns_name(tc.c, "ns", "name");
    ctl_enqueue_ns_name(tc.c, NULL, "name");
    ctl_enqueue_ns_name(tc.c, "ns", NULL);
    ctl_enqueue_ns_name(tc.c, "ns", fits);
    ctl_enqueue_ns_name(tc.c, "ns", too_long);
    ctl_module_on_obj(NULL, ab, &cm);
    ctl_module_on_update(NULL, cd, ef, &cm); /* the new object's key */
    ctl_module_on_obj(NULL, cluster, &cm);   /* no namespace: no key */
    ctl_enqueue_obj(NULL, ab);               /* no controller: nothing */
    assert_true(run_until(NULL, &ek.n, 4, 20000));
    run_for(50); /* nothing more comes */
    assert_int_equal(ek.n, 4);
    qsort(ek.keys, 4, sizeof(ek.keys[0]), cmp_key);
    assert_string_equal(ek.keys[0], "a/b");
    assert_string_equal(ek.keys[1], "e/f");
    assert_string_equal(ek.keys[2], "ns/name");
    assert_string_equal(ek.keys[3], want_fits);
    assert_int_equal(shutdown_agent(a), 0);
    json_decref(ab);
    json_decref(cd);
    json_decref(ef);
    json_decref(cluster);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requester_sleeping),
        cmocka_unit_test(test_requester_in_flight),
        cmocka_unit_test(test_broadcaster_sleeping),
        cmocka_unit_test(test_broadcaster_in_flight),
        cmocka_unit_test(test_outgoing_identity_in_flight),
        cmocka_unit_test(test_skeleton_record_in_flight),
        cmocka_unit_test(test_skeleton_freed_with_record_in_flight),
        cmocka_unit_test(test_skeleton_outcomes),
        cmocka_unit_test(test_skeleton_now_streak),
        cmocka_unit_test(test_skeleton_finalizer_steps),
        cmocka_unit_test(test_skeleton_enqueue_keys),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]); /* e.g. test_broadcaster_* */
    log_set_level(LOG_LEVEL_WARN);
    /* The fake API server speaks plain HTTP on loopback; peers' kubeconfigs point at it too. */
    kc_peer_allow_loopback_http(true);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
