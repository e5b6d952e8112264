/* Unit tests of src/network/noderoutes.c, the node mode's decisions: which Node is the gateway and
 * at which address (a table of Node objects), and the routes a node keeps, planned against what a
 * dump found (a table run through nrt_want and routes.c's rt_plan: a fresh node, a restart, an
 * ended peering, a moved gateway, the gateway node itself, no gateway, another family, a route
 * changed by hand). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "network/noderoutes.h"

#define N(a)  (sizeof(a) / sizeof((a)[0]))
#define MAXR  8
#define GW_IP "10.250.0.11"

/* ---- the gateway node ------------------------------------------------------------------------ */

static void test_gateway_node(void **state)
{
    static const struct {
        const char *name, *json;
        int want;
        int family;
        const char *ip;
    } cases[] = {
        {"labelled, InternalIP",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"Hostname\",\"address\":\"gw\"},"
         "{\"type\":\"InternalIP\",\"address\":\"10.250.0.11\"}]}}",
         1, 4, "10.250.0.11"},
        {"IPv6 InternalIP",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"fd00::11\"}]}}",
         1, 6, "fd00::11"},
        {"the first InternalIP only",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"},"
         "{\"type\":\"InternalIP\",\"address\":\"10.0.0.2\"}]}}",
         1, 4, "10.0.0.1"},
        {"not labelled",
         "{\"metadata\":{\"name\":\"n\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\","
         "\"address\":\"10.250.0.12\"}]}}",
         0, 0, NULL},
        {"labelled false",
         "{\"metadata\":{\"name\":\"n\",\"labels\":{\"net.liqo.io/gateway\":\"false\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.250.0.12\"}]}}",
         0, 0, NULL},
        {"labelled True (not the value)",
         "{\"metadata\":{\"name\":\"n\",\"labels\":{\"net.liqo.io/gateway\":\"True\"}}}", 0, 0,
         NULL},
        {"no address",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{}}",
         -EINVAL, 0, NULL},
        {"only an ExternalIP",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"ExternalIP\",\"address\":\"192.0.2.1\"}]}}",
         -EINVAL, 0, NULL},
        {"a name, not an address",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"gw.example\"}]}}",
         -EINVAL, 0, NULL},
        {"unspecified",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"0.0.0.0\"}]}}",
         -EINVAL, 0, NULL},
        {"loopback",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}]}}",
         -EINVAL, 0, NULL},
        {"multicast",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"224.0.0.1\"}]}}",
         -EINVAL, 0, NULL},
        {"IPv6 loopback",
         "{\"metadata\":{\"name\":\"gw\",\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"::1\"}]}}",
         -EINVAL, 0, NULL},
        {"no name",
         "{\"metadata\":{\"labels\":{\"net.liqo.io/gateway\":\"true\"}},"
         "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"}]}}",
         -EINVAL, 0, NULL},
    };

    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        json_t *node = json_loads(cases[i].json, 0, NULL);
        struct nrt_gateway g;
        uint8_t ip[16] = {0};
        int r;

        assert_non_null(node);
        memset(&g, 0xaa, sizeof(g));
        r = nrt_gateway_node(node, &g);
        if (r != cases[i].want)
            fail_msg("%s: %d, want %d", cases[i].name, r, cases[i].want);
        if (r == 1) {
            assert_int_equal(g.family, cases[i].family);
            assert_int_equal(inet_pton(g.family == 4 ? AF_INET : AF_INET6, cases[i].ip, ip), 1);
            assert_memory_equal(g.ip, ip, g.family == 4 ? 4 : 16);
            assert_string_equal(g.name, "gw");
        }
        json_decref(node);
    }
}

/* ---- the plan -------------------------------------------------------------------------------- */

/* "DST via IP" (the route a node keeps) or "DST dev N" (a route through an interface), with
 * "mtu M" after it: the routes a dump found. */
static struct rt_route route_of(const char *text)
{
    char dst[64], kind[8], arg[64];
    unsigned mtu = 0;
    struct rt_route r;

    memset(&r, 0, sizeof(r));
    if (sscanf(text, "%63s %7s %63s mtu %u", dst, kind, arg, &mtu) < 3 ||
        cidr_parse(dst, &r.dst) < 0)
        fail_msg("bad test route '%s'", text);
    r.mtu = mtu;
    if (strcmp(kind, "via") == 0) {
        r.has_via = true;
        r.oif = 2; /* the kernel names the interface it chose */
        if (inet_pton(r.dst.family == 4 ? AF_INET : AF_INET6, arg, r.via) != 1)
            fail_msg("bad test address in '%s'", text);
    } else {
        if (sscanf(arg, "%u", &r.oif) != 1)
            fail_msg("bad test interface in '%s'", text);
    }
    return r;
}

static void route_text(const struct rt_route *r, char *buf, size_t size)
{
    char dst[CIDR_STR_MAX], via[INET6_ADDRSTRLEN];

    cidr_format(&r->dst, dst, sizeof(dst));
    if (r->has_via) {
        inet_ntop(r->dst.family == 4 ? AF_INET : AF_INET6, r->via, via, sizeof(via));
        snprintf(buf, size, "%s via %s", dst, via);
    } else {
        snprintf(buf, size, "%s dev %u", dst, r->oif);
    }
    if (r->mtu)
        snprintf(buf + strlen(buf), size - strlen(buf), " mtu %u", r->mtu);
}

/* The texts of list[0..n) sorted and joined by ", ". */
static void joined(const struct rt_route *const *list, size_t n, char *buf, size_t size)
{
    char t[MAXR][160];

    assert_true(n <= MAXR);
    for (size_t i = 0; i < n; i++)
        route_text(list[i], t[i], sizeof(t[i]));
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(t[j - 1], t[j]) > 0; j--) {
            char x[160];

            memcpy(x, t[j], sizeof(x));
            memcpy(t[j], t[j - 1], sizeof(x));
            memcpy(t[j - 1], x, sizeof(x));
        }
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? ", " : "", t[i]);
}

static void test_plan(void **state)
{
    static const struct {
        const char *name;
        const char *self;
        const char *gw;           /* name=IP of the gateway node; NULL: none */
        const char *blocks[MAXR]; /* the peers' blocks as seen here */
        const char *have[MAXR];   /* the routes of protocol 146 a dump found */
        const char *add, *del;    /* what the plan does (sorted) */
    } cases[] = {
        {"a fresh node, two peers",
         "n2",
         "gw=" GW_IP,
         {"10.70.0.0/16", "10.71.0.0/20"},
         {0},
         "10.70.0.0/16 via " GW_IP ", 10.71.0.0/20 via " GW_IP,
         ""},
        {"a restart: nothing to do, no duplicate",
         "n2",
         "gw=" GW_IP,
         {"10.70.0.0/16", "10.71.0.0/20"},
         {"10.71.0.0/20 via " GW_IP, "10.70.0.0/16 via " GW_IP},
         "",
         ""},
        {"a peering ended",
         "n2",
         "gw=" GW_IP,
         {"10.70.0.0/16"},
         {"10.70.0.0/16 via " GW_IP, "10.71.0.0/20 via " GW_IP},
         "",
         "10.71.0.0/20 via " GW_IP},
        {"the last peering ended",
         "n2",
         "gw=" GW_IP,
         {0},
         {"10.70.0.0/16 via " GW_IP},
         "",
         "10.70.0.0/16 via " GW_IP},
        {"the gateway moved",
         "n2",
         "gw2=10.250.0.13",
         {"10.70.0.0/16"},
         {"10.70.0.0/16 via " GW_IP},
         "10.70.0.0/16 via 10.250.0.13",
         "10.70.0.0/16 via " GW_IP},
        {"this node became the gateway",
         "gw",
         "gw=" GW_IP,
         {"10.70.0.0/16"},
         {"10.70.0.0/16 via 10.250.0.13"},
         "",
         "10.70.0.0/16 via 10.250.0.13"},
        {"the gateway node itself: nothing", "gw", "gw=" GW_IP, {"10.70.0.0/16"}, {0}, "", ""},
        {"no gateway node: no route",
         "n2",
         NULL,
         {"10.70.0.0/16"},
         {"10.70.0.0/16 via " GW_IP},
         "",
         "10.70.0.0/16 via " GW_IP},
        {"an IPv6 block through an IPv4 gateway: none",
         "n2",
         "gw=" GW_IP,
         {"fd00:70::/64", "10.70.0.0/16"},
         {0},
         "10.70.0.0/16 via " GW_IP,
         ""},
        {"an IPv6 gateway",
         "n2",
         "gw=fd00::11",
         {"fd00:70::/64", "10.70.0.0/16"},
         {0},
         "fd00:70::/64 via fd00::11",
         ""},
        {"one block twice: one route",
         "n2",
         "gw=" GW_IP,
         {"10.70.0.0/16", "10.70.0.0/16"},
         {0},
         "10.70.0.0/16 via " GW_IP,
         ""},
        {"a route of ours changed by hand (an MTU): replaced",
         "n2",
         "gw=" GW_IP,
         {"10.70.0.0/16"},
         {"10.70.0.0/16 via " GW_IP " mtu 1300"},
         "10.70.0.0/16 via " GW_IP,
         "10.70.0.0/16 via " GW_IP " mtu 1300"},
        {"the gateway's route through its tunnel (same protocol): left alone",
         "gw",
         "gw=" GW_IP,
         {"10.70.0.0/16"},
         {"10.70.0.0/16 dev 9 mtu 1420", "10.71.0.0/16 via 10.250.0.13"},
         "",
         "10.71.0.0/16 via 10.250.0.13"},
        {"a gateway's route on another node: left alone beside the node's",
         "n2",
         "gw=" GW_IP,
         {"10.70.0.0/16"},
         {"10.72.0.0/16 dev 9 mtu 1420"},
         "10.70.0.0/16 via " GW_IP,
         ""},
    };

    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        struct nrt_gateway gw, *g = NULL;
        struct cidr blocks[MAXR];
        struct rt_route want[MAXR], have[MAXR];
        const struct rt_route *add[MAXR], *del[MAXR];
        size_t nb = 0, nh = 0, nadd, ndel;
        char got_add[1024], got_del[1024];
        int nw;

        if (cases[i].gw) {
            const char *eq = strchr(cases[i].gw, '=');

            memset(&gw, 0, sizeof(gw));
            snprintf(gw.name, sizeof(gw.name), "%.*s", (int)(eq - cases[i].gw), cases[i].gw);
            gw.family = strchr(eq, ':') ? 6 : 4;
            assert_int_equal(inet_pton(gw.family == 4 ? AF_INET : AF_INET6, eq + 1, gw.ip), 1);
            g = &gw;
        }
        for (; nb < MAXR && cases[i].blocks[nb]; nb++)
            assert_int_equal(cidr_parse(cases[i].blocks[nb], &blocks[nb]), 0);
        for (; nh < MAXR && cases[i].have[nh]; nh++)
            have[nh] = route_of(cases[i].have[nh]);
        nh = nrt_owned(have, nh);
        nw = nrt_want(cases[i].self, g, blocks, nb, want, MAXR);
        assert_true(nw >= 0);
        rt_plan(want, (size_t)nw, have, nh, add, &nadd, del, &ndel);
        joined(add, nadd, got_add, sizeof(got_add));
        joined(del, ndel, got_del, sizeof(got_del));
        if (strcmp(got_add, cases[i].add) != 0 || strcmp(got_del, cases[i].del) != 0)
            fail_msg("%s: add '%s' del '%s', want add '%s' del '%s'", cases[i].name, got_add,
                     got_del, cases[i].add, cases[i].del);
        /* applied, the plan leaves nothing to do */
        for (size_t k = 0; k < nadd; k++)
            assert_int_equal(rt_msg_new(add[k], 1, (uint8_t[RT_MSG_MAX]){0}, RT_MSG_MAX) > 0, 1);
        {
            struct rt_route after[2 * MAXR];
            size_t na = 0;
            const struct rt_route *a2[2 * MAXR], *d2[2 * MAXR];
            size_t nadd2, ndel2;

            for (size_t k = 0; k < nh; k++) {
                bool gone = false;

                for (size_t d = 0; d < ndel; d++)
                    gone = gone || del[d] == &have[k];
                if (!gone)
                    after[na++] = have[k];
            }
            for (size_t k = 0; k < nadd; k++) {
                after[na] = *add[k];
                after[na++].oif = 2;
            }
            rt_plan(want, (size_t)nw, after, na, a2, &nadd2, d2, &ndel2);
            if (nadd2 || ndel2)
                fail_msg("%s: a second pass would change %zu routes", cases[i].name, nadd2 + ndel2);
        }
    }
}

static void test_want_bounds(void **state)
{
    struct nrt_gateway gw = {.name = "gw", .family = 4, .ip = {10, 250, 0, 11}};
    struct cidr blocks[3];
    struct rt_route out[2];

    (void)state;
    assert_int_equal(cidr_parse("10.70.0.0/16", &blocks[0]), 0);
    assert_int_equal(cidr_parse("10.71.0.0/16", &blocks[1]), 0);
    assert_int_equal(cidr_parse("10.72.0.0/16", &blocks[2]), 0);
    assert_int_equal(nrt_want("n2", &gw, blocks, 2, out, 2), 2);
    assert_int_equal(nrt_want("n2", &gw, blocks, 3, out, 2), -E2BIG);
    assert_int_equal(nrt_want("n2", &gw, blocks, 0, out, 0), 0);
    /* no node name given: routes all the same (the caller always has one) */
    assert_int_equal(nrt_want(NULL, &gw, blocks, 1, out, 2), 1);
    assert_true(out[0].has_via);
    assert_int_equal(out[0].oif, 0);
    assert_int_equal(out[0].mtu, 0);
    assert_int_equal(out[0].table, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gateway_node),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_want_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
