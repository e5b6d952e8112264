/* gateway: the data plane's gateway; see gateway.h and docs/dataplane.md.
 *
 * One key, "device": every event (ForeignClusters, NetworkConfigs, TunnelEndpoints, ConfigMaps of
 * the agent's namespace) queues it, and a pass reconciles the whole device, routes and table, then
 * writes the statuses that changed, one after the other, and looks again after PASS_MS. The status
 * writes of many new peers take a while (one request each, at the client's rate): when objects
 * changed meanwhile, the device is planned again, at most every SOON_MS, before the next write, so
 * that peers arriving during the writes are installed without waiting for them all.
 *
 * The userspace API socket and rtnetlink are local and answer in microseconds: they are used with
 * blocking calls from the loop, each bounded by a timeout (UAPI_TIMEOUT_S), as routes.c's rt_sock_*
 * are. So is libnftables, whose one transaction for the whole table is applied only when what is
 * wanted differs from what the kernel holds.
 *
 * The metrics (cliqo_tunnel_*{peer}) follow each pass's state of every peer with a TunnelEndpoint:
 * its series are made when it appears and removed when it goes, so a departed peer leaves none. */
#include "network/gateway.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <nftables/libnftables.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/ctl.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "metrics/metrics.h"
#include "network/dpobj.h"
#include "network/dppeers.h"
#include "network/natrules.h"
#include "network/routes.h"
#include "network/wgnl.h"
#include "network/wguapi.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define MOD            "gateway"
#define KEY            "device"
#define PASS_MS        5000
#define SOON_MS        1000
#define EAGER_MS       30000 /* a peer Pending for less than this is looked at every SOON_MS */
#define WAIT_WG_MS     300
#define RESPAWN_MS     2000
#define RECORD_MS      600000
#define STATUS_MIN_MS  10000
#define STATS_PEER_MS  100 /* statistics: at most one write every STATS_PEER_MS of all peers */
#define UAPI_TIMEOUT_S 2
#define UAPI_DIR       "/var/run/wireguard"
#define MAX_PEERS      1024
#define REJECT_AFTER_S 180 /* WireGuard's Reject-After-Time: an older session carries nothing */
#define NFT_LIST_MAX   (8u << 20)
#define CLUSTER_ID_CM  PEER_CLUSTER_ID_CM

/* The reasons of cliqo_tunnel_errors_total (a fixed set: the label stays bounded). */
#define ERR_REFUSED "refused"        /* the TunnelEndpoint (its key or endpoint) */
#define ERR_NETCFG  "network_config" /* the NetworkConfig, or a conflict with another peer's */
#define ERR_DEVICE  "device"         /* wireguard-go, the link, the routes or the table */

/* What a pass decided for one peer. */
struct want {
    char id[64], ns[64];
    bool has_tep;          /* a TunnelEndpoint to write the status of */
    bool install;          /* valid and settled: installed */
    const char *created;   /* the TunnelEndpoint's creationTimestamp (borrowed from tep) */
    json_t *tep;           /* owned */
    struct dpo_tunnel tun; /* from the TunnelEndpoint */
    struct dpo_peer_net net;
    char phase[16];
    char message[DPO_REASON_MAX + 64];
    const char *err_reason; /* with phase Error: ERR_* */
    int64_t handshake;      /* from the device: Unix seconds, 0 never */
    uint64_t rx, tx;
};

/* A peer's series, and what the last pass said of it (for the counters). */
struct mpeer {
    char id[64];
    char phase[16], message[DPO_REASON_MAX + 64];
    uint64_t rx, tx;
    bool seen;
};

/* The status last written for a peer (by namespace and ID). */
struct written {
    char id[64], ns[64];
    char phase[16], message[DPO_REASON_MAX + 64];
    int64_t handshake;
    uint64_t rx, tx, at_ms;
    uint64_t phase_ms; /* when the phase or message written last changed */
    bool seen;         /* in the current pass */
    struct written *next;
};

struct gw {
    struct ctl_module mod; /* first */
    const struct agent_config *cfg;
    struct inf_informer *fcs, *ncs, *teps, *cms;
    bool started;
    /* the key and the record */
    bool have_key;
    struct wg_key priv;
    struct dpo_tunnel self;
    char record_sig[WG_KEY_B64_LEN + WG_ENDPOINT_MAX + 16];
    uint64_t record_ms;
    /* wireguard-go */
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    uv_process_t *child;
    uint64_t spawned_ms;
    pid_t wg_pid; /* of the process that answered last (SO_PEERCRED) */
    /* or the kernel's WireGuard (wgnl.h), chosen at start when its family resolves */
    int wgfd; /* -1: wireguard-go */
    uint16_t wgfam;
    uint32_t wgseq;
    /* the kernel */
    struct nft_ctx *nft;
    int rtfd;
    uint32_t seq;
    uint8_t nft_want[2][32], nft_seen[2][32];
    bool nft_known[2];
    /* the pass */
    bool changed;     /* an event since the device was last planned */
    uint64_t plan_ms; /* when it was */
    struct want *wants;
    size_t nwants, next_status;
    struct written *written;
    char last_error[256];
    /* metrics */
    struct metrics_family *m_up, *m_handshake, *m_bytes, *m_errors;
    struct mpeer *mpeers;
    size_t nmpeers;
};

struct rec {
    struct ctl_rec h; /* first */
    struct gw *g;
};

static void step_record(struct rec *r);
static void step_device(struct rec *r);
static void step_status(struct rec *r);

/* ---- small helpers --------------------------------------------------------------------------- */

static uint64_t now_ms(struct gw *g)
{
    return uv_now(agent_loop(g->mod.a));
}

static const char *self_id(struct gw *g)
{
    json_t *cm = inf_get(g->cms, agent_namespace(g->mod.a), CLUSTER_ID_CM);
    static char id[64];
    const char *v = json_string_value(json_object_get(json_object_get(cm, "data"), "cluster-id"));

    snprintf(id, sizeof(id), "%s", v && peer_cluster_id_valid(v) ? v : "");
    json_decref(cm);
    return id[0] ? id : NULL;
}

static void wants_clear(struct gw *g)
{
    for (size_t i = 0; i < g->nwants; i++)
        json_decref(g->wants[i].tep);
    x_free(g->wants);
    g->wants = NULL;
    g->nwants = g->next_status = 0;
}

static void set_error(struct gw *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(struct gw *g, const char *fmt, ...)
{
    char msg[sizeof(g->last_error)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (strcmp(msg, g->last_error) != 0)
        log_error(MOD, "%s", msg);
    snprintf(g->last_error, sizeof(g->last_error), "%s", msg);
}

/* ---- the userspace API ----------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One request (the concatenation of parts) and its answer, which ends with an empty line: into
 * *ret (x_malloc'd, NUL-terminated), at most WG_UAPI_MAX bytes. Returns 0 or -errno (-ENOENT or
 * -ECONNREFUSED: no wireguard-go listens). */
static int uapi_call(struct gw *g, const char *const *parts, size_t nparts, char **ret,
                     size_t *ret_len)
{
    struct sockaddr_un sa;
    struct timeval tv = {UAPI_TIMEOUT_S, 0};
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int fd, r = 0;

    *ret = NULL;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g->sock);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        r = -errno;
        goto out;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && cred.pid > 0)
        g->wg_pid = cred.pid;
    for (size_t i = 0; r == 0 && i < nparts; i++)
        r = write_all(fd, parts[i], strlen(parts[i]));
    while (r == 0 && !(len >= 2 && buf[len - 1] == '\n' && buf[len - 2] == '\n')) {
        ssize_t n;

        if (cap - len < 4096) {
            size_t ncap = cap ? cap * 2 : 8192;
            char *nb;

            if (ncap > WG_UAPI_MAX + 1) {
                r = -E2BIG;
                break;
            }
            /* grown by hand: the answer holds the private key, no copy is left behind */
            nb = x_malloc(ncap);
            if (!nb) {
                r = -ENOMEM;
                break;
            }
            if (buf) {
                memcpy(nb, buf, len);
                OPENSSL_cleanse(buf, cap);
                x_free(buf);
            }
            buf = nb;
            cap = ncap;
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            r = errno == EAGAIN ? -ETIMEDOUT : -errno;
        else if (n == 0)
            r = -EPIPE;
        else
            len += (size_t)n;
    }
out:
    close(fd);
    if (r < 0) {
        if (buf)
            OPENSSL_cleanse(buf, cap);
        x_free(buf);
        return r;
    }
    buf[len] = '\0';
    *ret = buf;
    *ret_len = len;
    return 0;
}

static int uapi_get(struct gw *g, struct wg_device *dev, char *err, size_t errlen)
{
    const char *parts[] = {WG_UAPI_GET};
    char *ans;
    size_t len;
    int r = uapi_call(g, parts, 1, &ans, &len);

    if (r < 0) {
        snprintf(err, errlen, "%s", strerror(-r));
        return r;
    }
    r = wg_uapi_get_parse(ans, len, dev, err, errlen);
    OPENSSL_cleanse(ans, len);
    x_free(ans);
    return r;
}

/* ---- the kernel's WireGuard ------------------------------------------------------------------ */

/* Chooses the transport once, at start: the kernel's when the generic netlink family "wireguard"
 * resolves, else wireguard-go. */
static void kernel_probe(struct gw *g)
{
    int fd = wgnl_sock_open(), r = fd;

    if (fd >= 0)
        r = wgnl_sock_family(fd, ++g->wgseq);
    if (r > 0) {
        g->wgfd = fd;
        g->wgfam = (uint16_t)r;
        log_info(MOD, "WireGuard through the kernel (generic netlink family %d)", r);
        return;
    }
    if (fd >= 0)
        close(fd);
    log_info(MOD, "the kernel has no WireGuard (%s): %s over its userspace API", strerror(-r),
             g->cfg->wireguard_go);
}

/* The device from the kernel, its link created first when missing. */
static int kernel_get(struct gw *g, struct wg_device *dev, char *err, size_t errlen)
{
    if (!if_nametoindex(g->cfg->tunnel_interface)) {
        uint8_t msg[WGNL_MSG_MAX];
        uint32_t seq = ++g->seq;
        int r = wgnl_msg_newlink(g->cfg->tunnel_interface, seq, msg, sizeof(msg));

        if (r >= 0)
            r = rt_sock_apply(g->rtfd, msg, (size_t)r, seq);
        if (r < 0 && r != -EEXIST) {
            snprintf(err, errlen, "cannot create the link: %s", strerror(-r));
            return r;
        }
        log_info(MOD, "created the WireGuard link %s", g->cfg->tunnel_interface);
    }
    return wgnl_sock_get(g->wgfd, g->wgfam, ++g->wgseq, g->cfg->tunnel_interface, dev, err, errlen);
}

/* The device through the transport chosen. */
static int dev_get(struct gw *g, struct wg_device *dev, char *err, size_t errlen)
{
    return g->wgfd >= 0 ? kernel_get(g, dev, err, errlen) : uapi_get(g, dev, err, errlen);
}

/* ---- wireguard-go ---------------------------------------------------------------------------- */

static void child_closed(uv_handle_t *h)
{
    x_free(h);
}

static void child_exited(uv_process_t *p, int64_t status, int sig)
{
    struct gw *g = p->data;

    if (g) {
        log_warn(MOD, "wireguard-go (pid %d) exited (status %lld, signal %d)", p->pid,
                 (long long)status, sig);
        g->child = NULL;
        if (g->wg_pid == p->pid)
            g->wg_pid = 0;
        ctl_enqueue(g->mod.ctl, KEY);
    }
    uv_close((uv_handle_t *)p, child_closed);
}

static int spawn_wg(struct gw *g)
{
    char *args[] = {(char *)g->cfg->wireguard_go, "-f", (char *)g->cfg->tunnel_interface, NULL};
    uv_stdio_container_t io[3];
    uv_process_options_t o;
    uv_process_t *p = x_calloc(1, sizeof(*p));
    int r;

    if (!p)
        return -ENOMEM;
    memset(&o, 0, sizeof(o));
    io[0].flags = UV_IGNORE;
    io[1].flags = UV_INHERIT_FD;
    io[1].data.fd = 1;
    io[2].flags = UV_INHERIT_FD;
    io[2].data.fd = 2;
    o.file = g->cfg->wireguard_go;
    o.args = args;
    o.exit_cb = child_exited;
    o.stdio = io;
    o.stdio_count = 3;
    p->data = g;
    g->spawned_ms = now_ms(g);
    r = uv_spawn(agent_loop(g->mod.a), p, &o);
    if (r < 0) {
        set_error(g, "cannot start %s: %s", g->cfg->wireguard_go, uv_strerror(r));
        uv_close((uv_handle_t *)p, child_closed);
        return r;
    }
    g->child = p;
    log_info(MOD, "started %s -f %s (pid %d)", g->cfg->wireguard_go, g->cfg->tunnel_interface,
             p->pid);
    return 0;
}

/* Whether pid is a wireguard-go (so that a pid read from the socket is never some other process
 * after its reuse). */
static bool is_wg_process(pid_t pid)
{
    char path[64], comm[64] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return false;
    if (!fgets(comm, sizeof(comm), f))
        comm[0] = '\0';
    fclose(f);
    return strncmp(comm, "wireguard-go", 12) == 0;
}

/* ---- the link -------------------------------------------------------------------------------- */

/* Brings the interface up with the tunnel's MTU. Returns its index, or -errno. */
static int link_ensure(struct gw *g)
{
    struct ifreq ifr;
    int fd, r = 0;
    unsigned idx = if_nametoindex(g->cfg->tunnel_interface);

    if (!idx)
        return -errno;
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", g->cfg->tunnel_interface);
    if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
        r = -errno;
        goto out;
    }
    if ((uint32_t)ifr.ifr_mtu != g->self.mtu) {
        log_info(MOD, "%s: MTU %d -> %u", g->cfg->tunnel_interface, ifr.ifr_mtu, g->self.mtu);
        ifr.ifr_mtu = (int)g->self.mtu;
        if (ioctl(fd, SIOCSIFMTU, &ifr) < 0) {
            r = -errno;
            goto out;
        }
    }
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
        r = -errno;
        goto out;
    }
    if (!(ifr.ifr_flags & IFF_UP)) {
        log_info(MOD, "%s: up", g->cfg->tunnel_interface);
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
            r = -errno;
            goto out;
        }
    }
out:
    close(fd);
    return r < 0 ? r : (int)idx;
}

/* The MTU of the interface that holds the endpoint's address (the underlay), else 1500. */
static unsigned underlay_mtu(const struct sockaddr_storage *ep)
{
    struct ifaddrs *ifa = NULL, *i;
    unsigned mtu = 0;

    if (getifaddrs(&ifa) < 0)
        return 1500;
    for (i = ifa; i && !mtu; i = i->ifa_next) {
        struct ifreq ifr;
        int fd;
        bool same = false;

        if (!i->ifa_addr || i->ifa_addr->sa_family != ep->ss_family)
            continue;
        if (ep->ss_family == AF_INET)
            same = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
                   ((const struct sockaddr_in *)ep)->sin_addr.s_addr;
        else
            same = memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                          &((const struct sockaddr_in6 *)ep)->sin6_addr, 16) == 0;
        if (!same || (fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
            continue;
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->ifa_name);
        if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
            mtu = (unsigned)ifr.ifr_mtu;
        close(fd);
    }
    freeifaddrs(ifa);
    return mtu ? mtu : 1500;
}

/* ---- nftables -------------------------------------------------------------------------------- */

static void sha256(const char *s, size_t n, uint8_t out[32])
{
    unsigned int len = 32;

    EVP_Digest(s, n, out, &len, EVP_sha256(), NULL);
}

/* The table of family (4 or 6) as the kernel lists it: its digest; false when there is none. */
static bool nft_read(struct gw *g, int family, uint8_t digest[32])
{
    const char *out;
    int r;

    nft_ctx_buffer_output(g->nft);
    nft_ctx_buffer_error(g->nft);
    r = nft_run_cmd_from_buffer(g->nft,
                                family == 4 ? "list table ip cliqo\n" : "list table ip6 cliqo\n");
    out = nft_ctx_get_output_buffer(g->nft);
    if (r == 0 && out && strlen(out) <= NFT_LIST_MAX)
        sha256(out, strlen(out), digest);
    nft_ctx_unbuffer_output(g->nft);
    nft_ctx_unbuffer_error(g->nft);
    return r == 0;
}

static int nft_apply(struct gw *g, const char *text, char *err, size_t errlen)
{
    const char *e;
    int r;

    nft_ctx_buffer_error(g->nft);
    r = nft_run_cmd_from_buffer(g->nft, text);
    e = nft_ctx_get_error_buffer(g->nft);
    if (r != 0)
        snprintf(err, errlen, "libnftables: %.200s", e && *e ? e : "failed");
    nft_ctx_unbuffer_error(g->nft);
    return r == 0 ? 0 : -EIO;
}

/* Makes table cliqo of family hold exactly the peers installed (none: no table). Applies only when
 * what is wanted or what the kernel holds changed since the last transaction. */
static int nft_reconcile(struct gw *g, int family, char *err, size_t errlen)
{
    struct natr_peer *peers = x_calloc(g->nwants ? g->nwants : 1, sizeof(*peers));
    const struct cidr *local = NULL;
    struct sbuf text;
    uint8_t want[32], seen[32];
    size_t n = 0;
    bool exists;
    int r = 0, fi = family == 4 ? 0 : 1;

    if (!peers)
        return -ENOMEM;
    sbuf_init(&text, NFT_LIST_MAX);
    for (size_t i = 0; i < g->nwants; i++) {
        if (!g->wants[i].install || g->wants[i].net.local.family != family)
            continue;
        local = &g->wants[i].net.local;
        peers[n++] = g->wants[i].net.nat;
    }
    memset(seen, 0, sizeof(seen));
    exists = nft_read(g, family, seen);
    if (n == 0) {
        if (exists) {
            log_info(MOD, "nftables: no peer of IPv%d: removing table cliqo", family);
            r = natr_remove(family, &text);
            if (r == 0)
                r = nft_apply(g, sbuf_str(&text), err, errlen);
        }
        g->nft_known[fi] = false;
        goto out;
    }
    r = natr_ruleset(family, g->cfg->tunnel_interface, local, peers, n, &text, err, errlen);
    if (r < 0)
        goto out;
    sha256(sbuf_str(&text), sbuf_len(&text), want);
    if (exists && g->nft_known[fi] && memcmp(want, g->nft_want[fi], 32) == 0 &&
        memcmp(seen, g->nft_seen[fi], 32) == 0)
        goto out;
    log_info(MOD, "nftables: table cliqo (IPv%d) %s for %zu peers", family,
             !exists            ? "created"
             : g->nft_known[fi] ? "changed"
                                : "replaced (after a start)",
             n);
    r = nft_apply(g, sbuf_str(&text), err, errlen);
    if (r == 0 && nft_read(g, family, g->nft_seen[fi])) {
        memcpy(g->nft_want[fi], want, 32);
        g->nft_known[fi] = true;
    } else {
        g->nft_known[fi] = false;
    }
out:
    sbuf_done(&text);
    x_free(peers);
    return r;
}

/* ---- routes ---------------------------------------------------------------------------------- */

static int routes_reconcile(struct gw *g, int family, int ifindex, char *err, size_t errlen)
{
    struct rt_route *want = x_calloc(g->nwants ? g->nwants : 1, sizeof(*want));
    struct rt_route *have = x_calloc(RT_MAX_ROUTES, sizeof(*have));
    const struct rt_route **add = NULL, **del = NULL;
    size_t nwant = 0, nadd = 0, ndel = 0;
    uint8_t msg[RT_MSG_MAX];
    int nhave = 0, r = 0;

    if (!want || !have)
        goto nomem;
    for (size_t i = 0; i < g->nwants; i++) {
        if (!g->wants[i].install || g->wants[i].net.nat.seen_here.family != family)
            continue;
        want[nwant].dst = g->wants[i].net.nat.seen_here;
        want[nwant].oif = (uint32_t)ifindex;
        want[nwant].mtu = g->self.mtu;
        nwant++;
    }
    nhave = rt_sock_dump(g->rtfd, ++g->seq, family, 0, have, RT_MAX_ROUTES);
    if (nhave < 0) {
        snprintf(err, errlen, "route dump: %s", strerror(-nhave));
        r = nhave;
        goto out;
    }
    add = x_calloc(nwant + 1, sizeof(*add));
    del = x_calloc((size_t)nhave + 1, sizeof(*del));
    if (!add || !del)
        goto nomem;
    rt_plan(want, nwant, have, (size_t)nhave, add, &nadd, del, &ndel);
    for (size_t i = 0; r == 0 && i < ndel + nadd; i++) {
        const struct rt_route *rt = i < ndel ? del[i] : add[i - ndel];
        char t[CIDR_STR_MAX];
        uint32_t seq = ++g->seq;
        int len = i < ndel ? rt_msg_del(rt, seq, msg, sizeof(msg))
                           : rt_msg_new(rt, seq, msg, sizeof(msg));

        cidr_format(&rt->dst, t, sizeof(t));
        r = len < 0 ? len : rt_sock_apply(g->rtfd, msg, (size_t)len, seq);
        if (r == -ESRCH && i < ndel)
            r = 0; /* gone already */
        if (r < 0)
            snprintf(err, errlen, "route %s %s: %s", i < ndel ? "delete" : "add", t, strerror(-r));
        else
            log_info(MOD, "route %s dev %s proto %d: %s", t, g->cfg->tunnel_interface,
                     RT_PROTO_CLIQO, i < ndel ? "deleted" : "added");
    }
    goto out;
nomem:
    r = -ENOMEM;
    snprintf(err, errlen, "out of memory");
out:
    x_free(add);
    x_free(del);
    x_free(want);
    x_free(have);
    return r;
}

/* ---- the device ------------------------------------------------------------------------------ */

static bool allowed_equal(const struct wg_peer *p, const struct cidr *c)
{
    return p->nallowed == 1 && cidr_equal(&p->allowed[0], c);
}

static bool endpoint_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    char x[WG_ENDPOINT_MAX], y[WG_ENDPOINT_MAX];

    return wg_endpoint_format(a, x, sizeof(x)) > 0 && wg_endpoint_format(b, y, sizeof(y)) > 0 &&
           strcmp(x, y) == 0;
}

/* The set request that turns dev into what is wanted: the device's lines when its key or port
 * differ, each wanted peer that is missing or different, each other peer removed. With ks (the
 * kernel), the same into ks and ops (room for g->nwants + dev->npeers) instead of the lines.
 * Returns the number of changes (0: nothing to send) or a negative errno. */
static int device_plan(struct gw *g, const struct wg_device *dev, char *devlines, size_t devsize,
                       struct sbuf *peers, struct wgnl_set *ks, struct wgnl_peer_op *ops)
{
    uint16_t port = ntohs(g->self.endpoint.ss_family == AF_INET6
                              ? ((struct sockaddr_in6 *)&g->self.endpoint)->sin6_port
                              : ((struct sockaddr_in *)&g->self.endpoint)->sin_port);
    uint16_t ka = (uint16_t)(g->cfg->wg_keepalive_ms / 1000);
    int changes = 0, r;

    devlines[0] = '\0';
    if (!dev->has_private || !wg_key_equal(&dev->priv, &g->priv) || dev->listen_port != port) {
        struct wg_device d;

        memset(&d, 0, sizeof(d));
        d.has_private = true;
        d.priv = g->priv;
        d.listen_port = port;
        if (ks) {
            ks->set_device = ks->has_private = true;
            ks->priv = g->priv;
            ks->listen_port = port;
            r = 0;
        } else {
            r = wg_uapi_device_lines(&d, false, devlines, devsize);
        }
        wg_key_wipe(&d.priv);
        if (r < 0)
            return r;
        log_info(MOD, "device %s: private key and listen port %u set", g->cfg->tunnel_interface,
                 port);
        changes++;
    }
    for (size_t i = 0; i < g->nwants; i++) {
        const struct want *w = &g->wants[i];
        const struct wg_peer *have = NULL;
        struct wg_peer p;

        if (!w->install)
            continue;
        for (size_t j = 0; j < dev->npeers && !have; j++)
            if (wg_key_equal(&dev->peers[j].pub, &w->tun.pub))
                have = &dev->peers[j];
        if (have && allowed_equal(have, &w->net.nat.seen_here) && have->keepalive_s == ka &&
            endpoint_equal(&have->endpoint, &w->tun.endpoint))
            continue;
        memset(&p, 0, sizeof(p));
        p.pub = w->tun.pub;
        p.endpoint = w->tun.endpoint;
        p.keepalive_s = ka;
        p.allowed[0] = w->net.nat.seen_here;
        p.nallowed = 1;
        if (ks)
            ops[ks->nops++] = (struct wgnl_peer_op){.peer = p};
        else
            r = wg_uapi_peer_lines(&p, peers);
        if (!ks && r < 0)
            return r;
        log_info(MOD, "device %s: peer %s %s", g->cfg->tunnel_interface, w->id,
                 have ? "updated" : "added");
        changes++;
    }
    for (size_t j = 0; j < dev->npeers; j++) {
        bool wanted = false;
        char k[WG_KEY_B64_LEN + 1];

        for (size_t i = 0; i < g->nwants && !wanted; i++)
            wanted = g->wants[i].install && wg_key_equal(&dev->peers[j].pub, &g->wants[i].tun.pub);
        if (wanted)
            continue;
        if (ks)
            ops[ks->nops++] = (struct wgnl_peer_op){.peer.pub = dev->peers[j].pub, .remove = true};
        else
            r = wg_uapi_remove_lines(&dev->peers[j].pub, peers);
        if (!ks && r < 0)
            return r;
        wg_key_format(&dev->peers[j].pub, k);
        log_info(MOD, "device %s: peer with key %s removed", g->cfg->tunnel_interface, k);
        changes++;
    }
    return changes;
}

/* The phase of an installed peer from what the device says of it. */
static void peer_phase(struct want *w, const struct wg_device *dev)
{
    int64_t now = (int64_t)time(NULL);

    for (size_t j = 0; j < dev->npeers; j++) {
        const struct wg_peer *p = &dev->peers[j];

        if (!wg_key_equal(&p->pub, &w->tun.pub))
            continue;
        if (p->last_handshake_s > 0 && now - p->last_handshake_s < REJECT_AFTER_S) {
            snprintf(w->phase, sizeof(w->phase), DPO_PHASE_UP);
            w->message[0] = '\0';
        } else {
            snprintf(w->phase, sizeof(w->phase), DPO_PHASE_PENDING);
            snprintf(w->message, sizeof(w->message), "%s",
                     p->last_handshake_s ? "no handshake for 180 s or more"
                                         : "no handshake with the peer yet");
        }
        return;
    }
    snprintf(w->phase, sizeof(w->phase), DPO_PHASE_PENDING);
    snprintf(w->message, sizeof(w->message), "not configured on the device yet");
}

/* ---- what is wanted -------------------------------------------------------------------------- */

struct collect {
    struct gw *g;
    const char *self;
};

static void collect_fc(json_t *fc, void *data)
{
    struct collect *c = data;
    struct gw *g = c->g;
    const char *id, *tns;
    char name[96], reason[DPO_REASON_MAX] = "";
    struct want *w;
    int r;

    if (!dpp_fc_peer(fc, &id, &tns) || strlen(tns) >= sizeof(w->ns) ||
        strlen(id) >= sizeof(w->id) || g->nwants >= MAX_PEERS)
        return;
    w = &g->wants[g->nwants];
    memset(w, 0, sizeof(*w));
    snprintf(w->id, sizeof(w->id), "%s", id);
    snprintf(w->ns, sizeof(w->ns), "%s", tns);
    snprintf(name, sizeof(name), DPO_TEP_PREFIX "%s", id);
    w->tep = inf_get(g->teps, tns, name);
    w->has_tep = w->tep != NULL;
    g->nwants++;
    if (!w->tep)
        return; /* nothing to connect to, nothing to report on */
    w->created = json_string_value(
        json_object_get(json_object_get(w->tep, "metadata"), "creationTimestamp"));
    snprintf(w->phase, sizeof(w->phase), DPO_PHASE_ERROR);
    w->err_reason = ERR_REFUSED;
    if (dpo_tep_parse(w->tep, c->self, &w->tun, reason, sizeof(reason)) < 0) {
        snprintf(w->message, sizeof(w->message), "refused: %s", reason);
        return;
    }
    r = dpp_peer_net(g->ncs, tns, id, &w->net, reason, sizeof(reason));
    if (r < 0) {
        w->err_reason = ERR_NETCFG;
        snprintf(w->phase, sizeof(w->phase), "%s",
                 r == -EAGAIN ? DPO_PHASE_PENDING : DPO_PHASE_ERROR);
        snprintf(w->message, sizeof(w->message), "%s", reason);
        return;
    }
    w->install = true;
}

/* Decides g->wants: every peered peer with networking enabled, and whether it is installed. */
static int collect(struct gw *g)
{
    struct collect c = {.g = g, .self = self_id(g)};
    struct dpo_claim *claims;
    bool *refused;
    char(*reasons)[DPO_REASON_MAX];
    size_t n = 0;

    wants_clear(g);
    if (!c.self)
        return -EAGAIN;
    g->wants = x_calloc(MAX_PEERS, sizeof(*g->wants));
    claims = x_calloc(MAX_PEERS, sizeof(*claims));
    refused = x_calloc(MAX_PEERS, sizeof(*refused));
    reasons = x_calloc(MAX_PEERS, sizeof(*reasons));
    if (!g->wants || !claims || !refused || !reasons) {
        x_free(claims);
        x_free(refused);
        x_free(reasons);
        return -ENOMEM;
    }
    inf_foreach(g->fcs, collect_fc, &c);
    /* keys: ours and each other's */
    for (size_t i = 0; i < g->nwants; i++) {
        if (!g->wants[i].install)
            continue;
        claims[n].peer = g->wants[i].id;
        claims[n].created = g->wants[i].created;
        claims[n].key = g->wants[i].tun.pub;
        n++;
    }
    dpo_tep_resolve(claims, n, &g->self.pub, refused, reasons);
    n = 0;
    for (size_t i = 0; i < g->nwants; i++) {
        struct want *w = &g->wants[i];

        if (!w->install)
            continue;
        if (refused[n]) {
            w->install = false;
            w->err_reason = ERR_REFUSED;
            snprintf(w->phase, sizeof(w->phase), DPO_PHASE_ERROR);
            snprintf(w->message, sizeof(w->message), "refused: %s", reasons[n]);
        }
        n++;
    }
    /* one local pod CIDR per family (the table has one), no two peers in overlapping blocks */
    for (size_t i = 0; i < g->nwants; i++) {
        struct want *w = &g->wants[i];

        for (size_t j = 0; w->install && j < i; j++) {
            const struct want *o = &g->wants[j];

            if (o->install && dpp_conflicts(&o->net, &w->net)) {
                w->install = false;
                w->err_reason = ERR_NETCFG;
                snprintf(w->phase, sizeof(w->phase), DPO_PHASE_ERROR);
                snprintf(w->message, sizeof(w->message),
                         "its NetworkConfig conflicts with peer %s's (local pod CIDR or blocks)",
                         o->id);
            }
        }
    }
    x_free(claims);
    x_free(refused);
    x_free(reasons);
    return 0;
}

/* ---- metrics --------------------------------------------------------------------------------- */

static int metrics_init(struct gw *g, struct metrics_registry *m)
{
    static const char *const peer[] = {"peer", NULL}, *const pd[] = {"peer", "direction", NULL},
                             *const pr[] = {"peer", "reason", NULL};
    int r;

    r = metrics_family_new(m, METRICS_GAUGE, "cliqo_tunnel_up",
                           "1 while the tunnel to the peer is Up (a WireGuard handshake within "
                           "180 s), else 0.",
                           peer, NULL, 0, &g->m_up);
    if (r == 0)
        r = metrics_family_new(m, METRICS_GAUGE, "cliqo_tunnel_last_handshake_seconds",
                               "When the last WireGuard handshake with the peer completed (Unix "
                               "time; 0: never).",
                               peer, NULL, 0, &g->m_handshake);
    if (r == 0)
        r = metrics_family_new(m, METRICS_COUNTER, "cliqo_tunnel_bytes_total",
                               "Bytes through the tunnel to the peer as WireGuard counts them "
                               "(direction rx or tx); they restart from 0 with its peer entry.",
                               pd, NULL, 0, &g->m_bytes);
    if (r == 0)
        r = metrics_family_new(m, METRICS_COUNTER, "cliqo_tunnel_errors_total",
                               "Errors reported in the status of the peer's TunnelEndpoint: each "
                               "new one (reason refused, network_config or device).",
                               pr, NULL, 0, &g->m_errors);
    if (r < 0)
        return r;
    metrics_family_set_max_series(g->m_up, MAX_PEERS);
    metrics_family_set_max_series(g->m_handshake, MAX_PEERS);
    metrics_family_set_max_series(g->m_bytes, 2 * MAX_PEERS);
    metrics_family_set_max_series(g->m_errors, 3 * MAX_PEERS);
    g->mpeers = x_calloc(MAX_PEERS, sizeof(*g->mpeers));
    return g->mpeers ? 0 : -ENOMEM;
}

static void metrics_forget(struct gw *g, const char *id)
{
    struct metrics_family *fams[] = {g->m_up, g->m_handshake, g->m_bytes, g->m_errors};

    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
        metrics_family_remove(fams[i], "peer", id);
}

/* The series of every peer with a TunnelEndpoint, from this pass (its IDs were validated in
 * collect_fc); the series of the peers that went are removed. */
static void metrics_update(struct gw *g)
{
    for (size_t j = 0; j < g->nmpeers; j++)
        g->mpeers[j].seen = false;
    for (size_t i = 0; i < g->nwants; i++) {
        const struct want *w = &g->wants[i];
        struct mpeer *mp = NULL;
        bool error = strcmp(w->phase, DPO_PHASE_ERROR) == 0;

        if (!w->has_tep)
            continue;
        for (size_t j = 0; j < g->nmpeers && !mp; j++)
            if (strcmp(g->mpeers[j].id, w->id) == 0)
                mp = &g->mpeers[j];
        if (!mp) {
            if (g->nmpeers >= MAX_PEERS)
                continue;
            mp = &g->mpeers[g->nmpeers++];
            memset(mp, 0, sizeof(*mp));
            snprintf(mp->id, sizeof(mp->id), "%s", w->id);
        }
        if (mp->seen)
            continue; /* one ID twice (two ForeignClusters): the first one's */
        mp->seen = true;
        metrics_set(g->m_up, (const char *const[]){w->id},
                    strcmp(w->phase, DPO_PHASE_UP) == 0 ? 1 : 0);
        metrics_set(g->m_handshake, (const char *const[]){w->id}, (double)w->handshake);
        if (w->rx < mp->rx || w->tx < mp->tx) /* a new peer entry: its counts restart */
            metrics_family_remove(g->m_bytes, "peer", w->id);
        metrics_set(g->m_bytes, (const char *const[]){w->id, "rx"}, (double)w->rx);
        metrics_set(g->m_bytes, (const char *const[]){w->id, "tx"}, (double)w->tx);
        if (error && (strcmp(mp->phase, DPO_PHASE_ERROR) != 0 || strcmp(mp->message, w->message)))
            metrics_inc(g->m_errors,
                        (const char *const[]){w->id, w->err_reason ? w->err_reason : ERR_DEVICE});
        mp->rx = w->rx;
        mp->tx = w->tx;
        snprintf(mp->phase, sizeof(mp->phase), "%s", w->phase);
        snprintf(mp->message, sizeof(mp->message), "%s", w->message);
    }
    for (size_t j = 0; j < g->nmpeers;) {
        if (g->mpeers[j].seen) {
            j++;
            continue;
        }
        metrics_forget(g, g->mpeers[j].id);
        g->mpeers[j] = g->mpeers[--g->nmpeers];
    }
}

/* ---- the pass -------------------------------------------------------------------------------- */

static void rec_release(struct ctl_rec *h)
{
    (void)h;
}

static void after_key_create(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err == -EEXIST) { /* another replica made it first: read it */
        wg_key_wipe(&r->g->priv);
        r->g->have_key = false;
        ctl_rec_end(&r->h, CTL_NOW);
        return;
    }
    if (r->h.ch.last.err < 0) {
        wg_key_wipe(&r->g->priv);
        r->g->have_key = false;
        set_error(r->g, "cannot create Secret %s/%s: %s", DPO_KEY_NAMESPACE, DPO_KEY_SECRET,
                  r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    log_info(MOD, "made the cluster's WireGuard key (Secret %s/%s)", DPO_KEY_NAMESPACE,
             DPO_KEY_SECRET);
    step_record(r);
}

static void create_key(struct rec *r)
{
    struct gw *g = r->g;
    char b64[WG_KEY_B64_LEN + 1], *data = NULL;
    json_t *secret;

    if (wg_key_generate(&g->priv) < 0) {
        set_error(g, "cannot generate a WireGuard key");
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    wg_key_format(&g->priv, b64);
    if (peer_base64_encode(b64, WG_KEY_B64_LEN, &data) < 0) {
        OPENSSL_cleanse(b64, sizeof(b64));
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    OPENSSL_cleanse(b64, sizeof(b64));
    secret = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:s,s:{s:s}}", "apiVersion", "v1", "kind",
                       "Secret", "metadata", "name", DPO_KEY_SECRET, "namespace", DPO_KEY_NAMESPACE,
                       "labels", "app.kubernetes.io/part-of", "cliqo", "type", "Opaque", "data",
                       DPO_KEY_FIELD, data);
    OPENSSL_cleanse(data, strlen(data));
    x_free(data);
    g->have_key = true;
    r->h.ch.next = after_key_create;
    if (!secret || kapi_create(agent_kube(g->mod.a), &kapi_secrets, DPO_KEY_NAMESPACE, secret,
                               ctl_call_cb, r) < 0) {
        g->have_key = false;
        ctl_rec_end(&r->h, CTL_RETRY);
    }
    if (secret) {
        /* our copy of the key's encoding goes at once (jansson frees it without wiping) */
        json_t *d = json_object_get(secret, "data");

        json_object_del(d, DPO_KEY_FIELD);
        json_decref(secret);
    }
}

static void after_key_get(void *owner)
{
    struct rec *r = owner;
    struct gw *g = r->g;
    const char *v;
    char *text = NULL;
    size_t len = 0;
    int rc;

    if (r->h.ch.last.err == -ENOENT) {
        create_key(r);
        return;
    }
    if (r->h.ch.last.err < 0) {
        set_error(g, "cannot read Secret %s/%s: %s", DPO_KEY_NAMESPACE, DPO_KEY_SECRET,
                  r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    v = json_string_value(
        json_object_get(json_object_get(r->h.ch.last.body, "data"), DPO_KEY_FIELD));
    rc = v ? peer_base64_decode(v, 64, &text, &len) : -EINVAL;
    if (rc == 0 && (len != WG_KEY_B64_LEN || wg_key_parse(text, &g->priv) < 0))
        rc = -EINVAL;
    if (text) {
        OPENSSL_cleanse(text, len);
        x_free(text);
    }
    if (v)
        OPENSSL_cleanse((char *)v, strlen(v)); /* our copy of the answer */
    if (rc < 0 || wg_key_is_zero(&g->priv)) {
        set_error(g,
                  "Secret %s: data.%s is not a WireGuard private key (base64 of 32 bytes); "
                  "delete the Secret to make a new key",
                  DPO_KEY_SECRET, DPO_KEY_FIELD);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    g->have_key = true;
    log_info(MOD, "read the cluster's WireGuard key (Secret %s/%s)", DPO_KEY_NAMESPACE,
             DPO_KEY_SECRET);
    step_record(r);
}

static void after_record(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0) {
        set_error(r->g, "cannot write ConfigMap %s: %s", DPO_GW_CONFIGMAP, r->h.ch.last.message);
        r->g->record_sig[0] = '\0';
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    log_info(MOD, "published the gateway's record (ConfigMap %s: %s)", DPO_GW_CONFIGMAP,
             r->g->record_sig);
    step_device(r);
}

/* The record the agent publishes to the peers: written when it changed or every RECORD_MS. */
static void step_record(struct rec *r)
{
    struct gw *g = r->g;
    char sig[sizeof(g->record_sig)], key[WG_KEY_B64_LEN + 1], ep[WG_ENDPOINT_MAX];
    json_t *cm;

    if (wg_key_public(&g->priv, &g->self.pub) < 0) {
        set_error(g, "cannot derive the public key");
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    wg_key_format(&g->self.pub, key);
    wg_endpoint_format(&g->self.endpoint, ep, sizeof(ep));
    snprintf(sig, sizeof(sig), "%s %s %u", key, ep, g->self.mtu);
    if (strcmp(sig, g->record_sig) == 0 && now_ms(g) - g->record_ms < RECORD_MS) {
        step_device(r);
        return;
    }
    cm = dpo_gateway_build(agent_namespace(g->mod.a), &g->self);
    snprintf(g->record_sig, sizeof(g->record_sig), "%s", sig);
    g->record_ms = now_ms(g);
    r->h.ch.next = after_record;
    if (!cm || kapi_apply(agent_kube(g->mod.a), &kapi_configmaps, agent_namespace(g->mod.a),
                          DPO_GW_CONFIGMAP, NULL, cm, "cliqo-gateway", true, ctl_call_cb, r) < 0) {
        g->record_sig[0] = '\0';
        ctl_rec_end(&r->h, CTL_RETRY);
    }
    json_decref(cm);
}

/* The kernel's counterpart of the set request below: planned as for wireguard-go, sent over
 * generic netlink, and *dev read again after a change. Returns >= 0 or a negative errno (err). */
static int kernel_set(struct gw *g, struct wg_device *dev, char *err, size_t errlen)
{
    struct wgnl_set ks = {.ifname = g->cfg->tunnel_interface};
    struct wgnl_peer_op *ops = x_calloc(g->nwants + dev->npeers + 1, sizeof(*ops));
    char unused[8];
    int rc;

    if (!ops)
        return -ENOMEM;
    ks.ops = ops;
    rc = device_plan(g, dev, unused, sizeof(unused), NULL, &ks, ops);
    if (rc > 0) {
        rc = wgnl_sock_set(g->wgfd, g->wgfam, &g->wgseq, &ks);
        if (rc < 0)
            snprintf(err, errlen, "kernel WireGuard: set: %s", strerror(-rc));
        wg_device_clear(dev);
        if (rc == 0)
            rc = kernel_get(g, dev, err, errlen);
    }
    wg_key_wipe(&ks.priv);
    x_free(ops);
    return rc;
}

/* The device, its link, the routes and the table (blocking kernel calls, see the top). */
static void step_device(struct rec *r)
{
    struct gw *g = r->g;
    struct wg_device dev;
    char err[256] = "", devlines[256];
    struct sbuf peers;
    int rc, ifindex;

    memset(&dev, 0, sizeof(dev));
    g->changed = false;
    g->plan_ms = now_ms(g);
    rc = collect(g);
    if (rc < 0) {
        ctl_rec_end(&r->h, rc == -EAGAIN ? CTL_WAIT : CTL_RETRY);
        return;
    }
    rc = dev_get(g, &dev, err, sizeof(err));
    if (g->wgfd < 0 && (rc == -ENOENT || rc == -ECONNREFUSED)) {
        if (!g->child && now_ms(g) - g->spawned_ms >= RESPAWN_MS)
            spawn_wg(g);
        ctl_rec_end_after(&r->h, WAIT_WG_MS);
        return;
    }
    if (rc < 0 && g->wgfd >= 0) {
        set_error(g, "kernel WireGuard %s: get: %s", g->cfg->tunnel_interface, err);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (rc < 0) {
        set_error(g, "wireguard-go (%s): get: %s", g->sock, err);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (!g->child && g->wg_pid)
        log_debug(MOD, "using the running wireguard-go (pid %d)", (int)g->wg_pid);
    sbuf_init(&peers, WG_UAPI_MAX);
    if (g->wgfd >= 0) {
        rc = kernel_set(g, &dev, err, sizeof(err));
    } else if ((rc = device_plan(g, &dev, devlines, sizeof(devlines), &peers, NULL, NULL)) > 0) {
        const char *parts[] = {WG_UAPI_SET, devlines, sbuf_str(&peers), WG_UAPI_END};
        char *ans = NULL;
        size_t len;

        rc = uapi_call(g, parts, 4, &ans, &len);
        if (rc == 0)
            rc = wg_uapi_set_result(ans, len);
        x_free(ans);
        if (rc < 0)
            snprintf(err, sizeof(err), "wireguard-go: set: %s", strerror(-rc));
        wg_device_clear(&dev);
        if (rc == 0)
            rc = uapi_get(g, &dev, err, sizeof(err));
    }
    OPENSSL_cleanse(devlines, sizeof(devlines));
    sbuf_done(&peers);
    ifindex = rc < 0 ? rc : link_ensure(g);
    if (rc >= 0 && ifindex < 0) {
        rc = ifindex;
        snprintf(err, sizeof(err), "interface %s: %s", g->cfg->tunnel_interface, strerror(-rc));
    }
    for (int fam = 4; rc >= 0 && fam <= 6; fam += 2)
        rc = routes_reconcile(g, fam, ifindex, err, sizeof(err));
    for (int fam = 4; rc >= 0 && fam <= 6; fam += 2)
        rc = nft_reconcile(g, fam, err, sizeof(err));
    for (size_t i = 0; i < g->nwants; i++) {
        struct want *w = &g->wants[i];

        if (!w->install)
            continue;
        if (rc < 0) {
            w->err_reason = ERR_DEVICE;
            snprintf(w->phase, sizeof(w->phase), DPO_PHASE_ERROR);
            snprintf(w->message, sizeof(w->message), "%s", err);
        } else {
            peer_phase(w, &dev);
        }
        for (size_t j = 0; j < dev.npeers; j++)
            if (wg_key_equal(&dev.peers[j].pub, &w->tun.pub)) {
                w->handshake = dev.peers[j].last_handshake_s;
                w->rx = dev.peers[j].rx_bytes;
                w->tx = dev.peers[j].tx_bytes;
            }
    }
    if (rc < 0)
        set_error(g, "%s", err);
    else
        g->last_error[0] = '\0';
    wg_device_clear(&dev);
    metrics_update(g);
    g->next_status = 0;
    step_status(r);
}

static struct written *written_find(struct gw *g, const char *ns, const char *id, bool make)
{
    struct written *w;

    for (w = g->written; w; w = w->next)
        if (strcmp(w->id, id) == 0 && strcmp(w->ns, ns) == 0)
            return w;
    if (!make || !(w = x_calloc(1, sizeof(*w))))
        return NULL;
    snprintf(w->id, sizeof(w->id), "%s", id);
    snprintf(w->ns, sizeof(w->ns), "%s", ns);
    w->next = g->written;
    g->written = w;
    return w;
}

static void after_status(void *owner)
{
    struct rec *r = owner;
    struct gw *g = r->g;
    struct want *w = &g->wants[g->next_status];
    struct written *s = written_find(g, w->ns, w->id, true);

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        log_warn(MOD, "peer %s: cannot write the status of its TunnelEndpoint: %s", w->id,
                 r->h.ch.last.message);
    } else if (s) {
        if (strcmp(s->phase, w->phase) != 0 || strcmp(s->message, w->message) != 0) {
            log_info(MOD, "peer %s: tunnel %s%s%s", w->id, w->phase, w->message[0] ? ": " : "",
                     w->message);
            s->phase_ms = now_ms(g);
        }
        snprintf(s->phase, sizeof(s->phase), "%s", w->phase);
        snprintf(s->message, sizeof(s->message), "%s", w->message);
        s->handshake = w->handshake;
        s->rx = w->rx;
        s->tx = w->tx;
        s->at_ms = now_ms(g);
    }
    g->next_status++;
    step_status(r);
}

/* The statuses that changed, one write after the other; then the pass ends. */
static void step_status(struct rec *r)
{
    struct gw *g = r->g;
    bool soon = false;
    /* The statistics alone (handshake, bytes) of a peer are written at most every STATUS_MIN_MS,
     * and no more often than one peer's every STATS_PEER_MS in all: every peer's bytes change all
     * the time (keepalives), and a thousand peers would otherwise ask the API server for a hundred
     * writes a second. A change of phase or message is written at once. */
    uint64_t stats_ms = g->nwants * STATS_PEER_MS;

    if (stats_ms < STATUS_MIN_MS)
        stats_ms = STATUS_MIN_MS;
    for (; g->next_status < g->nwants; g->next_status++) {
        struct want *w = &g->wants[g->next_status];
        struct written *s = written_find(g, w->ns, w->id, false);
        char name[96], when[40];
        json_t *st;

        if (!w->has_tep)
            continue;
        if (s)
            s->seen = true;
        if (s && strcmp(s->phase, w->phase) == 0 && strcmp(s->message, w->message) == 0 &&
            ((s->handshake == w->handshake && s->rx == w->rx && s->tx == w->tx) ||
             now_ms(g) - s->at_ms < stats_ms))
            continue;
        if (g->changed && now_ms(g) - g->plan_ms >= SOON_MS) {
            step_device(r); /* objects changed during the writes: the device first */
            return;
        }
        if (w->handshake > 0)
            rfc3339_format(w->handshake, 0, 0, when, sizeof(when));
        st = json_pack("{s:s,s:o,s:o,s:I,s:I}", "phase", w->phase, "message",
                       w->message[0] ? json_string(w->message) : json_null(), "lastHandshake",
                       w->handshake > 0 ? json_string(when) : json_null(), "rxBytes",
                       (json_int_t)(w->rx > INT64_MAX ? INT64_MAX : w->rx), "txBytes",
                       (json_int_t)(w->tx > INT64_MAX ? INT64_MAX : w->tx));
        snprintf(name, sizeof(name), DPO_TEP_PREFIX "%s", w->id);
        ctl_merge_patch_then(&r->h, &peer_res_tunnelendpoints, w->ns, name, "status",
                             json_pack("{s:o}", "status", st), after_status);
        return;
    }
    /* forget what was written for peers that are gone */
    for (struct written **pp = &g->written; *pp;) {
        struct written *s = *pp;
        bool keep = false;

        for (size_t i = 0; i < g->nwants && !keep; i++)
            keep = strcmp(g->wants[i].id, s->id) == 0 && strcmp(g->wants[i].ns, s->ns) == 0;
        if (keep) {
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        x_free(s);
    }
    /* an error, or a peer installed and waiting for its handshake since less than EAGER_MS:
     * looked at again sooner. A peer that stays Pending longer (unreachable) is looked at every
     * PASS_MS, like the others: with a thousand peers, a pass costs tens of milliseconds. */
    for (size_t i = 0; i < g->nwants && !g->last_error[0] && !soon; i++) {
        const struct want *w = &g->wants[i];
        const struct written *s;

        if (!w->install || strcmp(w->phase, DPO_PHASE_PENDING) != 0)
            continue;
        s = written_find(g, w->ns, w->id, false);
        soon = !s || now_ms(g) - s->phase_ms < EAGER_MS;
    }
    ctl_rec_end_after(&r->h, g->last_error[0] || soon ? SOON_MS : PASS_MS);
}

static void reconcile(struct ctl *c, const char *key)
{
    struct gw *g = ctl_data(c);
    struct rec *r;

    if (!inf_synced(g->fcs) || !inf_synced(g->ncs) || !inf_synced(g->teps) || !inf_synced(g->cms)) {
        ctl_skip(c, key, CTL_WAIT);
        return;
    }
    r = (struct rec *)ctl_rec_begin(c, key);
    if (!r)
        return;
    r->g = g;
    if (g->have_key) {
        step_record(r);
        return;
    }
    r->h.ch.next = after_key_get;
    if (kapi_get(agent_kube(g->mod.a), &kapi_secrets, DPO_KEY_NAMESPACE, DPO_KEY_SECRET,
                 ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

/* ---- handlers and the module ----------------------------------------------------------------- */

static void on_any(struct inf_informer *inf, json_t *obj, void *data)
{
    struct gw *g = data;

    (void)inf;
    (void)obj;
    g->changed = true;
    if (g->mod.ctl)
        ctl_enqueue(g->mod.ctl, KEY);
}

static json_int_t generation(const json_t *obj)
{
    return json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation"));
}

static void on_any_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    struct gw *g = data;
    bool changed = g->changed;

    on_any(inf, new_obj, data);
    /* A TunnelEndpoint whose generation stayed is one whose status changed: the gateway's own
     * write, which changes nothing the device wants. */
    if (inf == g->teps && generation(new_obj) > 0 && generation(new_obj) == generation(old_obj))
        g->changed = changed;
}

int gw_init(struct agent *a)
{
    struct inf_handlers h = {.on_add = on_any, .on_update = on_any_update, .on_delete = on_any};
    struct ctl_options co = {.name = "gateway",
                             .log_module = MOD,
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile,
                             .rec_release = rec_release,
                             .retry_ms = 1000,
                             .wait_ms = 500};
    struct gw *g = ctl_module_new(a, MOD, sizeof(*g));
    int r;

    if (!g)
        return -ENOMEM;
    g->cfg = agent_config(a);
    g->rtfd = -1;
    g->wgfd = -1;
    if (wg_endpoint_parse(g->cfg->gateway_endpoint, &g->self.endpoint) < 0 ||
        !dpo_endpoint_usable(&g->self.endpoint)) {
        log_error(MOD, "--gateway-endpoint %s is not a usable numeric address and port",
                  g->cfg->gateway_endpoint ? g->cfg->gateway_endpoint : "(none)");
        return -EINVAL;
    }
    g->self.mtu = (g->cfg->underlay_mtu ? g->cfg->underlay_mtu : underlay_mtu(&g->self.endpoint)) -
                  DPO_OVERHEAD;
    if (g->self.mtu < DPO_MTU_MIN || g->self.mtu > DPO_MTU_MAX) {
        log_error(MOD, "the tunnel's MTU would be %u (underlay - %d): not in %d..%d", g->self.mtu,
                  DPO_OVERHEAD, DPO_MTU_MIN, DPO_MTU_MAX);
        return -EINVAL;
    }
    snprintf(g->sock, sizeof(g->sock), UAPI_DIR "/%s.sock", g->cfg->tunnel_interface);
    g->nft = nft_ctx_new(NFT_CTX_DEFAULT);
    if (!g->nft)
        return -ENOMEM;
    g->rtfd = rt_sock_open();
    if (g->rtfd < 0) {
        log_error(MOD, "cannot open a rtnetlink socket: %s", strerror(-g->rtfd));
        return g->rtfd;
    }
    kernel_probe(g);
    log_info(MOD, "interface %s, endpoint %s, tunnel MTU %u, keepalive %llu s, socket %s",
             g->cfg->tunnel_interface, g->cfg->gateway_endpoint, g->self.mtu,
             (unsigned long long)(g->cfg->wg_keepalive_ms / 1000), g->sock);
    r = metrics_init(g, agent_metrics(a));
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &h, g, &g->fcs);
    if (r == 0)
        r = agent_informer(a, &peer_res_networkconfigs, NULL, NULL, 0, &h, g, &g->ncs);
    if (r == 0)
        r = agent_informer(a, &peer_res_tunnelendpoints, NULL, NULL, 0, &h, g, &g->teps);
    if (r == 0)
        r = agent_informer(a, &kapi_configmaps, agent_namespace(a), NULL, 0, &h, g, &g->cms);
    if (r == 0)
        r = ctl_new(a, &co, g, &g->mod.ctl);
    return r;
}

int gw_start(struct agent *a)
{
    struct gw *g = agent_module_data(a, MOD);
    int r = ctl_module_start(a, MOD);

    if (r == 0 && g) {
        g->started = true;
        ctl_enqueue(g->mod.ctl, KEY);
    }
    return r;
}

/* Takes the tunnel down: routes, tables, wireguard-go (ours or the one adopted). */
static void teardown(struct gw *g)
{
    char err[256];

    wants_clear(g);
    if (g->rtfd >= 0) {
        for (int fam = 4; fam <= 6; fam += 2)
            if (routes_reconcile(g, fam, 0, err, sizeof(err)) < 0)
                log_warn(MOD, "stopping: %s", err);
    }
    for (int fam = 4; g->nft && fam <= 6; fam += 2)
        if (nft_reconcile(g, fam, err, sizeof(err)) < 0)
            log_warn(MOD, "stopping: %s", err);
    if (g->wgfd >= 0 && g->rtfd >= 0 && if_nametoindex(g->cfg->tunnel_interface)) {
        uint8_t msg[WGNL_MSG_MAX];
        uint32_t seq = ++g->seq;
        int r = wgnl_msg_dellink(g->cfg->tunnel_interface, seq, msg, sizeof(msg));

        if (r >= 0)
            r = rt_sock_apply(g->rtfd, msg, (size_t)r, seq);
        if (r < 0)
            log_warn(MOD, "stopping: cannot delete the link %s: %s", g->cfg->tunnel_interface,
                     strerror(-r));
    }
    if (g->child) {
        log_info(MOD, "stopping wireguard-go (pid %d)", g->child->pid);
        uv_process_kill(g->child, SIGTERM);
        g->child->data = NULL; /* its exit is not ours to handle any more */
        g->child = NULL;
    } else if (g->wg_pid > 0 && is_wg_process(g->wg_pid)) {
        log_info(MOD, "stopping the adopted wireguard-go (pid %d)", (int)g->wg_pid);
        kill(g->wg_pid, SIGTERM);
    }
    g->wg_pid = 0;
    log_info(MOD, "tunnel down: no route, table or WireGuard interface of cliqo left");
}

void gw_stop(struct agent *a)
{
    struct gw *g = agent_module_data(a, MOD);

    ctl_module_stop(a, MOD);
    if (g && g->started) {
        g->started = false;
        teardown(g);
    }
}

void gw_fini(struct agent *a)
{
    struct gw *g = agent_module_data(a, MOD);

    if (!g) {
        ctl_module_fini(a, MOD);
        return;
    }
    wants_clear(g);
    x_free(g->mpeers);
    while (g->written) {
        struct written *s = g->written;

        g->written = s->next;
        x_free(s);
    }
    if (g->child) {
        uv_process_kill(g->child, SIGTERM);
        g->child->data = NULL;
        g->child = NULL;
    }
    if (g->nft)
        nft_ctx_free(g->nft);
    if (g->rtfd >= 0)
        close(g->rtfd);
    if (g->wgfd >= 0)
        close(g->wgfd);
    wg_key_wipe(&g->priv);
    ctl_module_fini(a, MOD);
}
