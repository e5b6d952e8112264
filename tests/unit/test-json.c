#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/json.h"
#include "testjson.h"

/* want NULL: the getter must return NULL (jsn_str_or_empty: ""). */
static void check_str(const char *got, const char *want)
{
    if (want)
        assert_string_equal(got, want);
    else
        assert_null(got);
}

static void test_str(void **state)
{
    static const struct {
        const char *obj; /* NULL: a NULL object */
        const char *key;
        const char *want;
    } cases[] = {
        {"{'a':'x'}", "a", "x"},        {"{'a':''}", "a", ""},
        {"{'a':'x'}", "b", NULL},       {"{'a':1}", "a", NULL},
        {"{'a':null}", "a", NULL},      {"{'a':true}", "a", NULL},
        {"{'a':{'b':'x'}}", "a", NULL}, {"{'a':['x']}", "a", NULL},
        {"['a']", "a", NULL},           {"'a'", "a", NULL},
        {"{'a':'x'}", NULL, NULL},      {NULL, "a", NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = cases[i].obj ? test_js(cases[i].obj) : NULL;

        check_str(jsn_str(o, cases[i].key), cases[i].want);
        assert_string_equal(jsn_str_or_empty(o, cases[i].key), cases[i].want ? cases[i].want : "");
        json_decref(o);
    }
}

static void test_str_at(void **state)
{
    static const struct {
        const char *obj;
        const char *k1, *k2, *k3; /* the path, up to the first NULL */
        const char *want;
    } cases[] = {
        {"{'status':{'podIP':'10.0.0.1'}}", "status", "podIP", NULL, "10.0.0.1"},
        {"{'a':{'b':{'c':'deep'}}}", "a", "b", "c", "deep"},
        {"{'a':{'b':{'c':''}}}", "a", "b", "c", ""},
        {"{'a':'top'}", "a", NULL, NULL, "top"},
        {"{'a':{'b':'x'}}", "a", NULL, NULL, NULL},  /* ends on an object */
        {"{'a':{'b':'x'}}", "a", "c", NULL, NULL},   /* missing key */
        {"{'a':{'b':'x'}}", "z", "b", NULL, NULL},   /* missing step */
        {"{'a':'x'}", "a", "b", NULL, NULL},         /* a step through a string */
        {"{'a':[{'b':'x'}]}", "a", "b", NULL, NULL}, /* a step through an array */
        {"{'a':{'b':7}}", "a", "b", NULL, NULL},     /* not a string */
        {"{'a':{'b':null}}", "a", "b", NULL, NULL},
        {"'itself'", NULL, NULL, NULL, "itself"}, /* no key: the value itself */
        {"{'a':'x'}", NULL, NULL, NULL, NULL},
        {NULL, "a", "b", NULL, NULL},
        {NULL, NULL, NULL, NULL, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = cases[i].obj ? test_js(cases[i].obj) : NULL;

        check_str(jsn_str_at(o, cases[i].k1, cases[i].k2, cases[i].k3, NULL), cases[i].want);
        json_decref(o);
    }
}

static void test_label_annotation(void **state)
{
    static const struct {
        const char *obj;
        const char *key;
        const char *label, *annotation;
    } cases[] = {
        {"{'metadata':{'labels':{'k':'v'},'annotations':{'k':'w'}}}", "k", "v", "w"},
        {"{'metadata':{'labels':{'k':''},'annotations':{'k':''}}}", "k", "", ""},
        {"{'metadata':{'labels':{'k':'v'}}}", "k", "v", NULL},
        {"{'metadata':{'annotations':{'k':'w'}}}", "k", NULL, "w"},
        {"{'metadata':{'labels':{'k':'v'},'annotations':{'k':'w'}}}", "x", NULL, NULL},
        {"{'metadata':{'labels':{'k':1},'annotations':{'k':false}}}", "k", NULL, NULL},
        {"{'metadata':{'labels':['k'],'annotations':'k'}}", "k", NULL, NULL},
        {"{'metadata':'x'}", "k", NULL, NULL},
        {"{'labels':{'k':'v'},'annotations':{'k':'w'}}", "k", NULL, NULL}, /* not under metadata */
        {"{}", "k", NULL, NULL},
        {"[]", "k", NULL, NULL},
        {NULL, "k", NULL, NULL},
        {"{'metadata':{'labels':{'k':'v'}}}", NULL, NULL, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = cases[i].obj ? test_js(cases[i].obj) : NULL;

        check_str(jsn_label(o, cases[i].key), cases[i].label);
        check_str(jsn_annotation(o, cases[i].key), cases[i].annotation);
        json_decref(o);
    }
}

/* The strings are borrowed: the very bytes of the object's member. */
static void test_borrowed(void **state)
{
    json_t *o = test_js("{'metadata':{'name':'n','labels':{'k':'v'}}}");
    json_t *md = json_object_get(o, "metadata");

    (void)state;
    assert_ptr_equal(jsn_str(md, "name"), json_string_value(json_object_get(md, "name")));
    assert_ptr_equal(jsn_str_or_empty(md, "name"), jsn_str(md, "name"));
    assert_ptr_equal(jsn_str_at(o, "metadata", "name", NULL), jsn_str(md, "name"));
    assert_ptr_equal(jsn_label(o, "k"),
                     json_string_value(json_object_get(json_object_get(md, "labels"), "k")));
    json_decref(o);
}

/* A merge patch from have to want: nulls for what want lacks, at every depth where both are
 * objects. Each case checks the patch, and that applying it to have (RFC 7386, jansson's
 * json_object_update_recursive is not that, so the merge is done here by hand) gives want. */
static json_t *merge(json_t *target, const json_t *patch)
{
    const char *k;
    json_t *v;

    if (!json_is_object(patch)) {
        json_decref(target);
        return json_deep_copy(patch);
    }
    if (!json_is_object(target)) {
        json_decref(target);
        target = json_object();
    }
    json_object_foreach((json_t *)patch, k, v)
    {
        if (json_is_null(v))
            json_object_del(target, k);
        else
            json_object_set_new(target, k, merge(json_incref(json_object_get(target, k)), v));
    }
    return target;
}

static void test_merge_patch_removals(void **state)
{
    static const struct {
        const char *want, *have; /* have NULL: a NULL have */
        const char *patch;       /* want afterwards */
        int rc;
        bool no_apply; /* want holds a null itself, a removal of its own: not applied below */
    } cases[] = {
        {"{'a':1}", "{'a':1,'b':2}", "{'a':1,'b':null}", 0},
        {"{'a':1}", NULL, "{'a':1}", 0},
        {"{'a':1}", "[1,2]", "{'a':1}", 0},
        {"{}", "{'a':{'b':1}}", "{'a':null}", 0},
        /* the Advertisement's network status once settled: its message must go */
        {"{'s':'A','network':{'settled':true}}",
         "{'s':'A','network':{'settled':true,'message':'no credential for the peer yet'}}",
         "{'s':'A','network':{'settled':true,'message':null}}", 0},
        {"{'a':{'b':{'c':1}}}", "{'a':{'b':{'c':1,'d':2},'e':3}}",
         "{'a':{'b':{'c':1,'d':null},'e':null}}", 0},
        /* a member that is not an object on one side is replaced whole: no nulls inside */
        {"{'a':{'x':1}}", "{'a':'text'}", "{'a':{'x':1}}", 0},
        {"{'a':'text'}", "{'a':{'x':1}}", "{'a':'text'}", 0},
        {"{'a':[{'x':1}]}", "{'a':[{'x':1,'y':2}]}", "{'a':[{'x':1}]}", 0},
        /* a null want already holds stays a null */
        {"{'a':null}", "{'a':{'x':1}}", "{'a':null}", 0, true},
        {"[1]", "{'a':1}", "[1]", -EINVAL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *want = test_js(cases[i].want),
               *have = cases[i].have ? test_js(cases[i].have) : NULL;
        json_t *orig = json_deep_copy(want), *exp = test_js(cases[i].patch);

        assert_int_equal(jsn_merge_patch_removals(want, have), cases[i].rc);
        if (!json_equal(want, exp))
            fail_msg("case %zu: patch %s", i, json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY));
        if (cases[i].rc == 0 && !cases[i].no_apply) {
            json_t *got = merge(json_deep_copy(have), want);

            if (!json_equal(got, orig))
                fail_msg("case %zu: the patch applied gives %s", i,
                         json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY));
            json_decref(got);
        }
        json_decref(want);
        json_decref(have);
        json_decref(orig);
        json_decref(exp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_str),
        cmocka_unit_test(test_str_at),
        cmocka_unit_test(test_label_annotation),
        cmocka_unit_test(test_borrowed),
        cmocka_unit_test(test_merge_patch_removals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
