/* Unit tests of the virtual node's conditions (src/virtualkubelet/nodecond.c;
 * docs/advertisement.md, "Virtual kubelet and virtual node"): what the Advertisement's
 * status.network says (enabled, settled, whether new pods wait), and the Ready and
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_network_read),
        cmocka_unit_test(test_conditions),
        cmocka_unit_test(test_messages),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
