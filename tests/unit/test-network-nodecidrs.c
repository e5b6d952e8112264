/* network/nodecidrs: the index of the physical nodes' pod CIDRs that the node events keep, and the
 * covering CIDR computed from it. A table of steps (what each change returns and the covering after
 * it), then thousands of random changes checked against a plain array, which exercises growth and
 * the backward-shift deletion. */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "network/nodecidrs.h"

static struct cidr C(const char *s) {
    struct cidr c;

    assert_int_equal(cidr_parse(s, &c), 0);
    return c;
}

static void
assert_covering(const struct ncidr *t, const char *want)
{
    struct cidr got;
    char buf[CIDR_STR_MAX];

    if (!want) {
        assert_int_equal(ncidr_covering(t, 4, &got), -ENOENT);
        return;
    }
    assert_int_equal(ncidr_covering(t, 4, &got), 0);
    cidr_format(&got, buf, sizeof(buf));
    assert_string_equal(buf, want);
}

static void test_steps(void **state)
{
    static const struct {
        const char *name, *cidr; /* cidr NULL: forget */
        int ret;
        const char *covering; /* after the step; NULL: none */
    } steps[] = {
        {"a", "10.244.0.0/24", 1, "10.244.0.0/24"},
        {"a", "10.244.0.0/24", 0, "10.244.0.0/24"}, /* a status update: nothing changed */
        {"b", "10.244.1.0/24", 1, "10.244.0.0/23"},
        {"c", "10.244.7.0/24", 1, "10.244.0.0/21"},
        {"c", "10.244.2.0/24", 1, "10.244.0.0/22"}, /* another CIDR */
        {"c", NULL, 1, "10.244.0.0/23"},            /* deleted: the covering shrinks */
        {"c", NULL, 0, "10.244.0.0/23"},            /* not there */
        {"d", NULL, 0, "10.244.0.0/23"},
        {"v6", "fd00::/64", 1, "10.244.0.0/23"}, /* another family: not in the IPv4 covering */
        {"a", NULL, 1, "10.244.1.0/24"},
        {"b", NULL, 1, NULL},
        {"", "10.0.0.0/24", -EINVAL, NULL},
    };
    struct ncidr *t;
    struct cidr v6;

    (void)state;
    assert_int_equal(ncidr_new(&t), 0);
    assert_covering(t, NULL);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        struct cidr c;

        if (steps[i].cidr)
            c = C(steps[i].cidr);
        assert_int_equal(ncidr_set(t, steps[i].name, steps[i].cidr ? &c : NULL), steps[i].ret);
        assert_covering(t, steps[i].covering);
    }
    assert_int_equal(ncidr_count(t), 1);
    assert_int_equal(ncidr_covering(t, 6, &v6), 0);
    {
        char longname[NCIDR_NAME_MAX + 2];
        struct cidr c = C("10.0.0.0/24");

        memset(longname, 'n', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        assert_int_equal(ncidr_set(t, longname, &c), -EINVAL);
        longname[NCIDR_NAME_MAX] = '\0';
        assert_int_equal(ncidr_set(t, longname, &c), 1);
    }
    assert_int_equal(ncidr_set(NULL, "x", NULL), -EINVAL);
    ncidr_free(t);
    ncidr_free(NULL);
}

#define NODES 3000

static void test_random_against_array(void **state)
{
    static int have[NODES]; /* -1: absent, else the third octet */
    struct ncidr *t;
    unsigned seed = 7;

    (void)state;
    assert_int_equal(ncidr_new(&t), 0);
    for (int i = 0; i < NODES; i++)
        have[i] = -1;
    for (int step = 0; step < 60000; step++) {
        int i = (int)(rand_r(&seed) % NODES), oct = (int)(rand_r(&seed) % 250), want;
        bool del = rand_r(&seed) % 3 == 0;
        char name[32], text[32];
        struct cidr c;

        snprintf(name, sizeof(name), "node-%d", i);
        snprintf(text, sizeof(text), "10.%d.%d.0/24", 1 + i % 200, oct);
        c = C(text);
        if (del)
            want = have[i] >= 0;
        else
            want = have[i] != oct + 1000 * (1 + i % 200);
        assert_int_equal(ncidr_set(t, name, del ? NULL : &c), want);
        have[i] = del ? -1 : oct + 1000 * (1 + i % 200);
        if (step % 5000 == 0) {
            size_t n = 0;
            for (int k = 0; k < NODES; k++)
                n += have[k] >= 0;
            assert_int_equal(ncidr_count(t), n);
        }
    }
    /* Every node still there is found with its CIDR (setting it again changes nothing), and every
     * absent one is absent (forgetting it changes nothing). */
    for (int i = 0; i < NODES; i++) {
        char name[32], text[32];
        struct cidr c;

        snprintf(name, sizeof(name), "node-%d", i);
        if (have[i] < 0) {
            assert_int_equal(ncidr_set(t, name, NULL), 0);
            continue;
        }
        snprintf(text, sizeof(text), "10.%d.%d.0/24", have[i] / 1000, have[i] % 1000);
        c = C(text);
        assert_int_equal(ncidr_set(t, name, &c), 0);
    }
    ncidr_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps),
        cmocka_unit_test(test_random_against_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
