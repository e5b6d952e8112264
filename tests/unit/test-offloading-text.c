/* Unit tests of src/offloading/nsof_text.c: the CLI's selector syntax into a NodeSelector. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testjson.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offloading/nsof.h"

static void test_valid(void **state)
{
    static const struct {
        const char *text, *want; /* want: the matchExpressions; NULL: no selector */
    } cases[] = {
        {"", NULL},
        {"   ", NULL},
        {"region=eu", "[{'key':'region','operator':'In','values':['eu']}]"},
        {"region==eu", "[{'key':'region','operator':'In','values':['eu']}]"},
        {"region!=eu", "[{'key':'region','operator':'NotIn','values':['eu']}]"},
        {"region=", "[{'key':'region','operator':'In','values':['']}]"},
        {"region in (eu, us)", "[{'key':'region','operator':'In','values':['eu','us']}]"},
        {"region notin (mars)", "[{'key':'region','operator':'NotIn','values':['mars']}]"},
        {"gpu", "[{'key':'gpu','operator':'Exists'}]"},
        {"!gpu", "[{'key':'gpu','operator':'DoesNotExist'}]"},
        {"cores>4", "[{'key':'cores','operator':'Gt','values':['4']}]"},
        {"cores<8", "[{'key':'cores','operator':'Lt','values':['8']}]"},
        {"liqo.io/remote-cluster-id=abc-1, index, !x, k in(a)",
         "[{'key':'liqo.io/remote-cluster-id','operator':'In','values':['abc-1']},"
         "{'key':'index','operator':'Exists'},{'key':'x','operator':'DoesNotExist'},"
         "{'key':'k','operator':'In','values':['a']}]"},
        {" a = b , c != d ", "[{'key':'a','operator':'In','values':['b']},"
                             "{'key':'c','operator':'NotIn','values':['d']}]"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *sel = NULL, *want;
        char err[256] = "";
        int rc = nsof_selector_from_text(cases[i].text, &sel, err, sizeof(err));

        if (rc != 0)
            fail_msg("'%s': %d %s", cases[i].text, rc, err);
        if (!cases[i].want) {
            assert_null(sel);
            continue;
        }
        want = json_pack("{s:[{s:o}]}", "nodeSelectorTerms", "matchExpressions",
                         test_js(cases[i].want));
        if (!json_equal(sel, want)) {
            char *g = json_dumps(sel, JSON_SORT_KEYS);

            fail_msg("'%s': got %s", cases[i].text, g);
        }
        assert_int_equal(nsof_selector_validate(sel, err, sizeof(err)), 0);
        json_decref(want);
        json_decref(sel);
    }
}

static void test_invalid(void **state)
{
    static const struct {
        const char *text, *msg; /* msg: a part of the error */
    } cases[] = {
        {"=eu", "at character 1: expected a label key"},
        {"region=eu,", "expected a label key"},
        {"region eu", "expected ',' between requirements"},
        {"region in eu", "expected '(' after in/notin"},
        {"region in (eu", "expected ',' or ')'"},
        {"cores>", "expected a number"},
        {"cores>x", "requirement 1: Gt and Lt take exactly one integer value"},
        {"a=b, -bad=1", "requirement 2: matchExpressions key '-bad' is not a valid label key"},
        {"a=b$", "expected ',' between requirements"},
        {"a=-x-", "requirement 1: a value is not a valid label value"},
        {"!", "expected a label key"},
        {"a=b,,c", "expected a label key"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *sel = NULL;
        char err[256] = "";
        int rc = nsof_selector_from_text(cases[i].text, &sel, err, sizeof(err));

        if (rc != -EINVAL || !strstr(err, cases[i].msg))
            fail_msg("'%s': rc %d, err '%s', want '%s'", cases[i].text, rc, err, cases[i].msg);
        assert_null(sel);
        assert_null(strchr(err, '\n'));
    }
}

static void test_limits(void **state)
{
    char text[NSOF_TEXT_MAX + 2], err[256];
    json_t *sel = NULL;
    size_t n = 0;

    (void)state;
    /* 33 requirements: one over the bound. */
    for (int i = 0; i < 33; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%sk%d", i ? "," : "", i);
    assert_int_equal(nsof_selector_from_text(text, &sel, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "too many requirements"));
    memset(text, 'a', NSOF_TEXT_MAX + 1);
    text[NSOF_TEXT_MAX + 1] = '\0';
    assert_int_equal(nsof_selector_from_text(text, &sel, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "longer than"));
    assert_null(sel);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_limits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
