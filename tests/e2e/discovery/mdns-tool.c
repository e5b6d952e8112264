/* cliqo-mdns-tool: a test host's mDNS actor for the discovery e2e tests and benchmarks.
 *
 *   announce  publishes one or more cliqo-like DNS-SD services with cliqo's own responder
 *             (src/discovery/mdns.c on libavahi-core): a spoofer, a name-conflict maker, a
 *             publisher of malformed TXT content, or 100 clusters for the memory benchmark. It
 *             prints "established <instance>" / "renamed <instance>" lines and runs until SIGTERM
 *             (goodbye packets) or SIGKILL (none).
 *   inject    sends hand-made malformed mDNS packets (bad DNS wire format) to 224.0.0.251:5353 on
 *             an interface, to check that receivers reject them and change nothing.
 *   browse    prints "found <ms> <instance> <id>" / "removed <ms> <instance>" lines (Unix ms) for a
 *             service type until SIGTERM or --exit-after found instances.
 *
 * It is a test tool: it writes DNS packets by hand only to make them wrong on purpose. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/strutil.h"
#include "discovery/mdns.h"
#include "discovery/record.h"

#define MAX_PUB 512
#define MAX_TXT 16
#define MAX_IFS 4

static uv_loop_t *loop;
static uv_signal_t sigterm, sigint;
static struct mdns *pubs[MAX_PUB];
static size_t npubs;
static struct mdns *browser;
static unsigned long exit_after, found_count;
static uv_timer_t quit;

static void usage(void)
{
    fprintf(
        stderr,
        "usage: cliqo-mdns-tool announce --id ID [--prefix P] [--name N] [--url U] [--cahash H]\n"
        "                        [--txt K=V]... [--count N] [--ttl S] [--port P]\n"
        "                        [--type T] [--domain D] [--iface IF]... [--host H]\n"
        "       cliqo-mdns-tool inject --iface IF [--kind K|all] [--count N]\n"
        "       cliqo-mdns-tool browse [--type T] [--domain D] [--iface IF]... [--exit-after N]\n");
    exit(2);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned long num(const char *s, unsigned long max)
{
    uint64_t v;

    if (parse_u64(s, max, &v) < 0) {
        fprintf(stderr, "cliqo-mdns-tool: '%s' is not a number up to %lu\n", s, max);
        exit(2);
    }
    return (unsigned long)v;
}

static void on_signal(uv_signal_t *s, int sig)
{
    (void)s, (void)sig;
    for (size_t i = 0; i < npubs; i++)
        pubs[i] = mdns_free(pubs[i]); /* goodbye packets */
    browser = mdns_free(browser);
    if (!uv_is_closing((uv_handle_t *)&sigterm)) {
        uv_close((uv_handle_t *)&sigterm, NULL);
        uv_close((uv_handle_t *)&sigint, NULL);
        uv_close((uv_handle_t *)&quit, NULL);
    }
}

static void quit_cb(uv_timer_t *t)
{
    (void)t;
    on_signal(NULL, 0);
}

static void on_published(struct mdns *m, enum mdns_pub_state st, const char *instance,
                         const char *msg, void *data)
{
    (void)m, (void)data;
    if (st == MDNS_PUB_ESTABLISHED)
        printf("established %s\n", instance);
    else if (st == MDNS_PUB_RENAMED)
        printf("renamed %s\n", instance);
    else if (st == MDNS_PUB_FAILED)
        printf("failed %s: %s\n", instance, msg);
    fflush(stdout);
}

static void on_found(struct mdns *m, const struct mdns_found *f, void *data)
{
    struct drec_announce a;
    enum drec_reason why;

    (void)m, (void)data;
    memset(&a, 0, sizeof(a));
    (void)drec_txt_parse(f->txt, f->ntxt, 0, &a, &why);
    printf("found %lld %s %s\n", (long long)now_ms(), f->instance, a.id[0] ? a.id : "-");
    fflush(stdout);
    if (exit_after && ++found_count >= exit_after)
        uv_timer_start(&quit, quit_cb, 0, 0); /* not from inside the responder's callback */
}

static void on_removed(struct mdns *m, const char *instance, void *data)
{
    (void)m, (void)data;
    printf("removed %lld %s\n", (long long)now_ms(), instance);
    fflush(stdout);
}

struct opts {
    const char *id, *prefix, *name, *url, *cahash, *type, *domain, *host, *kind;
    const char *txt[MAX_TXT];
    size_t ntxt;
    const char *ifs[MAX_IFS + 1];
    size_t nifs;
    unsigned long count, ttl, port;
};

static struct mdns *responder(const struct opts *o, const char *host,
                              const struct mdns_callbacks *cb)
{
    struct mdns *m = NULL;
    char err[256];

    if (mdns_new(loop,
                 &(struct mdns_options){.host_name = host,
                                        .allow_ifaces = o->nifs ? o->ifs : NULL,
                                        .max_services = MDNS_MAX_SERVICES_LIMIT},
                 cb, NULL, &m, err, sizeof(err)) < 0) {
        fprintf(stderr, "cliqo-mdns-tool: %s\n", err);
        exit(1);
    }
    return m;
}

static int do_announce(const struct opts *o)
{
    struct mdns_callbacks cb = {.published = on_published};

    if (!o->id || o->count == 0 || o->count > MAX_PUB)
        usage();
    for (unsigned long i = 0; i < o->count; i++) {
        char id[PEER_NAME_MAX + 1], host[64], items[DREC_TXT_BUILD_MAX][DREC_TXT_ITEM_MAX + 1];
        const char *txt[MAX_TXT + DREC_TXT_BUILD_MAX];
        struct drec_announce a;
        size_t n = 0;

        if (o->count > 1)
            snprintf(id, sizeof(id), "%.40s-%lu", o->id, i);
        else
            snprintf(id, sizeof(id), "%s", o->id);
        snprintf(host, sizeof(host), "%s-%lu", o->host ? o->host : "mdns-tool", i);
        if (o->ntxt) {
            /* Raw TXT strings as given: possibly malformed on purpose. */
            for (size_t k = 0; k < o->ntxt; k++)
                txt[n++] = o->txt[k];
        } else {
            memset(&a, 0, sizeof(a));
            snprintf(a.id, sizeof(a.id), "%s", id);
            snprintf(a.name, sizeof(a.name), "%s", o->name ? o->name : "");
            snprintf(a.url, sizeof(a.url), "%s", o->url ? o->url : "https://198.18.0.1:8443");
            snprintf(a.ca_hash, sizeof(a.ca_hash), "%s", o->cahash ? o->cahash : "");
            if (drec_txt_build(&a, items, &n) < 0) {
                fprintf(stderr, "cliqo-mdns-tool: invalid announcement fields\n");
                return 2;
            }
            for (size_t k = 0; k < n; k++)
                txt[k] = items[k];
        }
        pubs[npubs] = responder(o, host, &cb);
        if (mdns_publish(pubs[npubs],
                         &(struct mdns_service){.prefix = o->prefix ? o->prefix : o->name,
                                                .id = id,
                                                .type = o->type,
                                                .domain = o->domain,
                                                .port = (unsigned)o->port,
                                                .ttl = (unsigned)o->ttl,
                                                .txt = txt,
                                                .ntxt = n}) < 0) {
            fprintf(stderr, "cliqo-mdns-tool: cannot publish (bad type, domain or id)\n");
            return 2;
        }
        npubs++;
    }
    return 0;
}

static int do_browse(const struct opts *o)
{
    struct mdns_callbacks cb = {.found = on_found, .removed = on_removed};

    browser = responder(o, o->host ? o->host : "mdns-tool-browser", &cb);
    if (mdns_browse(browser, o->type, o->domain) < 0) {
        fprintf(stderr, "cliqo-mdns-tool: cannot browse %s in %s\n", o->type, o->domain);
        return 2;
    }
    return 0;
}

/* ---- malformed packets -------------------------------------------------------------------- */

struct pkt {
    unsigned char b[1500];
    size_t n;
};

static void put16(struct pkt *p, unsigned v)
{
    p->b[p->n++] = (unsigned char)(v >> 8);
    p->b[p->n++] = (unsigned char)v;
}

static void put_name(struct pkt *p, const char *dotted)
{
    const char *s = dotted;

    while (*s) {
        const char *d = strchr(s, '.');
        size_t l = d ? (size_t)(d - s) : strlen(s);

        p->b[p->n++] = (unsigned char)l;
        memcpy(p->b + p->n, s, l);
        p->n += l;
        s += l + (d ? 1 : 0);
    }
    p->b[p->n++] = 0;
}

static void header(struct pkt *p, unsigned an)
{
    p->n = 0;
    put16(p, 0);      /* id */
    put16(p, 0x8400); /* response, authoritative */
    put16(p, 0);      /* questions */
    put16(p, an);     /* answers */
    put16(p, 0);
    put16(p, 0);
}

static const char *const kinds[] = {"short",        "header-lies",  "label-overrun",
                                    "pointer-loop", "bad-rdlength", "random"};

/* Fills p with one malformed packet of kind k (seq varies the random ones). */
static void make(struct pkt *p, const char *k, unsigned seq)
{
    if (strcmp(k, "short") == 0) {
        header(p, 1);
        p->n = 5;
    } else if (strcmp(k, "header-lies") == 0) {
        header(p, 50); /* 50 answers announced, none present */
    } else if (strcmp(k, "label-overrun") == 0) {
        header(p, 1);
        p->b[p->n++] = 63; /* a 63-byte label, then the packet ends */
        memcpy(p->b + p->n, "_liqo_auth", 10);
        p->n += 10;
    } else if (strcmp(k, "pointer-loop") == 0) {
        header(p, 1);
        p->b[p->n++] = 0xc0; /* the name points at itself */
        p->b[p->n++] = 12;
        put16(p, 12); /* PTR */
        put16(p, 1);
        put16(p, 0);
        put16(p, 120);
        put16(p, 2);
        p->b[p->n++] = 0xc0;
        p->b[p->n++] = 12;
    } else if (strcmp(k, "bad-rdlength") == 0) {
        header(p, 1);
        put_name(p, "_liqo_auth._tcp.local");
        put16(p, 12);
        put16(p, 1);
        put16(p, 0);
        put16(p, 120);
        put16(p, 900); /* rdata said to be 900 bytes long */
        put_name(p, "evil._liqo_auth._tcp.local");
    } else {
        srand(seq * 2654435761u);
        header(p, (unsigned)(rand() % 5));
        p->n += (size_t)(rand() % 200);
        for (size_t i = 12; i < p->n; i++)
            p->b[i] = (unsigned char)rand();
    }
}

static int do_inject(const struct opts *o)
{
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(5353)};
    struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(5353)};
    struct ip_mreqn mreq = {0};
    unsigned long sent = 0;
    int fd, one = 1, ttl = 255;

    if (o->nifs != 1)
        usage();
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    mreq.imr_ifindex = (int)if_nametoindex(o->ifs[0]);
    if (fd < 0 || mreq.imr_ifindex == 0) {
        fprintf(stderr, "cliqo-mdns-tool: no interface '%s'\n", o->ifs[0]);
        return 1;
    }
    inet_pton(AF_INET, "224.0.0.251", &dst.sin_addr);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl));
    if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mreq, sizeof(mreq)) < 0 ||
        bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0) {
        fprintf(stderr, "cliqo-mdns-tool: socket setup: %s\n", strerror(errno));
        close(fd);
        return 1;
    }
    for (unsigned long i = 0; i < o->count; i++)
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            struct pkt p;

            if (strcmp(o->kind, "all") != 0 && strcmp(o->kind, kinds[k]) != 0)
                continue;
            make(&p, kinds[k], (unsigned)i);
            if (sendto(fd, p.b, p.n, 0, (struct sockaddr *)&dst, sizeof(dst)) >= 0)
                sent++;
        }
    close(fd);
    printf("sent %lu\n", sent);
    return sent ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"id", required_argument, NULL, 'i'},         {"prefix", required_argument, NULL, 'p'},
        {"name", required_argument, NULL, 'n'},       {"url", required_argument, NULL, 'u'},
        {"cahash", required_argument, NULL, 'c'},     {"txt", required_argument, NULL, 'x'},
        {"count", required_argument, NULL, 'N'},      {"ttl", required_argument, NULL, 't'},
        {"port", required_argument, NULL, 'P'},       {"type", required_argument, NULL, 'T'},
        {"domain", required_argument, NULL, 'D'},     {"iface", required_argument, NULL, 'I'},
        {"host", required_argument, NULL, 'H'},       {"kind", required_argument, NULL, 'k'},
        {"exit-after", required_argument, NULL, 'e'}, {NULL, 0, NULL, 0}};
    struct opts o = {.type = "_liqo_auth._tcp",
                     .domain = "local",
                     .count = 1,
                     .ttl = 120,
                     .port = 8443,
                     .kind = "all"};
    const char *cmd;
    int c, r;

    if (argc < 2)
        usage();
    cmd = argv[1];
    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'i':
            o.id = optarg;
            break;
        case 'p':
            o.prefix = optarg;
            break;
        case 'n':
            o.name = optarg;
            break;
        case 'u':
            o.url = optarg;
            break;
        case 'c':
            o.cahash = optarg;
            break;
        case 'x':
            if (o.ntxt >= MAX_TXT)
                usage();
            o.txt[o.ntxt++] = optarg;
            break;
        case 'N':
            o.count = num(optarg, 100000);
            break;
        case 't':
            o.ttl = num(optarg, 86400);
            break;
        case 'P':
            o.port = num(optarg, 65535);
            break;
        case 'T':
            o.type = optarg;
            break;
        case 'D':
            o.domain = optarg;
            break;
        case 'I':
            if (o.nifs >= MAX_IFS)
                usage();
            o.ifs[o.nifs++] = optarg;
            break;
        case 'H':
            o.host = optarg;
            break;
        case 'k':
            o.kind = optarg;
            break;
        case 'e':
            exit_after = num(optarg, 1000000);
            break;
        default:
            usage();
        }
    }
    if (getenv("CLIQO_LOG_DEBUG"))
        log_set_level(LOG_LEVEL_DEBUG);
    else
        log_set_level(LOG_LEVEL_WARN);
    if (strcmp(cmd, "inject") == 0)
        return do_inject(&o);
    loop = uv_default_loop();
    uv_timer_init(loop, &quit);
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sigint);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_start(&sigint, on_signal, SIGINT);
    if (strcmp(cmd, "announce") == 0)
        r = do_announce(&o);
    else if (strcmp(cmd, "browse") == 0)
        r = do_browse(&o);
    else
        usage();
    if (r != 0)
        return r;
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    return 0;
}
