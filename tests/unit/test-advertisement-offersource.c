/* Unit tests of src/advertisement/offersource.c: the broker's offer (ConfigMap
 * cliqo-broker-offer-<consumer>, data.resources) parsed and validated, the choice between it and
 * the cluster's own share, the ConfigMap's name, and the informer transform; table-driven.
 *
 * JSON in the tables is written with single quotes (turned into double quotes before parsing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advertisement/offersource.h"
#include "testjson.h"

/* A ConfigMap whose data.resources is `resources` (raw text, used as is). */
static json_t *cm_with(const char *resources)
{
    json_t *cm = test_js("{'metadata': {'name': 'cliqo-broker-offer-c1', 'namespace': 'cliqo', "
                         "'resourceVersion': '7', 'labels': {'cliqo.io/broker-offer': 'true'}}, "
                         "'data': {}}");

    assert_int_equal(
        json_object_set_new(json_object_get(cm, "data"), "resources", json_string(resources)), 0);
    return cm;
}

/* "name=value,..." of a list, in its order. */
static void show(const struct shr_list *l, char *buf, size_t size)
{
    size_t off = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < l->n && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%s=%" PRId64, i ? "," : "",
                                l->items[i].name, l->items[i].value);
}

/* ---- advsrc_parse -----------------------------------------------------------------------------
 */

static void test_parse(void **state)
{
    static const struct {
        const char *resources; /* data.resources, with ' for " */
        const char *want;      /* the list, or NULL: invalid */
        const char *reason;    /* a part of the reason when invalid */
    } cases[] = {
        /* 0: the example of the docs, sorted by name, each in its smallest unit */
        {"{'nvidia.com/gpu': '1', 'memory': '8Gi', 'cpu': '4'}",
         "cpu=4000,memory=8589934592,nvidia.com/gpu=1", NULL},
        /* 1: canonical strings as the aggregator writes them; rounding up as everywhere */
        {"{'cpu': '1500m', 'memory': '1536Mi', 'pods': '110', 'ephemeral-storage': '0.5'}",
         "cpu=1500,ephemeral-storage=1,memory=1610612736,pods=110", NULL},
        {"{'cpu': '0.0001'}", "cpu=1", NULL},
        /* 3: an integer, as an Advertisement may carry one */
        {"{'pods': 110, 'cpu': 2}", "cpu=2000,pods=110", NULL},
        /* 4: zero is an amount */
        {"{'cpu': '0', 'memory': '0'}", "cpu=0,memory=0", NULL},
        /* 5: empty is valid (advsrc_choose makes it nothing) */
        {"{}", "", NULL},
        {" \n{ 'cpu' :\t'1' }\n", "cpu=1000", NULL},
        {"{'hugepages-2Mi': '1Gi', 'example.com/foo': '3'}",
         "example.com/foo=3,hugepages-2Mi=1073741824", NULL},
        /* 8-: one bad entry makes the whole map invalid */
        {"{'cpu': '4', 'memory': '-1Gi'}", NULL, "negative"},
        {"{'cpu': '-1'}", NULL, "negative"},
        {"{'cpu': '4 cores'}", NULL, "not a valid quantity"},
        {"{'cpu': ''}", NULL, "not a valid quantity"},
        {"{'cpu': '1.5.0'}", NULL, "not a valid quantity"},
        {"{'cpu': '10000000000000000'}", NULL, "too large"},
        {"{'cpu': 1.5}", NULL, "not a quantity string"},
        {"{'cpu': null}", NULL, "not a quantity string"},
        {"{'cpu': {'value': '1'}}", NULL, "not a quantity string"},
        {"{'cpu': true}", NULL, "not a quantity string"},
        {"{'cpu': -2}", NULL, "negative"},
        {"{'Not A Name!': '1'}", NULL, "not a resource name"},
        {"{'': '1'}", NULL, "not a resource name"},
        {"{'a/b/c': '1'}", NULL, "not a resource name"},
        {"{'-gpu': '1'}", NULL, "not a resource name"},
        /* duplicate names: refused, never "the last one wins" */
        {"{'cpu': '1', 'cpu': '100'}", NULL, "not JSON"},
        {"{'cpu': '1'", NULL, "not JSON"},
        {"", NULL, "not JSON"},
        {"['cpu', '1']", NULL, "not a JSON object"},
        {"'cpu'", NULL, "not JSON"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512], err[256] = "", got[1024];
        struct shr_list l;
        json_t *cm;
        int r;

        snprintf(text, sizeof(text), "%s", cases[i].resources);
        for (char *p = text; *p; p++)
            if (*p == '\'')
                *p = '"';
        cm = cm_with(text);
        memset(&l, 0x5a, sizeof(l));
        r = advsrc_parse(cm, &l, err, sizeof(err));
        if (cases[i].want) {
            if (r != 0)
                fail_msg("case %zu: refused: %s", i, err);
            show(&l, got, sizeof(got));
            if (strcmp(got, cases[i].want) != 0)
                fail_msg("case %zu: got %s, want %s", i, got, cases[i].want);
        } else {
            if (r != -EINVAL)
                fail_msg("case %zu: accepted (%d)", i, r);
            if (!strstr(err, cases[i].reason) || strchr(err, '\n'))
                fail_msg("case %zu: reason \"%s\", want \"%s\" on one line", i, err,
                         cases[i].reason);
            assert_int_equal(l.items[0].value, 0x5a5a5a5a5a5a5a5a); /* untouched */
        }
        json_decref(cm);
    }
}

/* The ConfigMap around the map: where data.resources is not. */
static void test_parse_object(void **state)
{
    static const struct {
        const char *cm;
        const char *reason;
    } cases[] = {
        {"{'metadata': {'name': 'x'}}", "missing"},
        {"{'data': {}}", "missing"},
        {"{'data': {'other': '{}'}}", "missing"},
        {"{'binaryData': {'resources': 'e30='}}", "missing"},
        {"{'data': {'resources': 7}}", "bytes"}, /* advsrc_transform's mark */
        {"{'data': {'resources': {'cpu': '1'}}}", "missing"},
        {"{'data': []}", "missing"},
        {"[]", "missing"},
    };
    char err[256];
    struct shr_list l;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *cm = test_js(cases[i].cm);

        err[0] = '\0';
        if (advsrc_parse(cm, &l, err, sizeof(err)) != -EINVAL || !strstr(err, cases[i].reason))
            fail_msg("case %zu: reason \"%s\", want \"%s\"", i, err, cases[i].reason);
        json_decref(cm);
    }
    assert_int_equal(advsrc_parse(NULL, &l, err, sizeof(err)), -EINVAL);
}

/* 64 letters a. */
static const char *big_a(void)
{
    return "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
}

/* The bounds: SHR_MAX_RESOURCES names, ADVSRC_MAX_BYTES bytes. */
static void test_parse_limits(void **state)
{
    char err[256], *big;
    struct shr_list l;
    json_t *map = json_object(), *cm;
    char *text;
    size_t n;

    (void)state;
    assert_non_null(map);
    for (int i = 0; i < SHR_MAX_RESOURCES; i++) {
        char name[32];

        snprintf(name, sizeof(name), "example.com/r%02d", i);
        json_object_set_new(map, name, json_string("1"));
    }
    text = json_dumps(map, JSON_COMPACT);
    cm = cm_with(text);
    assert_int_equal(advsrc_parse(cm, &l, err, sizeof(err)), 0);
    assert_int_equal(l.n, SHR_MAX_RESOURCES);
    assert_string_equal(l.items[0].name, "example.com/r00"); /* sorted */
    assert_string_equal(l.items[SHR_MAX_RESOURCES - 1].name, "example.com/r63");
    json_decref(cm);
    free(text);

    json_object_set_new(map, "example.com/one-more", json_string("1"));
    text = json_dumps(map, JSON_COMPACT);
    cm = cm_with(text);
    assert_int_equal(advsrc_parse(cm, &l, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "more than the 64"));
    json_decref(cm);
    free(text);
    json_decref(map);

    /* The longest name a list holds (SHR_NAME_MAX - 1 bytes, a qualified name), and one more. */
    big = malloc(ADVSRC_MAX_BYTES + 2);
    assert_non_null(big);
    for (int extra = 0; extra < 2; extra++) {
        char name[SHR_NAME_MAX + 8];

        snprintf(name, sizeof(name), "%.60s.%.*s/resource012", big_a(), 54 + extra, big_a());
        assert_int_equal(strlen(name), SHR_NAME_MAX - 1 + extra);
        map = json_pack("{s:s}", name, "1");
        text = json_dumps(map, JSON_COMPACT);
        cm = cm_with(text);
        if (extra == 0) {
            assert_int_equal(advsrc_parse(cm, &l, err, sizeof(err)), 0);
            assert_string_equal(l.items[0].name, name);
        } else {
            assert_int_equal(advsrc_parse(cm, &l, err, sizeof(err)), -EINVAL);
            assert_non_null(strstr(err, "not a resource name"));
        }
        json_decref(cm);
        free(text);
        json_decref(map);
    }

    /* Valid JSON padded with spaces to exactly the limit, and one byte more. */
    n = ADVSRC_MAX_BYTES;
    memset(big, ' ', n);
    memcpy(big, "{\"cpu\":\"1\"}", 11);
    big[n] = '\0';
    cm = cm_with(big);
    assert_int_equal(advsrc_parse(cm, &l, err, sizeof(err)), 0);
    json_decref(cm);
    big[n] = ' ';
    big[n + 1] = '\0';
    cm = cm_with(big);
    assert_int_equal(advsrc_parse(cm, &l, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "bytes"));
    json_decref(cm);
    free(big);
}

/* ---- advsrc_choose ----------------------------------------------------------------------------
 */

static void test_choose(void **state)
{
    static const struct {
        enum advcfg_offer_source source;
        const char *cm; /* data.resources, NULL: no ConfigMap */
        enum advsrc_from from;
        const char *want;
        unsigned threshold;
        bool details;
    } cases[] = {
        /* Cluster: the computed share, whatever a ConfigMap says */
        {ADVCFG_OFFER_CLUSTER, NULL, ADVSRC_FROM_CLUSTER, "cpu=96000,memory=1000000", 5, true},
        {ADVCFG_OFFER_CLUSTER, "{'cpu': '1'}", ADVSRC_FROM_CLUSTER, "cpu=96000,memory=1000000", 5,
         true},
        {ADVCFG_OFFER_CLUSTER, "{'cpu': 'x'}", ADVSRC_FROM_CLUSTER, "cpu=96000,memory=1000000", 5,
         true},
        /* Broker: the ConfigMap, never the computed share */
        {ADVCFG_OFFER_BROKER, "{'cpu': '4', 'memory': '8Gi', 'nvidia.com/gpu': '1'}",
         ADVSRC_FROM_BROKER, "cpu=4000,memory=8589934592,nvidia.com/gpu=1", 0, false},
        {ADVCFG_OFFER_BROKER, "{'nvidia.com/gpu': '2'}", ADVSRC_FROM_BROKER, "nvidia.com/gpu=2", 0,
         false},
        /* absent, invalid, empty: nothing, never everything */
        {ADVCFG_OFFER_BROKER, NULL, ADVSRC_FROM_BROKER_ABSENT, "cpu=0,memory=0,pods=0", 0, false},
        {ADVCFG_OFFER_BROKER, "{'cpu': '4', 'memory': 'lots'}", ADVSRC_FROM_BROKER_INVALID,
         "cpu=0,memory=0,pods=0", 0, false},
        {ADVCFG_OFFER_BROKER, "not json", ADVSRC_FROM_BROKER_INVALID, "cpu=0,memory=0,pods=0", 0,
         false},
        {ADVCFG_OFFER_BROKER, "{}", ADVSRC_FROM_BROKER, "cpu=0,memory=0,pods=0", 0, false},
        /* an invalid offerSource: nothing either */
        {ADVCFG_OFFER_INVALID, NULL, ADVSRC_FROM_INVALID_SOURCE, "cpu=0,memory=0,pods=0", 0, false},
        {ADVCFG_OFFER_INVALID, "{'cpu': '1'}", ADVSRC_FROM_INVALID_SOURCE, "cpu=0,memory=0,pods=0",
         0, false},
    };
    struct shr_list computed = {
        .n = 2, .items = {{.name = "cpu", .value = 96000}, {.name = "memory", .value = 1000000}}};

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[256], err[256] = "x", got[1024];
        struct advsrc_offer o;
        json_t *cm = NULL;

        if (cases[i].cm) {
            snprintf(text, sizeof(text), "%s", cases[i].cm);
            for (char *p = text; *p; p++)
                if (*p == '\'')
                    *p = '"';
            cm = cm_with(text);
        }
        assert_int_equal(advsrc_choose(cases[i].source, 5, &computed, cm, &o, err, sizeof(err)), 0);
        show(&o.amounts, got, sizeof(got));
        if (o.from != cases[i].from || strcmp(got, cases[i].want) != 0 ||
            o.threshold != cases[i].threshold || o.node_details != cases[i].details)
            fail_msg("case %zu: got %s %s threshold %u details %d", i, advsrc_from_name(o.from),
                     got, o.threshold, o.node_details);
        /* a reason exactly when the ConfigMap is invalid */
        assert_int_equal(err[0] != '\0', cases[i].from == ADVSRC_FROM_BROKER_INVALID);
        json_decref(cm);
    }
    {
        struct advsrc_offer o;
        char err[64];

        /* The cluster's share needs the computation; the others do not. */
        assert_int_equal(advsrc_choose(ADVCFG_OFFER_CLUSTER, 5, NULL, NULL, &o, err, sizeof(err)),
                         -EINVAL);
        assert_int_equal(advsrc_choose(ADVCFG_OFFER_BROKER, 5, NULL, NULL, &o, err, sizeof(err)),
                         0);
        assert_int_equal(o.from, ADVSRC_FROM_BROKER_ABSENT);
        assert_int_equal(
            advsrc_choose(ADVCFG_OFFER_BROKER, 5, &computed, NULL, NULL, err, sizeof(err)),
            -EINVAL);
    }
    assert_string_equal(advsrc_from_name(ADVSRC_FROM_CLUSTER), "cluster");
    assert_string_equal(advsrc_from_name(ADVSRC_FROM_BROKER_INVALID), "broker:invalid");
    assert_string_equal(advsrc_from_name((enum advsrc_from)99), "source:invalid");
}

/* ---- names ------------------------------------------------------------------------------------
 */

static void test_names(void **state)
{
    static const struct {
        const char *id;
        const char *want; /* NULL: no name */
    } cases[] = {
        {"cluster-1", "cliqo-broker-offer-cluster-1"},
        {"3f2a9c1e-7b4d-4e8a-9c1f-0d2e3b4a5c6d",
         "cliqo-broker-offer-3f2a9c1e-7b4d-4e8a-9c1f-0d2e3b4a5c6d"},
        {"a", "cliqo-broker-offer-a"},
        {"Cluster-1", NULL},
        {"cluster_1", NULL},
        {"-cluster", NULL},
        {"cluster.1", NULL},
        {"", NULL},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL}, /* 64 */
    };
    char buf[128];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int r = advsrc_name(cases[i].id, buf, sizeof(buf));

        if (!cases[i].want) {
            if (r != -EINVAL)
                fail_msg("case %zu: %s has a name", i, cases[i].id);
            continue;
        }
        assert_int_equal(r, 0);
        assert_string_equal(buf, cases[i].want);
        /* and back */
        assert_non_null(advsrc_consumer_of(buf));
        assert_string_equal(advsrc_consumer_of(buf), cases[i].id);
    }
    assert_int_equal(advsrc_name(NULL, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(advsrc_name("cluster-1", buf, 20), -ENOSPC);
    assert_null(advsrc_consumer_of(NULL));
    assert_null(advsrc_consumer_of("cliqo-broker-offer-"));
    assert_null(advsrc_consumer_of("cliqo-broker-offer-Bad"));
    assert_null(advsrc_consumer_of("cliqo-broker-state"));
    assert_null(advsrc_consumer_of("x-cliqo-broker-offer-c1"));
    assert_null(advsrc_consumer_of("cluster-id"));
}

/* ---- the informer transform -------------------------------------------------------------------
 */

static void test_transform(void **state)
{
    json_t *cm =
        test_js("{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': "
                "'cliqo-broker-offer-c1', 'namespace': 'cliqo', 'resourceVersion': '7', "
                "'uid': 'u', 'labels': {'cliqo.io/broker-offer': 'true'}, 'annotations': "
                "{'a': 'b'}}, 'data': {'resources': '{\\'cpu\\': \\'2\\'}', 'other': 'x'}, "
                "'binaryData': {'b': 'AA=='}}");
    json_t *want;
    struct shr_list l;
    char err[256], *big;

    (void)state;
    /* the single quotes inside the data were turned into double ones by test_js() */
    advsrc_transform(cm, NULL);
    want = test_js("{'metadata': {'name': 'cliqo-broker-offer-c1', 'namespace': 'cliqo', "
                   "'resourceVersion': '7'}, 'data': {'resources': '{\\'cpu\\': \\'2\\'}'}}");
    assert_true(json_equal(cm, want));
    assert_int_equal(advsrc_parse(cm, &l, err, sizeof(err)), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.items[0].value, 2000);
    json_decref(want);
    json_decref(cm);

    /* Too long to keep: its length instead, which advsrc_parse reports. */
    big = malloc(ADVSRC_MAX_BYTES + 2);
    assert_non_null(big);
    memset(big, ' ', ADVSRC_MAX_BYTES + 1);
    big[ADVSRC_MAX_BYTES + 1] = '\0';
    cm = cm_with(big);
    free(big);
    advsrc_transform(cm, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(cm, "data"), "resources")),
                     ADVSRC_MAX_BYTES + 1);
    assert_int_equal(advsrc_parse(cm, &l, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "bytes"));
    json_decref(cm);

    /* Without data: metadata only, and advsrc_parse says what is missing. */
    cm = test_js("{'metadata': {'name': 'n', 'namespace': 'cliqo'}}");
    advsrc_transform(cm, NULL);
    want = test_js("{'metadata': {'name': 'n', 'namespace': 'cliqo'}, 'data': {}}");
    assert_true(json_equal(cm, want));
    json_decref(want);
    json_decref(cm);

    /* Anything else goes through unharmed. */
    advsrc_transform(NULL, NULL);
    cm = test_js("[1]");
    advsrc_transform(cm, NULL);
    json_decref(cm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),        cmocka_unit_test(test_parse_object),
        cmocka_unit_test(test_parse_limits), cmocka_unit_test(test_choose),
        cmocka_unit_test(test_names),        cmocka_unit_test(test_transform),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
