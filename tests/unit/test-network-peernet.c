/* Unit tests of the network module's pure per-peer decisions (src/network/peernet.c): whether a
 * peer's ForeignCluster lets the networks be connected (spec.networkingEnabled), as a table. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "network/peernet.h"

static void test_enabled(void **state)
{
    static const struct {
        const char *what;
        const char *fc; /* JSON, NULL: no ForeignCluster */
        bool want;
    } cases[] = {
        {"no ForeignCluster: the default", NULL, true},
        {"no spec", "{}", true},
        {"spec without the field: the CRD's default", "{\"spec\":{}}", true},
        {"Yes", "{\"spec\":{\"networkingEnabled\":\"Yes\"}}", true},
        {"No", "{\"spec\":{\"networkingEnabled\":\"No\"}}", false},
        {"No beside the other fields",
         "{\"spec\":{\"clusterIdentity\":{\"clusterID\":\"b\"},\"outgoingPeeringEnabled\":\"Yes\","
         "\"networkingEnabled\":\"No\"}}",
         false},
        {"an unquoted YAML 1.1 No (boolean false, validation off)",
         "{\"spec\":{\"networkingEnabled\":false}}", false},
        {"boolean true", "{\"spec\":{\"networkingEnabled\":true}}", true},
        {"lower-case no is not the enum's No", "{\"spec\":{\"networkingEnabled\":\"no\"}}", true},
        {"empty string", "{\"spec\":{\"networkingEnabled\":\"\"}}", true},
        {"null", "{\"spec\":{\"networkingEnabled\":null}}", true},
        {"a number", "{\"spec\":{\"networkingEnabled\":0}}", true},
        {"spec not an object", "{\"spec\":\"No\"}", true},
        {"the field outside spec", "{\"networkingEnabled\":\"No\"}", true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_error_t e;
        json_t *fc = cases[i].fc ? json_loads(cases[i].fc, 0, &e) : NULL;
        bool got;

        if (cases[i].fc && !fc)
            fail_msg("bad test JSON: %s: %s", e.text, cases[i].fc);
        got = pnet_enabled(fc);
        if (got != cases[i].want)
            fail_msg("%s: %s, want %s", cases[i].what, got ? "enabled" : "disabled",
                     cases[i].want ? "enabled" : "disabled");
        json_decref(fc);
    }
}

static void test_message(void **state)
{
    (void)state;
    /* It must fit the peer state's message (struct agent_peer_network: 256 bytes) and the
     * Advertisement's status.network.message (maxLength 256). */
    assert_true(strlen(PNET_DISABLED_MESSAGE) < 256);
    assert_non_null(strstr(PNET_DISABLED_MESSAGE, "spec.networkingEnabled: No"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enabled),
        cmocka_unit_test(test_message),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
