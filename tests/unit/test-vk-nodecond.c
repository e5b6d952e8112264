/* Unit tests of the virtual node's conditions (src/virtualkubelet/nodecond.c;
 * docs/advertisement.md, "Virtual kubelet and virtual node"): what the Advertisement's
 * status.network says (enabled, settled, whether new pods wait), what the provider's
 * TunnelEndpoint says of the tunnel (docs/dataplane.md, section 6), and the Ready and
 * NetworkUnavailable conditions, as tables. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "virtualkubelet/nodecond.h"

#define PEER "bbbbbbbb-2222-4222-8222-222222222222"

static void test_network_read(void **state)
{
    static const struct {
        const char *what;
        const char *adv; /* JSON, NULL: none */
        bool enabled, settled, pending;
    } cases[] = {
        {"no Advertisement", NULL, true, false, true},
        {"no status", "{}", true, false, true},
        {"no status.network (the network module does not know the peer)", "{\"status\":{}}", true,
         false, true},
        {"not settled", "{\"status\":{\"network\":{\"settled\":false}}}", true, false, true},
        {"settled, written before the field enabled existed",
         "{\"status\":{\"network\":{\"settled\":true}}}", true, true, false},
        {"enabled, not settled", "{\"status\":{\"network\":{\"settled\":false,\"enabled\":true}}}",
         true, false, true},
        {"enabled, settled", "{\"status\":{\"network\":{\"settled\":true,\"enabled\":true}}}", true,
         true, false},
        {"disabled: not pending",
         "{\"status\":{\"network\":{\"settled\":false,\"enabled\":false,\"message\":\"m\"}}}",
         false, false, false},
        {"disabled, settled (never written so; still not pending)",
         "{\"status\":{\"network\":{\"settled\":true,\"enabled\":false}}}", false, true, false},
        {"enabled not a boolean: enabled",
         "{\"status\":{\"network\":{\"settled\":false,\"enabled\":\"false\"}}}", true, false, true},
        {"settled not a boolean: not settled",
         "{\"status\":{\"network\":{\"settled\":\"true\",\"enabled\":true}}}", true, false, true},
        {"network not an object", "{\"status\":{\"network\":false}}", true, false, true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_error_t e;
        json_t *adv = cases[i].adv ? json_loads(cases[i].adv, 0, &e) : NULL;
        struct vkc_network n = {.enabled = !cases[i].enabled, .settled = !cases[i].settled};

        if (cases[i].adv && !adv)
            fail_msg("bad test JSON: %s: %s", e.text, cases[i].adv);
        vkc_network_read(adv, &n);
        if (n.enabled != cases[i].enabled || n.settled != cases[i].settled ||
            vkc_network_pending(&n) != cases[i].pending)
            fail_msg("%s: enabled %d settled %d pending %d, want %d %d %d", cases[i].what,
                     n.enabled, n.settled, vkc_network_pending(&n), cases[i].enabled,
                     cases[i].settled, cases[i].pending);
        json_decref(adv);
    }
}

static void test_conditions(void **state)
{
    static const struct {
        const char *what;
        bool reachable, enabled, settled, res;
        bool ready;
        const char *reason;
        bool net_unavailable;
        const char *net_reason;
        const char *net_message; /* a part of it; NULL: not checked */
    } cases[] = {
        {"all well", true, true, true, true, true, "ProviderReady", false, "RemappingSettled",
         "the pod-CIDR remapping is settled"},
        {"remapping pending", true, true, false, true, false, "RemappingPending", true,
         "RemappingPending", "waiting for the pod-CIDR remapping"},
        {"unreachable comes first", false, true, false, false, false, "ProviderUnreachable", true,
         "RemappingPending", NULL},
        {"unreachable, settled", false, true, true, true, false, "ProviderUnreachable", false,
         "RemappingSettled", NULL},
        {"pending before no resources", true, true, false, false, false, "RemappingPending", true,
         "RemappingPending", NULL},
        {"no resources", true, true, true, false, false, "NoResources", false, "RemappingSettled",
         NULL},
        {"networking disabled: Ready, the remapping is not waited for", true, false, false, true,
         true, "ProviderReady", true, "NetworkingDisabled",
         "networking with provider " PEER
         " is disabled (ForeignCluster spec.networkingEnabled: No)"},
        {"networking disabled, unreachable", false, false, false, true, false,
         "ProviderUnreachable", true, "NetworkingDisabled", NULL},
        {"networking disabled, no resources", true, false, false, false, false, "NoResources", true,
         "NetworkingDisabled", NULL},
        {"networking disabled wins over a settled flag", true, false, true, true, true,
         "ProviderReady", true, "NetworkingDisabled", NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vkc_input in = {.peer = PEER,
                               .reachable = cases[i].reachable,
                               .threshold = 3,
                               .unreachable = "connection refused",
                               .net = {.enabled = cases[i].enabled, .settled = cases[i].settled},
                               .has_resources = cases[i].res};
        struct vkc_conditions c;

        vkc_conditions(&in, &c);
        if (c.ready != cases[i].ready || strcmp(c.ready_reason, cases[i].reason) != 0 ||
            c.network_unavailable != cases[i].net_unavailable ||
            strcmp(c.network_reason, cases[i].net_reason) != 0)
            fail_msg("%s: Ready %d %s, NetworkUnavailable %d %s; want %d %s, %d %s", cases[i].what,
                     c.ready, c.ready_reason, c.network_unavailable, c.network_reason,
                     cases[i].ready, cases[i].reason, cases[i].net_unavailable,
                     cases[i].net_reason);
        if (cases[i].net_message && strcmp(c.network_message, cases[i].net_message) != 0)
            fail_msg("%s: NetworkUnavailable message \"%s\", want \"%s\"", cases[i].what,
                     c.network_message, cases[i].net_message);
        assert_true(c.ready_message[0] != '\0');
        assert_true(c.network_message[0] != '\0');
    }
}

static void test_messages(void **state)
{
    struct vkc_input in = {.peer = PEER,
                           .reachable = false,
                           .threshold = 3,
                           .unreachable = "connection refused",
                           .net = {.enabled = true, .settled = true},
                           .has_resources = true};
    struct vkc_conditions c;

    (void)state;
    vkc_conditions(&in, &c);
    assert_string_equal(c.ready_message,
                        "the last 3 probes of provider " PEER " failed: connection refused");
    in.unreachable = NULL;
    vkc_conditions(&in, &c);
    assert_string_equal(c.ready_message, "the last 3 probes of provider " PEER " failed: ");
    in.reachable = true;
    in.net.settled = false;
    vkc_conditions(&in, &c);
    assert_string_equal(c.ready_message, "the pod-CIDR remapping with provider " PEER
                                         " is not settled yet (NetworkConfig)");
    in.net.settled = true;
    in.has_resources = false;
    vkc_conditions(&in, &c);
    assert_string_equal(c.ready_message, "provider " PEER " offers no cpu, memory or pods");
    in.has_resources = true;
    vkc_conditions(&in, &c);
    assert_string_equal(c.ready_message, "provider " PEER " is reachable and shares resources");
    /* A peer ID of any length stays within the buffers. */
    {
        char longid[2 * VKC_MESSAGE_MAX];

        memset(longid, 'x', sizeof(longid) - 1);
        longid[sizeof(longid) - 1] = '\0';
        in.peer = longid;
        in.net.enabled = false;
        vkc_conditions(&in, &c);
        assert_int_equal(strlen(c.network_message), VKC_MESSAGE_MAX - 1);
        assert_int_equal(strlen(c.ready_message), VKC_MESSAGE_MAX - 1);
    }
}

/* 2026-11-30T01:00:00Z, the time the tunnel cases are judged at. */
#define NOW   1796000400LL
#define NOW_S "2026-11-30T01:00:00Z"

static void test_tunnel_read(void **state)
{
    static const struct {
        const char *what;
        const char *tep; /* JSON, NULL: none */
        bool endpoint;
        const char *phase, *message;
        int64_t handshake;
    } cases[] = {
        {"no TunnelEndpoint", NULL, false, "", "", 0},
        {"no status", "{}", true, "", "", 0},
        {"Up", "{\"status\":{\"phase\":\"Up\",\"lastHandshake\":\"" NOW_S "\",\"rxBytes\":5}}",
         true, "Up", "", NOW},
        {"Pending with a message",
         "{\"status\":{\"phase\":\"Pending\",\"message\":\"no handshake with the peer yet\","
         "\"lastHandshake\":null}}",
         true, "Pending", "no handshake with the peer yet", 0},
        {"Error", "{\"status\":{\"phase\":\"Error\",\"message\":\"refused: bad key\"}}", true,
         "Error", "refused: bad key", 0},
        {"an unknown phase reads as none", "{\"status\":{\"phase\":\"Down\"}}", true, "", "", 0},
        {"a phase that is not a string", "{\"status\":{\"phase\":1}}", true, "", "", 0},
        {"a handshake that is not a time", "{\"status\":{\"lastHandshake\":\"yesterday\"}}", true,
         "", "", 0},
        {"a handshake with an offset",
         "{\"status\":{\"lastHandshake\":\"2026-11-30T02:00:00+01:00\"}}", true, "", "", NOW},
        {"the epoch is no handshake", "{\"status\":{\"lastHandshake\":\"1970-01-01T00:00:00Z\"}}",
         true, "", "", 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_error_t e;
        json_t *tep = cases[i].tep ? json_loads(cases[i].tep, 0, &e) : NULL;
        struct vkc_tunnel t;

        if (cases[i].tep && !tep)
            fail_msg("bad test JSON: %s: %s", e.text, cases[i].tep);
        memset(&t, 0x55, sizeof(t));
        vkc_tunnel_read(tep, true, &t);
        if (!t.dataplane || t.endpoint != cases[i].endpoint ||
            strcmp(t.phase, cases[i].phase) != 0 || strcmp(t.message, cases[i].message) != 0 ||
            t.handshake != cases[i].handshake)
            fail_msg("%s: endpoint %d phase '%s' message '%s' handshake %lld", cases[i].what,
                     t.endpoint, t.phase, t.message, (long long)t.handshake);
        json_decref(tep);
    }
    /* A long message is cut to the buffer. */
    {
        char big[1024];
        json_t *tep;
        struct vkc_tunnel t;

        memset(big, 'm', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        tep = json_pack("{s:{s:s,s:s}}", "status", "phase", "Error", "message", big);
        vkc_tunnel_read(tep, false, &t);
        assert_false(t.dataplane);
        assert_int_equal(strlen(t.message), sizeof(t.message) - 1);
        json_decref(tep);
    }
}

static void test_tunnel_conditions(void **state)
{
    static const struct {
        const char *what;
        bool enabled, settled, dataplane, endpoint;
        const char *phase, *message;
        int64_t handshake;
        bool net_unavailable;
        const char *net_reason;
        const char *net_message; /* NULL: not checked */
        unsigned recheck_s;
    } cases[] = {
        {"no data plane: as before", true, true, false, true, "Up", "", NOW - 5, false,
         "RemappingSettled", "the pod-CIDR remapping is settled", 0},
        {"no data plane, no TunnelEndpoint", true, true, false, false, "", "", 0, false,
         "RemappingSettled", NULL, 0},
        {"networking disabled comes first", false, false, true, true, "Up", "", NOW, true,
         "NetworkingDisabled", NULL, 0},
        {"the remapping comes first", true, false, true, true, "Up", "", NOW, true,
         "RemappingPending", NULL, 0},
        {"no TunnelEndpoint of the provider", true, true, true, false, "", "", 0, true,
         "TunnelPending",
         "provider " PEER " has published no TunnelEndpoint here yet (its gateway's key and "
         "endpoint)",
         0},
        {"no status yet", true, true, true, true, "", "", 0, true, "TunnelPending",
         "no WireGuard handshake with provider " PEER
         " yet: the gateway has not reported on the tunnel yet",
         0},
        {"pending, no handshake yet", true, true, true, true, "Pending",
         "no handshake with the peer yet", 0, true, "TunnelPending",
         "no WireGuard handshake with provider " PEER " yet: no handshake with the peer yet", 0},
        {"pending without a message", true, true, true, true, "Pending", "", 0, true,
         "TunnelPending", "no WireGuard handshake with provider " PEER " yet: no reason given", 0},
        {"up: a handshake 5 s ago", true, true, true, true, "Up", "", NOW - 5, false, "TunnelUp",
         "the tunnel to provider " PEER " is up (a WireGuard handshake within 180 s)", 175},
        {"up: a handshake now", true, true, true, true, "Up", "", NOW, false, "TunnelUp", NULL,
         180},
        {"up: 179 s", true, true, true, true, "Up", "", NOW - 179, false, "TunnelUp", NULL, 1},
        {"the gateway's clock ahead: as now", true, true, true, true, "Up", "", NOW + 30, false,
         "TunnelUp", NULL, 180},
        {"a fresh handshake while the gateway still says Pending", true, true, true, true,
         "Pending", "not configured on the device yet", NOW - 3, false, "TunnelUp", NULL, 177},
        {"180 s: too old", true, true, true, true, "Up", "", NOW - 180, true, "NoHandshake",
         "no WireGuard handshake with provider " PEER
         " for 3 min (the last at 2026-11-30T00:57:00Z)",
         0},
        {"a stale Up (the gateway stopped writing)", true, true, true, true, "Up", "",
         NOW - 3600 - 59, true, "NoHandshake",
         "no WireGuard handshake with provider " PEER
         " for 60 min (the last at 2026-11-29T23:59:01Z)",
         0},
        {"the gateway's Pending after a handshake", true, true, true, true, "Pending",
         "no handshake for 180 s or more", NOW - 600, true, "NoHandshake", NULL, 0},
        {"error, with its message", true, true, true, true, "Error",
         "refused: endpoint: names are not resolved", NOW - 5, true, "TunnelError",
         "the tunnel to provider " PEER ": refused: endpoint: names are not resolved", 0},
        {"error without a message", true, true, true, true, "Error", "", 0, true, "TunnelError",
         "the tunnel to provider " PEER ": error", 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vkc_tunnel t = {.dataplane = cases[i].dataplane,
                               .endpoint = cases[i].endpoint,
                               .handshake = cases[i].handshake};
        struct vkc_input in = {.peer = PEER,
                               .reachable = true,
                               .threshold = 3,
                               .net = {.enabled = cases[i].enabled, .settled = cases[i].settled},
                               .has_resources = true,
                               .tunnel = &t,
                               .now = NOW};
        struct vkc_conditions c;

        snprintf(t.phase, sizeof(t.phase), "%s", cases[i].phase);
        snprintf(t.message, sizeof(t.message), "%s", cases[i].message);
        vkc_conditions(&in, &c);
        if (c.network_unavailable != cases[i].net_unavailable ||
            strcmp(c.network_reason, cases[i].net_reason) != 0 || c.recheck_s != cases[i].recheck_s)
            fail_msg("%s: NetworkUnavailable %d %s recheck %u; want %d %s %u", cases[i].what,
                     c.network_unavailable, c.network_reason, c.recheck_s, cases[i].net_unavailable,
                     cases[i].net_reason, cases[i].recheck_s);
        if (cases[i].net_message && strcmp(c.network_message, cases[i].net_message) != 0)
            fail_msg("%s: NetworkUnavailable message \"%s\", want \"%s\"", cases[i].what,
                     c.network_message, cases[i].net_message);
        /* The tunnel never changes Ready. */
        if (!c.ready && cases[i].enabled == cases[i].settled)
            fail_msg("%s: Ready %d %s", cases[i].what, c.ready, c.ready_reason);
    }
    /* NULL tunnel: as without a data plane. */
    {
        struct vkc_input in = {.peer = PEER,
                               .reachable = true,
                               .has_resources = true,
                               .net = {.enabled = true, .settled = true},
                               .now = NOW};
        struct vkc_conditions c;

        vkc_conditions(&in, &c);
        assert_false(c.network_unavailable);
        assert_string_equal(c.network_reason, "RemappingSettled");
        assert_int_equal(c.recheck_s, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_network_read),      cmocka_unit_test(test_conditions),
        cmocka_unit_test(test_messages),          cmocka_unit_test(test_tunnel_read),
        cmocka_unit_test(test_tunnel_conditions),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
