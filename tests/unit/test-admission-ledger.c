/* Unit tests of src/admission/ledger.c: scenarios of reservations (reserve, informer events,
 * expiry, sums, the per-consumer bound), each a table of steps with what every step must give. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testjson.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admission/ledger.h"
#include "admission/offer.h"

enum op { END, RESERVE, RESERVE_TRUSTED, SEEN, PURGE, SUM, COUNT };

struct step {
    enum op op;
    const char *origin, *ns, *name, *uid; /* SUM: ns/name are the pod left out (NULL: none) */
    const char *amounts;                  /* RESERVE: what is reserved; SUM: the expected sum */
    uint64_t now, expires;
    int want;          /* RESERVE: the return; SEEN, PURGE, COUNT: the number */
    const char *known; /* SUM: "ns/name ns/name": what the informer has */
};

struct scenario {
    const char *what;
    size_t per_consumer;
    struct step steps[16];
};

#define LONG_ID "0123456789012345678901234567890123456789012345678901234567890123"

static const struct scenario scenarios[] = {
    {"a reservation holds until the informer shows its pod",
     0,
     {{RESERVE, "A", "ns1", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, 0, NULL},
      {SUM, "A", NULL, NULL, NULL, "{'cpu':'1','pods':'1'}", 100, 0, 0, NULL},
      {SUM, "B", NULL, NULL, NULL, "{}", 100, 0, 0, NULL},
      {SEEN, NULL, "ns1", "p9", NULL, NULL, 100, 0, 0, NULL},
      {SEEN, NULL, "ns2", "p1", NULL, NULL, 100, 0, 0, NULL},
      {SEEN, NULL, "ns1", "p1", NULL, NULL, 100, 0, 1, NULL},
      {SUM, "A", NULL, NULL, NULL, "{}", 100, 0, 0, NULL},
      {COUNT, "A", NULL, NULL, NULL, NULL, 0, 0, 0, NULL},
      {END}}},
    {"another UID for the same name evicts nothing; the same UID replaces",
     0,
     {{RESERVE, "A", "ns1", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "A", "ns1", "p1", "forged", "{'cpu':'2','pods':'1'}", 10, 3000, 0, NULL},
      {COUNT, "A", NULL, NULL, NULL, NULL, 0, 0, 2, NULL},
      {SUM, "A", NULL, NULL, NULL, "{'cpu':'3','pods':'2'}", 20, 0, 0, NULL},
      {RESERVE, "A", "ns1", "p1", "u1", "{'cpu':'500m','pods':'1'}", 30, 3030, 0, NULL},
      {COUNT, "A", NULL, NULL, NULL, NULL, 0, 0, 2, NULL},
      {SUM, "A", NULL, NULL, NULL, "{'cpu':'2500m','pods':'2'}", 40, 0, 0, NULL},
      /* the informer shows ns1/p1 (whichever UID): both end */
      {SEEN, NULL, "ns1", "p1", NULL, NULL, 50, 0, 2, NULL},
      {SUM, "A", NULL, NULL, NULL, "{}", 60, 0, 0, NULL},
      {END}}},
    {"trusted, a new UID for the same name (the pod created again) replaces the old one",
     0,
     {{RESERVE_TRUSTED, "A", "ns1", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 15000, 0, NULL},
      {RESERVE_TRUSTED, "A", "ns1", "p2", "u2", "{'cpu':'1','pods':'1'}", 0, 15000, 0, NULL},
      {RESERVE_TRUSTED, "A", "ns1", "p1", "u3", "{'cpu':'2','pods':'1'}", 10, 15010, 0, NULL},
      {COUNT, "A", NULL, NULL, NULL, NULL, 0, 0, 2, NULL},
      {SUM, "A", NULL, NULL, NULL, "{'cpu':'3','pods':'2'}", 20, 0, 0, NULL},
      {END}}},
    {"an unconfirmed reservation ends at its expiry",
     0,
     {{RESERVE, "A", "ns1", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "A", "ns1", "p2", "u2", "{'cpu':'2','pods':'1'}", 1000, 16000, 0, NULL},
      {SUM, "A", NULL, NULL, NULL, "{'cpu':'3','pods':'2'}", 2999, 0, 0, NULL},
      {SUM, "A", NULL, NULL, NULL, "{'cpu':'2','pods':'1'}", 3000, 0, 0, NULL},
      {COUNT, NULL, NULL, NULL, NULL, NULL, 0, 0, 2, NULL},
      {PURGE, NULL, NULL, NULL, NULL, NULL, 3000, 0, 1, NULL},
      {COUNT, NULL, NULL, NULL, NULL, NULL, 0, 0, 1, NULL},
      {PURGE, NULL, NULL, NULL, NULL, NULL, 16000, 0, 1, NULL},
      {SUM, "A", NULL, NULL, NULL, "{}", 16000, 0, 0, NULL},
      {END}}},
    {"the pod under review and the pods the informer has are left out of the sum",
     0,
     {{RESERVE, "A", "ns1", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "A", "ns1", "p2", "u2", "{'cpu':'2','pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "A", "ns2", "p3", "u3", "{'memory':'1Gi','pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "B", "nsb", "p4", "u4", "{'cpu':'8','pods':'1'}", 0, 3000, 0, NULL},
      {SUM, "A", "ns1", "p1", NULL, "{'cpu':'2','memory':'1Gi','pods':'2'}", 10, 0, 0, NULL},
      {SUM, "A", "ns1", "p1", NULL, "{'cpu':'2','pods':'1'}", 10, 0, 0, "ns2/p3"},
      {SUM, "A", NULL, NULL, NULL, "{'cpu':'3','pods':'2'}", 10, 0, 0, "ns2/p3 nsb/p4"},
      {SUM, "B", NULL, NULL, NULL, "{'cpu':'8','pods':'1'}", 10, 0, 0, NULL},
      {END}}},
    {"each consumer holds at most its bound; the others keep theirs",
     3,
     {{RESERVE, "A", "ns1", "f1", "x1", "{'pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "A", "ns1", "f2", "x2", "{'pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "A", "ns1", "f3", "x3", "{'pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "A", "ns1", "f4", "x4", "{'pods':'1'}", 0, 3000, -EDQUOT, NULL},
      /* the same pod again replaces its own */
      {RESERVE, "A", "ns1", "f3", "x3", "{'pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "B", "nsb", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, 0, NULL},
      {RESERVE, "C", "nsc", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, 0, NULL},
      {COUNT, "A", NULL, NULL, NULL, NULL, 0, 0, 3, NULL},
      {COUNT, NULL, NULL, NULL, NULL, NULL, 0, 0, 5, NULL},
      /* once they expire, A may reserve again */
      {RESERVE, "A", "ns1", "p5", "u5", "{'cpu':'1','pods':'1'}", 3000, 6000, 0, NULL},
      {COUNT, "A", NULL, NULL, NULL, NULL, 0, 0, 1, NULL},
      {END}}},
    {"what cannot be a pod reserves nothing",
     0,
     {{RESERVE, "A", "ns1", "p1", "", "{'cpu':'1','pods':'1'}", 0, 3000, -EINVAL, NULL},
      {RESERVE, "A", "ns1", "p1", NULL, "{'cpu':'1','pods':'1'}", 0, 3000, -EINVAL, NULL},
      {RESERVE, "A", "ns1", "", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, -EINVAL, NULL},
      {RESERVE, "A", "", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, -EINVAL, NULL},
      {RESERVE, LONG_ID, "ns1", "p1", "u1", "{'cpu':'1','pods':'1'}", 0, 3000, -EINVAL, NULL},
      {COUNT, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, NULL},
      {END}}},
};

static void list(struct shr_list *l, const char *spec)
{
    json_t *q = test_js(spec);

    assert_int_equal(adm_offer_from_quantities(q, l, NULL), 0);
    json_decref(q);
}

static bool known(const char *ns, const char *name, void *data)
{
    const char *set = data;
    char key[400];
    size_t n;

    if (!set)
        return false;
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    n = strlen(key);
    for (const char *p = strstr(set, key); p; p = strstr(p + 1, key))
        if ((p == set || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* The same amounts, in any order (zero amounts count as absent). */
static bool same(const struct shr_list *a, const struct shr_list *b)
{
    for (int pass = 0; pass < 2; pass++) {
        const struct shr_list *x = pass ? b : a, *y = pass ? a : b;

        for (size_t i = 0; i < x->n; i++) {
            bool found;

            if (x->items[i].value != shr_list_get(y, x->items[i].name, &found) &&
                (found || x->items[i].value != 0))
                return false;
        }
    }
    return true;
}

static void test_scenarios(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++) {
        const struct scenario *sc = &scenarios[s];
        struct adm_ledger *l;

        assert_int_equal(adm_ledger_new(sc->per_consumer, 0, &l), 0);
        for (size_t i = 0; sc->steps[i].op != END; i++) {
            const struct step *st = &sc->steps[i];
            struct shr_list amounts = {0}, got = {0};
            long got_n = 0;
            int rc;

            switch (st->op) {
            case RESERVE:
            case RESERVE_TRUSTED:
                list(&amounts, st->amounts);
                rc = adm_ledger_reserve(l, st->origin, st->ns, st->name, st->uid, &amounts,
                                        st->op == RESERVE_TRUSTED, st->now, st->expires);
                if (rc != st->want)
                    fail_msg("%s, step %zu: reserve returned %d, want %d", sc->what, i, rc,
                             st->want);
                continue;
            case SEEN:
                got_n = (long)adm_ledger_seen(l, st->ns, st->name);
                break;
            case PURGE:
                got_n = (long)adm_ledger_purge(l, st->now);
                break;
            case COUNT:
                got_n = (long)adm_ledger_count(l, st->origin);
                break;
            case SUM:
                list(&amounts, st->amounts);
                assert_int_equal(adm_ledger_sum(l, st->origin, st->ns, st->name, st->now, known,
                                                (void *)st->known, &got),
                                 0);
                if (!same(&got, &amounts))
                    fail_msg("%s, step %zu: the sum is not %s", sc->what, i, st->amounts);
                continue;
            case END:
                break;
            }
            if (got_n != st->want)
                fail_msg("%s, step %zu: %ld, want %d", sc->what, i, got_n, st->want);
        }
        assert_null(adm_ledger_free(l));
    }
}

/* The bound on the whole ledger: consumers under their own bound still stop at its max. */
static void test_max(void **state)
{
    enum { MAX = 64 };
    struct adm_ledger *l;
    struct shr_list one;
    char origin[16], name[32];

    (void)state;
    list(&one, "{'pods':'1'}");
    assert_int_equal(adm_ledger_new(MAX, MAX, &l), 0);
    for (unsigned i = 0; i < MAX; i++) {
        snprintf(origin, sizeof(origin), "c%u", i % 7);
        snprintf(name, sizeof(name), "p%u", i);
        assert_int_equal(adm_ledger_reserve(l, origin, "ns", name, name, &one, false, 0, 1000), 0);
    }
    assert_int_equal(adm_ledger_reserve(l, "c0", "ns", "last", "last", &one, false, 0, 1000),
                     -ENOSPC);
    assert_int_equal(adm_ledger_count(l, NULL), MAX);
    /* Expired ones make room. */
    assert_int_equal(adm_ledger_reserve(l, "c0", "ns", "last", "last", &one, true, 1000, 2000), 0);
    assert_int_equal(adm_ledger_count(l, NULL), 1);
    adm_ledger_free(l);
    assert_null(adm_ledger_free(NULL));
    /* The defaults. */
    assert_int_equal(adm_ledger_new(0, 0, &l), 0);
    for (unsigned i = 0; i < ADM_LEDGER_PER_CONSUMER; i++) {
        snprintf(name, sizeof(name), "p%u", i);
        assert_int_equal(adm_ledger_reserve(l, "c", "ns", name, name, &one, false, 0, 1000), 0);
    }
    assert_int_equal(adm_ledger_reserve(l, "c", "ns", "last", "last", &one, false, 0, 1000),
                     -EDQUOT);
    assert_int_equal(adm_ledger_reserve(l, "d", "ns", "last", "last", &one, false, 0, 1000), 0);
    adm_ledger_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenarios),
        cmocka_unit_test(test_max),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
