/* Unit tests of src/admission/certs.c: the rotation plan (a table over the facts), and the checks
 * on real certificates made with the peering PKI. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/certs.h"
#include "common/xalloc.h"
#include "peering/pki.h"

#define DAY  86400LL
#define T0   1700000000LL
#define YEAR (365 * DAY)

/* A CA of a year and a serving certificate of 30 days, both from T0. */
static struct adm_cert_facts base(int64_t now)
{
    struct adm_cert_facts f = {0};

    f.now = now;
    f.ca_ok = true;
    f.ca.not_before = T0;
    f.ca.not_after = T0 + YEAR;
    f.serving_ok = true;
    f.serving.not_before = T0;
    f.serving.not_after = T0 + 30 * DAY;
    f.next_published_s = -1;
    return f;
}

static void test_plan(void **state)
{
    struct adm_cert_facts f;
    int64_t next;

    (void)state;
    /* Nothing yet: a CA and a serving certificate. */
    memset(&f, 0, sizeof(f));
    f.now = T0;
    assert_int_equal(adm_cert_plan(&f, &next), ADM_CERT_NEW_CA | ADM_CERT_NEW_SERVING);
    /* All fresh: nothing due; next is the serving certificate's 2/3 (day 20). */
    f = base(T0 + DAY);
    assert_int_equal(adm_cert_plan(&f, &next), 0);
    assert_int_equal(next, T0 + 20 * DAY);
    /* The serving certificate at 2/3 of its life is renewed. */
    f = base(T0 + 20 * DAY);
    assert_int_equal(adm_cert_plan(&f, &next), ADM_CERT_NEW_SERVING);
    assert_int_equal(next, f.now);
    /* ... and one that is not usable (other SANs, other CA, expired) at once. */
    f = base(T0 + DAY);
    f.serving_ok = false;
    assert_int_equal(adm_cert_plan(&f, &next), ADM_CERT_NEW_SERVING);
    f = base(T0 + DAY);
    f.force_serving = true;
    assert_int_equal(adm_cert_plan(&f, &next), ADM_CERT_NEW_SERVING);
    /* The CA at 2/3 of its life gets a successor (the serving certificate is renewed later). */
    f = base(T0 + YEAR / 3 * 2);
    f.serving.not_before = f.now - DAY;
    f.serving.not_after = f.now + 29 * DAY;
    assert_int_equal(adm_cert_plan(&f, &next), ADM_CERT_START_ROTATION);
    f = base(T0 + YEAR / 3 * 2 - 1);
    f.serving.not_before = f.now - DAY;
    f.serving.not_after = f.now + 29 * DAY;
    assert_int_equal(adm_cert_plan(&f, &next), 0);
    assert_int_equal(next, T0 + YEAR / 3 * 2);
    /* A forced rotation. */
    f = base(T0 + DAY);
    f.force_ca = true;
    assert_int_equal(adm_cert_plan(&f, &next), ADM_CERT_START_ROTATION);
    /* The next CA not in every configuration yet: nothing but waiting. */
    f = base(T0 + DAY);
    f.next_ok = true;
    f.next.not_before = T0 + DAY;
    f.next.not_after = T0 + DAY + YEAR;
    assert_int_equal(adm_cert_plan(&f, &next), 0);
    assert_int_equal(next, T0 + 20 * DAY);
    /* ... published for 4 s: promoted ADM_SETTLE_S after publication. */
    f.next_published_s = 4;
    assert_int_equal(adm_cert_plan(&f, &next), 0);
    assert_int_equal(next, f.now + ADM_SETTLE_S - 4);
    f.next_published_s = ADM_SETTLE_S;
    assert_int_equal(adm_cert_plan(&f, &next), ADM_CERT_PROMOTE | ADM_CERT_NEW_SERVING);
    /* A forced rotation while one is under way starts no other. */
    f.next_published_s = 1;
    f.force_ca = true;
    assert_int_equal(adm_cert_plan(&f, &next), 0);
    /* Previous CAs: an expired one is pruned, a valid one sets the next check. */
    f = base(T0 + DAY);
    f.nprevious = 2;
    f.previous_not_after[0] = T0 + DAY;
    f.previous_not_after[1] = T0 + 5 * DAY;
    assert_int_equal(adm_cert_plan(&f, &next), ADM_CERT_PRUNE);
    f.previous_not_after[0] = T0 + 3 * DAY;
    assert_int_equal(adm_cert_plan(&f, &next), 0);
    assert_int_equal(next, T0 + 3 * DAY);
    /* An expired or unusable CA: afresh. */
    f = base(T0 + DAY);
    f.ca_ok = false;
    f.next_ok = true;
    assert_int_equal(adm_cert_plan(&f, NULL), ADM_CERT_NEW_CA | ADM_CERT_NEW_SERVING);
}

static void test_real(void **state)
{
    char *ca = NULL, *ca_key = NULL, *ca2 = NULL, *ca2_key = NULL, *cert = NULL, *key = NULL;
    char *cert2 = NULL, *key2 = NULL, *pems[3] = {0}, err[256], both[16384];
    const char *sans[] = {"cliqo-agent-webhook", "cliqo-agent-webhook.cliqo.svc", "127.0.0.1"};
    const char *reordered[] = {"127.0.0.1", "cliqo-agent-webhook.cliqo.svc", "cliqo-agent-webhook"};
    const char *other[] = {"cliqo-agent-webhook", "cliqo-agent-webhook.cliqo.svc", "127.0.0.2"};
    struct adm_cert_info i;
    int64_t now = (int64_t)time(NULL), na[3];

    (void)state;
    assert_int_equal(peer_pki_ca_create("t-ca", 1, &ca, &ca_key, err, sizeof(err)), 0);
    assert_int_equal(peer_pki_ca_create("t-ca2", 1, &ca2, &ca2_key, err, sizeof(err)), 0);
    assert_int_equal(peer_pki_server_issue(ca, strlen(ca), ca_key, strlen(ca_key), "w", sans, 3, 30,
                                           &cert, &key, err, sizeof(err)),
                     0);
    assert_int_equal(peer_pki_server_issue(ca2, strlen(ca2), ca2_key, strlen(ca2_key), "w", sans, 3,
                                           30, &cert2, &key2, err, sizeof(err)),
                     0);
    /* The CA. */
    assert_int_equal(adm_cert_ca_ok(ca, strlen(ca), ca_key, strlen(ca_key), now, &i), 0);
    assert_true(i.not_after - i.not_before >= YEAR);
    assert_int_equal(adm_cert_ca_ok(ca, strlen(ca), ca2_key, strlen(ca2_key), now, &i), -EINVAL);
    assert_int_equal(adm_cert_ca_ok(cert, strlen(cert), key, strlen(key), now, &i), -EINVAL);
    assert_int_equal(adm_cert_ca_ok(ca, strlen(ca), ca_key, strlen(ca_key), now + 2 * YEAR, &i),
                     -EINVAL);
    assert_int_equal(adm_cert_ca_ok(NULL, 0, ca_key, strlen(ca_key), now, &i), -EINVAL);
    /* The serving certificate. */
    assert_int_equal(adm_cert_serving_ok(cert, strlen(cert), key, strlen(key), ca, strlen(ca),
                                         reordered, 3, now, &i, err, sizeof(err)),
                     0);
    assert_true(i.not_after - i.not_before >= 30 * DAY);
    assert_int_equal(adm_cert_serving_ok(cert, strlen(cert), key, strlen(key), ca, strlen(ca),
                                         other, 3, now, &i, err, sizeof(err)),
                     -EINVAL);
    assert_string_equal(err, "the serving certificate names other hosts");
    assert_int_equal(adm_cert_serving_ok(cert, strlen(cert), key, strlen(key), ca, strlen(ca), sans,
                                         2, now, &i, err, sizeof(err)),
                     -EINVAL);
    assert_int_equal(adm_cert_serving_ok(cert2, strlen(cert2), key2, strlen(key2), ca, strlen(ca),
                                         sans, 3, now, &i, err, sizeof(err)),
                     -EINVAL);
    assert_string_equal(err, "the serving certificate is not signed by the current CA");
    assert_int_equal(adm_cert_serving_ok(cert, strlen(cert), key2, strlen(key2), ca, strlen(ca),
                                         sans, 3, now, &i, err, sizeof(err)),
                     -EINVAL);
    assert_string_equal(err, "the serving certificate does not match its key");
    assert_int_equal(adm_cert_serving_ok(cert, strlen(cert), key, strlen(key), ca, strlen(ca), sans,
                                         3, now + 31 * DAY, &i, err, sizeof(err)),
                     -EINVAL);
    assert_string_equal(err, "the serving certificate is not valid now");
    assert_int_equal(adm_cert_serving_ok("x", 1, key, strlen(key), ca, strlen(ca), sans, 3, now, &i,
                                         err, sizeof(err)),
                     -EINVAL);
    /* Lists of CAs. */
    snprintf(both, sizeof(both), "%s%s", ca, ca2);
    assert_int_equal(adm_cert_list(both, strlen(both), na, pems, 3), 2);
    assert_string_equal(pems[0], ca);
    assert_string_equal(pems[1], ca2);
    assert_true(na[0] > now && na[1] > now);
    x_free(pems[0]);
    x_free(pems[1]);
    assert_int_equal(adm_cert_list(both, strlen(both), NULL, NULL, 1), -E2BIG);
    assert_int_equal(adm_cert_list("", 0, NULL, NULL, 1), 0);
    assert_int_equal(adm_cert_list("garbage", 7, NULL, NULL, 1), 0);
    snprintf(both, sizeof(both), "%s-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
             ca);
    assert_int_equal(adm_cert_list(both, strlen(both), NULL, pems, 3), -EINVAL);
    assert_null(pems[0]);
    assert_int_equal(adm_cert_parse(ca, strlen(ca), &i), 0);
    assert_int_equal(adm_cert_parse("x", 1, &i), -EINVAL);
    x_free(ca);
    x_free(ca_key);
    x_free(ca2);
    x_free(ca2_key);
    x_free(cert);
    x_free(key);
    x_free(cert2);
    x_free(key2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_real),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
