#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_str),
        cmocka_unit_test(test_str_at),
        cmocka_unit_test(test_label_annotation),
        cmocka_unit_test(test_borrowed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
