/* Unit tests of src/advertisement/config.c and policy.c: the ClusterConfig's sharing and acceptance
 * settings (defaults, bad values, per-cluster policies) and the operator's decision and validation,
 * table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "advertisement/config.h"
#include "advertisement/policy.h"

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);

    if (!j)
        fail_msg("bad JSON in the test: %s (%s)", text, e.text);
    return j;
}

/* ---- advcfg_read
 * --------------------------------------------------------------------------------- */

static void test_config_defaults(void **state)
{
    struct adv_config c;
    json_t *empty = load("{\"spec\":{}}");

    (void)state;
    for (int i = 0; i < 2; i++) {
        advcfg_read(i == 0 ? NULL : empty, &c);
        assert_int_equal(c.percent, 30);
        assert_true(c.enabled);
        assert_int_equal(c.refresh_s, 600);
        assert_int_equal(c.ttl_s, 1800);
        assert_int_equal(c.threshold, 5);
        assert_int_equal(c.accept, ADVCFG_AUTO_ACCEPT_MAX);
        assert_int_equal(c.max_accept, 5);
        assert_int_equal(c.vk_mode, ADVCFG_VK_EMBEDDED);
        assert_int_equal(c.keepalive_retry_s, 20);
        assert_int_equal(c.keepalive_threshold, 3);
        assert_null(c.per_cluster);
        assert_null(c.allow);
        assert_string_equal(c.vk_image, "");
        assert_int_equal(c.offer_source, ADVCFG_OFFER_CLUSTER);
        assert_string_equal(c.error, "");
        advcfg_done(&c);
    }
    json_decref(empty);
}

static void test_config_values(void **state)
{
    static const struct {
        const char *json;
        unsigned percent, refresh, ttl, threshold, max, retry, thr;
        bool enabled;
        enum advcfg_accept accept;
        enum advcfg_vk_mode mode;
    } cases[] = {
        {"{\"outgoingConfig\":{\"resourceSharingPercentage\":37,\"enableBroadcaster\":false,"
         "\"refreshSeconds\":15,\"ttlSeconds\":60,\"updateThresholdPercentage\":0},"
         "\"ingoingConfig\":{\"maxAcceptableAdvertisement\":1000000,\"acceptPolicy\":\"Manual\","
         "\"virtualKubeletMode\":\"Deployment\"},\"keepaliveRetryTime\":1,\"keepaliveThreshold\":"
         "1}",
         37, 15, 60, 0, 1000000, 1, 1, false, ADVCFG_MANUAL, ADVCFG_VK_DEPLOYMENT},
        /* Out of range or of the wrong type: the defaults, never a surprise. */
        {"{\"outgoingConfig\":{\"resourceSharingPercentage\":101,\"refreshSeconds\":0,"
         "\"ttlSeconds\":\"1h\",\"updateThresholdPercentage\":-1},\"ingoingConfig\":"
         "{\"maxAcceptableAdvertisement\":1000001,\"acceptPolicy\":\"Whatever\","
         "\"virtualKubeletMode\":\"Sidecar\"},\"keepaliveRetryTime\":0,\"keepaliveThreshold\":"
         "1001}",
         30, 600, 1800, 5, 5, 20, 3, true, ADVCFG_AUTO_ACCEPT_MAX, ADVCFG_VK_EMBEDDED},
        {"{\"outgoingConfig\":{\"resourceSharingPercentage\":0,\"enableBroadcaster\":\"no\"},"
         "\"ingoingConfig\":{\"maxAcceptableAdvertisement\":0}}",
         0, 600, 1800, 5, 0, 20, 3, true, ADVCFG_AUTO_ACCEPT_MAX, ADVCFG_VK_EMBEDDED},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[2048];
        struct adv_config c;
        json_t *cc;

        snprintf(text, sizeof(text), "{\"spec\":{\"advertisementConfig\":%s}}", cases[i].json);
        cc = load(text);
        advcfg_read(cc, &c);
        assert_int_equal(c.percent, cases[i].percent);
        assert_int_equal(c.refresh_s, cases[i].refresh);
        assert_int_equal(c.ttl_s, cases[i].ttl);
        assert_int_equal(c.threshold, cases[i].threshold);
        assert_int_equal(c.max_accept, cases[i].max);
        assert_int_equal(c.keepalive_retry_s, cases[i].retry);
        assert_int_equal(c.keepalive_threshold, cases[i].thr);
        assert_int_equal(c.enabled, cases[i].enabled);
        assert_int_equal(c.accept, cases[i].accept);
        assert_int_equal(c.vk_mode, cases[i].mode);
        advcfg_done(&c);
        json_decref(cc);
    }
}

/* offerSource: the one field refused rather than defaulted (config.h). */
static void test_config_offer_source(void **state)
{
    static const struct {
        const char *json; /* outgoingConfig */
        enum advcfg_offer_source want;
        const char *error; /* a part of adv_config.error, NULL: none */
    } cases[] = {
        {"{}", ADVCFG_OFFER_CLUSTER, NULL},
        {"{\"offerSource\":null}", ADVCFG_OFFER_CLUSTER, NULL},
        {"{\"offerSource\":\"Cluster\"}", ADVCFG_OFFER_CLUSTER, NULL},
        {"{\"offerSource\":\"Broker\"}", ADVCFG_OFFER_BROKER, NULL},
        {"{\"offerSource\":\"broker\"}", ADVCFG_OFFER_INVALID,
         "offerSource \"broker\" is neither Cluster nor Broker"},
        {"{\"offerSource\":\"\"}", ADVCFG_OFFER_INVALID, "\"\" is neither"},
        {"{\"offerSource\":\"Broker \"}", ADVCFG_OFFER_INVALID, "is neither"},
        {"{\"offerSource\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", ADVCFG_OFFER_INVALID,
         "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\" is neither"},
        {"{\"offerSource\":1}", ADVCFG_OFFER_INVALID, "must be a string"},
        {"{\"offerSource\":[\"Broker\"]}", ADVCFG_OFFER_INVALID, "must be a string"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        struct adv_config c;
        json_t *cc;

        snprintf(text, sizeof(text), "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":%s}}}",
                 cases[i].json);
        cc = load(text);
        advcfg_read(cc, &c);
        if (c.offer_source != cases[i].want)
            fail_msg("case %zu: source %s", i, advcfg_offer_source_name(c.offer_source));
        if (cases[i].error ? !strstr(c.error, cases[i].error) || !strstr(c.error, "outgoingConfig")
                           : c.error[0] != '\0')
            fail_msg("case %zu: error \"%s\"", i, c.error);
        /* the other fields keep their own defaults */
        assert_int_equal(c.percent, 30);
        advcfg_done(&c);
        json_decref(cc);
    }
    assert_string_equal(advcfg_offer_source_name(ADVCFG_OFFER_CLUSTER), "Cluster");
    assert_string_equal(advcfg_offer_source_name(ADVCFG_OFFER_BROKER), "Broker");
    assert_string_equal(advcfg_offer_source_name(ADVCFG_OFFER_INVALID), "invalid");
}

static void test_config_lists_and_image(void **state)
{
    struct adv_config c;
    json_t *cc = load("{\"spec\":{\"advertisementConfig\":{\"ingoingConfig\":{\"allowList\":[\"a\","
                      "\"b\"],\"denyList\":[\"c\",7],\"virtualKubeletImage\":\"reg/img:1\"}}}}");

    (void)state;
    advcfg_read(cc, &c);
    json_decref(cc); /* the configuration keeps its own references */
    assert_true(advcfg_list_has(c.allow, "a"));
    assert_true(advcfg_list_has(c.allow, "b"));
    assert_false(advcfg_list_has(c.allow, "c"));
    assert_true(advcfg_list_has(c.deny, "c"));
    assert_false(advcfg_list_has(c.deny, "7"));
    assert_false(advcfg_list_has(NULL, "a"));
    assert_false(advcfg_list_has(c.allow, NULL));
    assert_string_equal(c.vk_image, "reg/img:1");
    advcfg_done(&c);
    advcfg_done(&c); /* idempotent */
}

static void test_policy_for(void **state)
{
    static const struct {
        const char *per_cluster;
        const char *id;
        int ret;
        bool fixed;
        unsigned percent;
        const char *sig;
    } cases[] = {
        {NULL, "x", 0, false, 30, "global:30"},
        {"[{\"clusterID\":\"x\",\"percentage\":50}]", "x", 0, false, 50, "cluster:50"},
        {"[{\"clusterID\":\"x\",\"percentage\":50}]", "y", 0, false, 30, "global:30"},
        {"[{\"clusterID\":\"x\",\"percentage\":0}]", "x", 0, false, 0, "cluster:0"},
        {"[{\"clusterID\":\"x\",\"resources\":{\"cpu\":\"2\",\"memory\":\"1Gi\",\"pods\":10}}]",
         "x", 0, true, 30, "fixed:{\"cpu\":\"2\",\"memory\":\"1Gi\",\"pods\":10}"},
        /* Invalid entries fall back to the global percentage, with -EINVAL to say so. */
        {"[{\"clusterID\":\"x\",\"percentage\":130}]", "x", -EINVAL, false, 30, "global:30"},
        {"[{\"clusterID\":\"x\",\"resources\":{\"cpu\":\"lots\"}}]", "x", -EINVAL, false, 30,
         "global:30"},
        {"[{\"clusterID\":\"x\",\"resources\":{\"cpu\":\"-1\"}}]", "x", -EINVAL, false, 30,
         "global:30"},
        {"[{\"clusterID\":\"x\"}]", "x", -EINVAL, false, 30, "global:30"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024], sig[512];
        struct adv_config c;
        struct shr_policy p;
        struct shr_list fixed;
        json_t *cc;

        snprintf(text, sizeof(text),
                 "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":%s}}}}",
                 cases[i].per_cluster ? cases[i].per_cluster : "null");
        cc = load(text);
        advcfg_read(cc, &c);
        assert_int_equal(advcfg_policy_for(&c, cases[i].id, &p, &fixed, sig, sizeof(sig)),
                         cases[i].ret);
        assert_int_equal(p.fixed != NULL, cases[i].fixed);
        if (!cases[i].fixed)
            assert_int_equal(p.percent, cases[i].percent);
        assert_string_equal(sig, cases[i].sig);
        if (cases[i].fixed) {
            bool found;

            assert_int_equal(fixed.n, 3);
            assert_int_equal(shr_list_get(&fixed, "cpu", &found), 2000);
            assert_int_equal(shr_list_get(&fixed, "memory", &found), 1073741824);
            assert_int_equal(shr_list_get(&fixed, "pods", &found), 10);
        }
        advcfg_done(&c);
        json_decref(cc);
    }
}

/* ---- advpol_decide
 * ---------------------------------------------------------------------------------- */

static void test_decide(void **state)
{
    static const struct {
        const char *cfg; /* ingoingConfig */
        const char *invalid;
        const char *cur_status, *cur_reason;
        bool by_operator;
        size_t accepted, waiting;
        bool accept;
        const char *reason;
    } cases[] = {
        /* AutoAcceptMax, exact count. */
        {"{\"maxAcceptableAdvertisement\":2}", NULL, "", "", false, 0, 0, true,
         ADVPOL_ACCEPTED_BY_POLICY},
        {"{\"maxAcceptableAdvertisement\":2}", NULL, "", "", false, 1, 0, true,
         ADVPOL_ACCEPTED_BY_POLICY},
        {"{\"maxAcceptableAdvertisement\":2}", NULL, "", "", false, 2, 0, false, ADVPOL_MAX},
        {"{\"maxAcceptableAdvertisement\":2}", NULL, "", "", false, 1, 1, false, ADVPOL_MAX},
        {"{\"maxAcceptableAdvertisement\":0}", NULL, "", "", false, 0, 0, false, ADVPOL_MAX},
        /* A lower maximum keeps those accepted. */
        {"{\"maxAcceptableAdvertisement\":1}", NULL, "Accepted", ADVPOL_ACCEPTED_BY_POLICY, false,
         3, 0, true, ADVPOL_ACCEPTED_BY_POLICY},
        /* Refused for the maximum, a slot free (a deletion, a higher maximum): accepted. */
        {"{\"maxAcceptableAdvertisement\":3}", NULL, "Refused", ADVPOL_MAX, false, 2, 0, true,
         ADVPOL_ACCEPTED_BY_POLICY},
        /* Invalid wins over everything, even an operator's acceptance. */
        {"{}", "InvalidQuantity", "Accepted", ADVPOL_ACCEPTED_BY_OPERATOR, true, 0, 0, false,
         "InvalidQuantity"},
        /* The deny list wins over an operator's acceptance and the allow list. */
        {"{\"denyList\":[\"p\"],\"allowList\":[\"p\"]}", NULL, "Accepted",
         ADVPOL_ACCEPTED_BY_OPERATOR, true, 0, 0, false, ADVPOL_DENIED},
        /* An operator's decision stands against the policy... */
        {"{\"acceptPolicy\":\"Manual\"}", NULL, "Accepted", ADVPOL_ACCEPTED_BY_OPERATOR, true, 0, 0,
         true, ADVPOL_ACCEPTED_BY_OPERATOR},
        {"{\"maxAcceptableAdvertisement\":5}", NULL, "Refused", ADVPOL_REFUSED_BY_OPERATOR, true, 0,
         0, false, ADVPOL_REFUSED_BY_OPERATOR},
        {"{\"allowList\":[\"q\"]}", NULL, "Accepted", ADVPOL_ACCEPTED_BY_OPERATOR, true, 0, 0, true,
         ADVPOL_ACCEPTED_BY_OPERATOR},
        {"{\"maxAcceptableAdvertisement\":1}", NULL, "Accepted", ADVPOL_ACCEPTED_BY_OPERATOR, true,
         9, 9, true, ADVPOL_ACCEPTED_BY_OPERATOR},
        /* ... but a "decided by operator" flag without a decision is no decision. */
        {"{\"acceptPolicy\":\"Manual\"}", NULL, "", "", true, 0, 0, false, ADVPOL_MANUAL},
        /* Allow list. */
        {"{\"allowList\":[\"q\"]}", NULL, "", "", false, 0, 0, false, ADVPOL_NOT_ALLOWED},
        {"{\"allowList\":[\"q\"]}", NULL, "Accepted", ADVPOL_ACCEPTED_BY_POLICY, false, 0, 0, false,
         ADVPOL_NOT_ALLOWED},
        {"{\"allowList\":[\"p\"]}", NULL, "", "", false, 0, 0, true, ADVPOL_ACCEPTED_BY_POLICY},
        {"{\"allowList\":[]}", NULL, "", "", false, 0, 0, true, ADVPOL_ACCEPTED_BY_POLICY},
        /* Manual: new arrivals wait; those accepted by policy before stay. */
        {"{\"acceptPolicy\":\"Manual\"}", NULL, "", "", false, 0, 0, false, ADVPOL_MANUAL},
        {"{\"acceptPolicy\":\"Manual\"}", NULL, "Refused", ADVPOL_MAX, false, 0, 0, false,
         ADVPOL_MANUAL},
        {"{\"acceptPolicy\":\"Manual\"}", NULL, "Accepted", ADVPOL_ACCEPTED_BY_POLICY, false, 0, 0,
         true, ADVPOL_ACCEPTED_BY_POLICY},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        struct adv_config c;
        struct advpol_input in;
        struct advpol_result out;
        json_t *cc;

        snprintf(text, sizeof(text), "{\"spec\":{\"advertisementConfig\":{\"ingoingConfig\":%s}}}",
                 cases[i].cfg);
        cc = load(text);
        advcfg_read(cc, &c);
        memset(&in, 0, sizeof(in));
        in.peer = "p";
        in.cfg = &c;
        in.invalid_reason = cases[i].invalid;
        in.invalid_message = "why";
        in.cur_status = cases[i].cur_status;
        in.cur_reason = cases[i].cur_reason;
        in.by_operator = cases[i].by_operator;
        in.accepted_others = cases[i].accepted;
        in.waiting_before = cases[i].waiting;
        advpol_decide(&in, &out);
        if (out.accept != cases[i].accept || strcmp(out.reason, cases[i].reason) != 0)
            fail_msg("case %zu: got %s/%s, want %s/%s (%s)", i, out.accept ? "accept" : "refuse",
                     out.reason, cases[i].accept ? "accept" : "refuse", cases[i].reason,
                     out.message);
        assert_true(out.message[0] != '\0');
        advcfg_done(&c);
        json_decref(cc);
    }
}

static void test_waiting(void **state)
{
    (void)state;
    assert_true(advpol_waiting(NULL, NULL, false));
    assert_true(advpol_waiting("", "", false));
    assert_true(advpol_waiting("Refused", ADVPOL_MAX, false));
    assert_false(advpol_waiting("Refused", ADVPOL_MAX, true));
    assert_false(advpol_waiting("Refused", ADVPOL_DENIED, false));
    assert_false(advpol_waiting("Refused", "InvalidQuantity", false));
    assert_false(advpol_waiting("Accepted", ADVPOL_ACCEPTED_BY_POLICY, false));
}

/* ---- advpol_validate
 * -------------------------------------------------------------------------------- */

static void test_validate(void **state)
{
    /* Now is 2026-01-01T00:00:00Z = 1767225600. */
    static const struct {
        const char *name, *spec;
        const char *reason; /* NULL: valid */
    } cases[] = {
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\",\"memory\":\"4Gi\","
         "\"pods\":110}},\"kubeConfigRef\":{\"name\":\"s\",\"namespace\":\"ns\"},\"timestamp\":"
         "\"2025-12-31T23:59:00Z\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         NULL},
        /* Fractions, offsets and a reference without a namespace are fine. */
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"0\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00.123456Z\",\"timeToLive\":"
         "\"2026-01-01T01:00:00+01:00\"}",
         "Expired"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"0\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00.123456Z\",\"timeToLive\":"
         "\"2026-01-01T01:00:01+01:00\"}",
         NULL},
        {"advertisement-q",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
         "\"2026-01-01T00:30:00Z\"}",
         "IdentityMismatch"},
        {"advertisement-p",
         "{\"clusterId\":\"q\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
         "\"2026-01-01T00:30:00Z\"}",
         "IdentityMismatch"},
        {"advertisement-p",
         "{\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"kubeConfigRef\":{\"name\":\"s\"},"
         "\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         "IdentityMismatch"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"-1\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
         "\"2026-01-01T00:30:00Z\"}",
         "InvalidQuantity"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"memory\":-5}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
         "\"2026-01-01T00:30:00Z\"}",
         "InvalidQuantity"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2 "
         "cores\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
         "\"2026-01-01T00:30:00Z\"}",
         "InvalidQuantity"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":true}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
         "\"2026-01-01T00:30:00Z\"}",
         "InvalidQuantity"},
        /* Prices: a map of non-negative quantities, copied as they are. */
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"prices\":"
         "{\"cpu\":\"0.5\",\"memory\":\"2m\",\"pods\":0},\"kubeConfigRef\":{\"name\":\"s\"},"
         "\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         NULL},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"prices\":null,"
         "\"kubeConfigRef\":{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\","
         "\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         NULL},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"prices\":"
         "{\"cpu\":\"-1\"},\"kubeConfigRef\":{\"name\":\"s\"},\"timestamp\":"
         "\"2025-12-31T23:59:00Z\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         "InvalidPrice"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"prices\":"
         "{\"cpu\":\"cheap\"},\"kubeConfigRef\":{\"name\":\"s\"},\"timestamp\":"
         "\"2025-12-31T23:59:00Z\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         "InvalidPrice"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"prices\":"
         "[\"1\"],\"kubeConfigRef\":{\"name\":\"s\"},\"timestamp\":"
         "\"2025-12-31T23:59:00Z\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         "InvalidPrice"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{}},\"kubeConfigRef\":{\"name\":\"s\"},"
         "\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         "MissingField"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"timestamp\":"
         "\"2025-12-31T23:59:00Z\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         "MissingField"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\",\"namespace\":\"elsewhere\"},\"timestamp\":\"2025-12-31T23:59:00Z\","
         "\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         "InvalidField"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"yesterday\",\"timeToLive\":\"2026-01-01T00:30:00Z\"}",
         "MissingField"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
         "\"2026-13-01T00:30:00Z\"}",
         "MissingField"},
        {"advertisement-p",
         "{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":\"2\"}},\"kubeConfigRef\":"
         "{\"name\":\"s\"},\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
         "\"2025-12-31T23:59:59Z\"}",
         "Expired"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[2048], msg[256];
        const char *got;
        json_t *adv;

        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"spec\":%s}", cases[i].name,
                 cases[i].spec);
        adv = load(text);
        msg[0] = '\0';
        got = advpol_validate(adv, "p", 1767225600, msg, sizeof(msg));
        if (!cases[i].reason ? got != NULL : !got || strcmp(got, cases[i].reason) != 0)
            fail_msg("case %zu: got %s (%s), want %s", i, got ? got : "valid", msg,
                     cases[i].reason ? cases[i].reason : "valid");
        if (got)
            assert_true(msg[0] != '\0');
        json_decref(adv);
    }
    {
        /* More prices than ADVPOL_MAX_PRICES. */
        char msg[256];
        json_t *adv = load("{\"metadata\":{\"name\":\"advertisement-p\",\"namespace\":\"ns\"},"
                           "\"spec\":{\"clusterId\":\"p\",\"resourceQuota\":{\"hard\":{\"cpu\":"
                           "\"2\"}},\"prices\":{},\"kubeConfigRef\":{\"name\":\"s\"},"
                           "\"timestamp\":\"2025-12-31T23:59:00Z\",\"timeToLive\":"
                           "\"2026-01-01T00:30:00Z\"}}");
        json_t *prices = json_object_get(json_object_get(adv, "spec"), "prices");

        for (int i = 0; i < ADVPOL_MAX_PRICES; i++) {
            char k[32];

            snprintf(k, sizeof(k), "example.com/r%d", i);
            json_object_set_new(prices, k, json_string("1"));
        }
        assert_null(advpol_validate(adv, "p", 1767225600, msg, sizeof(msg)));
        json_object_set_new(prices, "example.com/one-more", json_string("1"));
        assert_string_equal(advpol_validate(adv, "p", 1767225600, msg, sizeof(msg)),
                            "InvalidPrice");
        json_decref(adv);
    }
    {
        char msg[64];
        json_t *empty = load("{}");

        assert_string_equal(advpol_validate(NULL, "p", 0, msg, sizeof(msg)), "IdentityMismatch");
        assert_string_equal(advpol_validate(empty, NULL, 0, msg, sizeof(msg)), "IdentityMismatch");
        json_decref(empty);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_values),
        cmocka_unit_test(test_config_offer_source),
        cmocka_unit_test(test_config_lists_and_image),
        cmocka_unit_test(test_policy_for),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_waiting),
        cmocka_unit_test(test_validate),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
