/* nodeagent: the per-node mode of the data plane; see nodeagent.h and docs/dataplane.md.
 *
 * One key, "routes": every event of the three informers queues it, and a pass computes the routes
 * wanted from the caches, reads the kernel's (one dump per family, rtnetlink, blocking calls from
 * the loop as the gateway's, each a few microseconds) and applies the difference, then looks again
 * after PASS_MS (a route deleted by hand comes back). */
#include "network/nodeagent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/ctl.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "network/dppeers.h"
#include "network/noderoutes.h"
#include "network/routes.h"
#include "peering/resources.h"

#define MOD       "node"
#define KEY       "routes"
#define PASS_MS   10000
#define MAX_PEERS 1024

struct nd {
    struct ctl_module mod; /* first */
    const struct agent_config *cfg;
    struct inf_informer *fcs, *ncs, *gws;
    int rtfd;
    uint32_t seq;
    char gw_seen[sizeof(((struct nrt_gateway *)0)->name) + 64]; /* last logged: name and address */
    char last_error[256];
};

struct rec {
    struct ctl_rec h; /* first */
};

/* ---- what is wanted -------------------------------------------------------------------------- */

struct pick {
    struct nrt_gateway gw;
    bool have;
    unsigned labelled, unusable;
};

static void pick_gateway(json_t *node, void *data)
{
    struct pick *p = data;
    struct nrt_gateway g;
    int r = nrt_gateway_node(node, &g);

    if (r == 0)
        return;
    p->labelled++;
    if (r < 0) {
        p->unusable++;
        return;
    }
    if (!p->have || strcmp(g.name, p->gw.name) < 0)
        p->gw = g;
    p->have = true;
}

struct blocks {
    struct dpo_peer_net *nets;
    size_t n;
    const struct inf_informer *ncs;
};

static void collect_peer(json_t *fc, void *data)
{
    struct blocks *b = data;
    struct dpo_peer_net net;
    const char *id, *tns;
    char reason[DPO_REASON_MAX];

    if (b->n >= MAX_PEERS || !dpp_fc_peer(fc, &id, &tns) ||
        dpp_peer_net(b->ncs, tns, id, &net, reason, sizeof(reason)) < 0)
        return;
    for (size_t i = 0; i < b->n; i++)
        if (dpp_conflicts(&b->nets[i], &net))
            return; /* the gateway refuses it too */
    b->nets[b->n++] = net;
}

static void note_gateway(struct nd *n, const struct pick *p)
{
    char seen[sizeof(n->gw_seen)], ip[INET6_ADDRSTRLEN] = "";

    if (p->have)
        inet_ntop(p->gw.family == 4 ? AF_INET : AF_INET6, p->gw.ip, ip, sizeof(ip));
    snprintf(seen, sizeof(seen), "%s %s %u %u", p->have ? p->gw.name : "", ip, p->labelled,
             p->unusable);
    if (strcmp(seen, n->gw_seen) == 0)
        return;
    snprintf(n->gw_seen, sizeof(n->gw_seen), "%s", seen);
    if (!p->have)
        log_warn(MOD,
                 "no gateway node (a Node labelled %s=true with an InternalIP; %u labelled): "
                 "no route to the peers",
                 NRT_GATEWAY_LABEL, p->labelled);
    else if (strcmp(p->gw.name, n->cfg->node_name) == 0)
        log_info(MOD, "this node (%s) is the gateway node: no route of its own", p->gw.name);
    else
        log_info(MOD, "gateway node %s at %s", p->gw.name, ip);
    if (p->labelled > 1)
        log_warn(MOD, "%u nodes are labelled %s=true: routing through the first by name, %s",
                 p->labelled, NRT_GATEWAY_LABEL, p->have ? p->gw.name : "(none usable)");
}

/* ---- the kernel ------------------------------------------------------------------------------ */

static int apply_family(struct nd *n, int family, const struct rt_route *want, size_t nwant,
                        char *err, size_t errlen)
{
    struct rt_route *have = x_calloc(RT_MAX_ROUTES, sizeof(*have)), *fw = NULL;
    const struct rt_route **add = NULL, **del = NULL;
    size_t nfw = 0, nadd = 0, ndel = 0;
    uint8_t msg[RT_MSG_MAX];
    int nhave, r = 0;

    fw = x_calloc(nwant + 1, sizeof(*fw));
    if (!have || !fw) {
        r = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nwant; i++)
        if (want[i].dst.family == family)
            fw[nfw++] = want[i];
    nhave = rt_sock_dump(n->rtfd, ++n->seq, family, 0, have, RT_MAX_ROUTES);
    if (nhave < 0) {
        r = nhave;
        snprintf(err, errlen, "route dump: %s", strerror(-r));
        goto out;
    }
    add = x_calloc(nfw + 1, sizeof(*add));
    del = x_calloc((size_t)nhave + 1, sizeof(*del));
    if (!add || !del) {
        r = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rt_plan(fw, nfw, have, nrt_owned(have, (size_t)nhave), add, &nadd, del, &ndel);
    for (size_t i = 0; r == 0 && i < ndel + nadd; i++) {
        const struct rt_route *rt = i < ndel ? del[i] : add[i - ndel];
        char t[CIDR_STR_MAX], via[INET6_ADDRSTRLEN] = "-";
        uint32_t seq = ++n->seq;
        int len = i < ndel ? rt_msg_del(rt, seq, msg, sizeof(msg))
                           : rt_msg_new(rt, seq, msg, sizeof(msg));

        cidr_format(&rt->dst, t, sizeof(t));
        if (rt->has_via)
            inet_ntop(family == 4 ? AF_INET : AF_INET6, rt->via, via, sizeof(via));
        r = len < 0 ? len : rt_sock_apply(n->rtfd, msg, (size_t)len, seq);
        if (r == -ESRCH && i < ndel)
            r = 0; /* gone already */
        if (r < 0)
            snprintf(err, errlen, "route %s via %s %s: %s", t, via, i < ndel ? "delete" : "add",
                     strerror(-r));
        else
            log_info(MOD, "route %s via %s proto %d: %s", t, via, RT_PROTO_CLIQO,
                     i < ndel ? "deleted" : "added");
    }
out:
    x_free(add);
    x_free(del);
    x_free(fw);
    x_free(have);
    return r;
}

/* ---- the pass -------------------------------------------------------------------------------- */

static int pass(struct nd *n, char *err, size_t errlen)
{
    struct pick p;
    struct blocks b = {.ncs = n->ncs};
    struct cidr *blocks = NULL;
    struct rt_route *want = NULL;
    int nwant, r = 0;

    memset(&p, 0, sizeof(p));
    inf_foreach(n->gws, pick_gateway, &p);
    note_gateway(n, &p);
    b.nets = x_calloc(MAX_PEERS, sizeof(*b.nets));
    blocks = x_calloc(MAX_PEERS, sizeof(*blocks));
    want = x_calloc(MAX_PEERS, sizeof(*want));
    if (!b.nets || !blocks || !want) {
        r = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    inf_foreach(n->fcs, collect_peer, &b);
    for (size_t i = 0; i < b.n; i++)
        blocks[i] = b.nets[i].nat.seen_here;
    nwant = nrt_want(n->cfg->node_name, p.have ? &p.gw : NULL, blocks, b.n, want, MAX_PEERS);
    if (nwant < 0) {
        r = nwant;
        snprintf(err, errlen, "routes wanted: %s", strerror(-r));
        goto out;
    }
    for (int fam = 4; r == 0 && fam <= 6; fam += 2)
        r = apply_family(n, fam, want, (size_t)nwant, err, errlen);
out:
    x_free(b.nets);
    x_free(blocks);
    x_free(want);
    return r;
}

static void reconcile(struct ctl *c, const char *key)
{
    struct nd *n = ctl_data(c);
    struct ctl_rec *r;
    char err[256] = "";

    /* Never from a partial cache: an unsynced informer would look like "no peer" and remove every
     * route. */
    if (!inf_synced(n->fcs) || !inf_synced(n->ncs) || !inf_synced(n->gws)) {
        ctl_skip(c, key, CTL_WAIT);
        return;
    }
    r = ctl_rec_begin(c, key);
    if (!r)
        return;
    if (pass(n, err, sizeof(err)) < 0) {
        if (strcmp(err, n->last_error) != 0)
            log_error(MOD, "%s", err);
        snprintf(n->last_error, sizeof(n->last_error), "%s", err);
        ctl_rec_end(r, CTL_RETRY);
        return;
    }
    n->last_error[0] = '\0';
    ctl_rec_end_after(r, PASS_MS);
}

/* ---- handlers and the module ----------------------------------------------------------------- */

static void on_any(struct inf_informer *inf, json_t *obj, void *data)
{
    struct nd *n = data;

    (void)inf;
    (void)obj;
    if (n->mod.ctl)
        ctl_enqueue(n->mod.ctl, KEY);
}

static void on_any_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_any(inf, new_obj, data);
}

int nd_init(struct agent *a)
{
    struct inf_handlers h = {.on_add = on_any, .on_update = on_any_update, .on_delete = on_any};
    struct ctl_options co = {.name = "node",
                             .log_module = MOD,
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile,
                             .retry_ms = 1000,
                             .wait_ms = 500};
    struct nd *n = ctl_module_new(a, MOD, sizeof(*n));
    int r;

    if (!n)
        return -ENOMEM;
    n->cfg = agent_config(a);
    n->rtfd = rt_sock_open();
    if (n->rtfd < 0) {
        log_error(MOD, "cannot open a rtnetlink socket: %s", strerror(-n->rtfd));
        return n->rtfd;
    }
    log_info(MOD,
             "node %s: routes of protocol %d to the peers' pods through the node labelled %s=true",
             n->cfg->node_name, RT_PROTO_CLIQO, NRT_GATEWAY_LABEL);
    r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &h, n, &n->fcs);
    if (r == 0)
        r = agent_informer(a, &peer_res_networkconfigs, NULL, NULL, 0, &h, n, &n->ncs);
    if (r == 0)
        r = agent_informer(a, &kapi_nodes, NULL, NRT_GATEWAY_LABEL "=true", 0, &h, n, &n->gws);
    if (r == 0)
        r = ctl_new(a, &co, n, &n->mod.ctl);
    return r;
}

int nd_start(struct agent *a)
{
    struct nd *n = agent_module_data(a, MOD);
    int r = ctl_module_start(a, MOD);

    if (r == 0 && n)
        ctl_enqueue(n->mod.ctl, KEY);
    return r;
}

/* The routes stay (nodeagent.h): the next start reconciles them. */
void nd_stop(struct agent *a)
{
    ctl_module_stop(a, MOD);
}

void nd_fini(struct agent *a)
{
    struct nd *n = agent_module_data(a, MOD);

    if (n && n->rtfd >= 0)
        close(n->rtfd);
    ctl_module_fini(a, MOD);
}
