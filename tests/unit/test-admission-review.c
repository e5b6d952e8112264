/* Unit tests of src/admission/review.c: AdmissionReview decoding (strict, bounded), the answer,
 * JSON pointers and the JSON patch applier. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/review.h"
#include "common/xalloc.h"

static char *q2(const char *text)
{
    char *t = strdup(text);

    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    return t;
}

static json_t *js(const char *text)
{
    char *t = q2(text);
    json_error_t e;
    json_t *j = json_loads(t, JSON_DECODE_ANY, &e);

    if (!j)
        fail_msg("bad test JSON: %s: %s", e.text, t);
    free(t);
    return j;
}

#define REVIEW(req)                                                                                \
    "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview','request':" req "}"
#define GOOD_REQ                                                                                   \
    "{'uid':'705ab4f5-6393-11e8-b7cc-42010a800002','kind':{'group':'','version':'v1',"             \
    "'kind':'Pod'},'resource':{'group':'','version':'v1','resource':'pods'},'namespace':'web',"    \
    "'name':'p1','operation':'CREATE','userInfo':{'username':'system:serviceaccount:t:vk-a',"      \
    "'groups':['system:serviceaccounts']},'object':{'metadata':{'name':'p1'},'spec':{}},"          \
    "'oldObject':null,'dryRun':true,'options':{}}"

static void test_decode(void **state)
{
    char *body = q2(REVIEW(GOOD_REQ));
    struct adm_request r;
    char err[256];

    (void)state;
    assert_int_equal(adm_review_decode(body, strlen(body), &r, err, sizeof(err)), 0);
    assert_string_equal(r.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_string_equal(r.operation, "CREATE");
    assert_string_equal(r.group, "");
    assert_string_equal(r.version, "v1");
    assert_string_equal(r.kind, "Pod");
    assert_string_equal(r.resource, "pods");
    assert_string_equal(r.subresource, "");
    assert_string_equal(r.ns, "web");
    assert_string_equal(r.name, "p1");
    assert_string_equal(r.username, "system:serviceaccount:t:vk-a");
    assert_true(r.dry_run);
    assert_non_null(r.object);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r.object, "metadata"), "name")), "p1");
    adm_request_done(&r);
    adm_request_done(&r); /* idempotent */
    free(body);
}

static void test_decode_invalid(void **state)
{
    static const struct {
        const char *body, *msg;
    } cases[] = {
        {"", "not JSON"},
        {"nonsense", "not JSON"},
        {"[]", "not a JSON object"},
        {"{'apiVersion':'admission.k8s.io/v1beta1','kind':'AdmissionReview','request':" GOOD_REQ
         "}",
         "expected admission.k8s.io/v1 AdmissionReview, not admission.k8s.io/v1beta1"},
        {"{'apiVersion':'admission.k8s.io/v1','kind':'Pod'}", "not admission.k8s.io/v1 Pod"},
        {"{'kind':'AdmissionReview'}", "apiVersion is missing"},
        {"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview'}", "request is missing"},
        {REVIEW("[]"), "request is not an object"},
        {REVIEW("{'kind':{'version':'v1','kind':'Pod'},'operation':'CREATE','userInfo':{},"
                "'object':{}}"),
         "request.uid is missing"},
        {REVIEW("{'uid':'','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{},'object':{}}"),
         "request.uid is empty"},
        {REVIEW("{'uid':'u\\n','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{},'object':{}}"),
         "request.uid contains a control character"},
        {REVIEW("{'uid':'u\\u0000x','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{},'object':{}}"),
         "the body is not JSON: \\u0000 is not allowed"},
        {REVIEW("{'uid':7,'kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{},'object':{}}"),
         "request.uid is not a string"},
        {REVIEW("{'uid':'u','kind':{'version':'v1','kind':'Pod'},'operation':'PATCH',"
                "'userInfo':{},'object':{}}"),
         "request.operation 'PATCH' is not CREATE, UPDATE, DELETE or CONNECT"},
        {REVIEW("{'uid':'u','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{}}"),
         "request.object is missing for a CREATE"},
        {REVIEW("{'uid':'u','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{},'object':[]}"),
         "request.object is not an object"},
        {REVIEW("{'uid':'u','kind':{'version':'v1'},'operation':'CREATE','userInfo':{},"
                "'object':{}}"),
         "request.kind.kind is missing"},
        {REVIEW("{'uid':'u','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'object':{}}"),
         "request.userInfo is missing"},
        {REVIEW("{'uid':'u','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{'username':['a']},'object':{}}"),
         "request.userInfo.username is not a string"},
        {REVIEW("{'uid':'u','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{},'object':{},'namespace':{}}"),
         "request.namespace is not a string"},
        {REVIEW("{'uid':'u','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{},'object':{},'namespace':"
                "'n123456789n123456789n123456789n123456789n123456789n123456789n1234'}"),
         "request.namespace is longer than 63 bytes"},
        {REVIEW("{'uid':'u','kind':{'version':'v1','kind':'Pod'},'operation':'CREATE',"
                "'userInfo':{},'object':{},'dryRun':'yes'}"),
         "request.dryRun is not a boolean"},
        {"{'apiVersion':'admission.k8s.io/v1','apiVersion':'admission.k8s.io/v1'}", "not JSON"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *body = q2(cases[i].body), err[256] = "";
        struct adm_request r;
        int rc = adm_review_decode(body, strlen(body), &r, err, sizeof(err));

        if (rc != -EINVAL || !strstr(err, cases[i].msg))
            fail_msg("case %zu: rc %d, err '%s', want '%s'", i, rc, err, cases[i].msg);
        assert_null(strchr(err, '\n'));
        free(body);
    }
}

static void test_decode_limits(void **state)
{
    size_t n = ADM_REVIEW_MAX + 1;
    char *big = malloc(n), err[128];
    struct adm_request r;
    char uid[ADM_UID_MAX + 2], body[1024];

    (void)state;
    memset(big, ' ', n);
    assert_int_equal(adm_review_decode(big, n, &r, err, sizeof(err)), -E2BIG);
    /* Within the size, but small values that would take more than 16 times it in heap: refused
     * before they are decoded (common/jsonb.h). */
    n = ADM_REVIEW_MAX - 1;
    for (size_t i = 0; i < n; i += 3)
        memcpy(big + i, "{},", n - i >= 3 ? 3 : n - i);
    big[0] = '[';
    big[n - 1] = ']';
    assert_int_equal(adm_review_decode(big, n, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "the review is refused: "));
    assert_non_null(strstr(err, "would take more than"));
    free(big);
    /* A uid of 129 bytes is refused, 128 accepted. */
    memset(uid, 'u', ADM_UID_MAX + 1);
    uid[ADM_UID_MAX + 1] = '\0';
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
             "{\"uid\":\"%s\",\"kind\":{\"version\":\"v1\",\"kind\":\"Pod\"},"
             "\"operation\":\"DELETE\",\"userInfo\":{}}}",
             uid);
    assert_int_equal(adm_review_decode(body, strlen(body), &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "longer than 128"));
    uid[ADM_UID_MAX] = '\0';
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
             "{\"uid\":\"%s\",\"kind\":{\"version\":\"v1\",\"kind\":\"Pod\"},"
             "\"operation\":\"DELETE\",\"userInfo\":{}}}",
             uid);
    assert_int_equal(adm_review_decode(body, strlen(body), &r, err, sizeof(err)), 0);
    assert_null(r.object);
    assert_false(r.dry_run);
    adm_request_done(&r);
}

static void test_response(void **state)
{
    char *t, *want;
    json_t *patch = json_array(), *doc;
    unsigned char dec[512];
    int n;

    (void)state;
    t = adm_review_response("u1", true, 0, NULL, NULL);
    want = q2("{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview','response':"
              "{'uid':'u1','allowed':true}}");
    assert_string_equal(t, want);
    x_free(t);
    free(want);
    /* An empty patch is no patch. */
    t = adm_review_response("u1", true, 0, NULL, patch);
    assert_null(strstr(t, "patch"));
    x_free(t);
    t = adm_review_response("u2", false, 0, "offer exceeded:\ncpu", NULL);
    want = q2("{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview','response':"
              "{'uid':'u2','allowed':false,'status':{'code':403,'reason':'Forbidden','message':'"
              "offer exceeded:?cpu'}}}");
    assert_string_equal(t, want);
    x_free(t);
    free(want);
    t = adm_review_response("u3", false, 400, "bad", NULL);
    assert_non_null(strstr(t, "\"code\":400,\"reason\":\"BadRequest\""));
    x_free(t);
    {
        json_t *x = json_string("x");

        assert_int_equal(jpatch_op(patch, "add", "/spec/tolerations/-", x), 0);
        json_decref(x);
    }
    t = adm_review_response("u4", true, 0, NULL, patch);
    doc = json_loads(t, 0, NULL);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(doc, "response"), "patchType")),
        "JSONPatch");
    n = EVP_DecodeBlock(
        dec,
        (const unsigned char *)json_string_value(
            json_object_get(json_object_get(doc, "response"), "patch")),
        (int)strlen(json_string_value(json_object_get(json_object_get(doc, "response"), "patch"))));
    assert_true(n > 0);
    dec[n] = '\0';
    /* EVP_DecodeBlock leaves the padding's zero bytes: compare as a string. */
    assert_string_equal((char *)dec,
                        "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":\"x\"}]");
    json_decref(doc);
    x_free(t);
    json_decref(patch);
}

static void test_pointer(void **state)
{
    char buf[64], small[8];

    (void)state;
    assert_int_equal(jpatch_pointer(buf, sizeof(buf), "spec", "tolerations", "-", NULL), 0);
    assert_string_equal(buf, "/spec/tolerations/-");
    assert_int_equal(jpatch_pointer(buf, sizeof(buf), "metadata", "labels", "liqo.io/a~b", NULL),
                     0);
    assert_string_equal(buf, "/metadata/labels/liqo.io~1a~0b");
    assert_int_equal(jpatch_pointer(buf, sizeof(buf), NULL), 0);
    assert_string_equal(buf, "");
    assert_int_equal(jpatch_pointer(small, sizeof(small), "abcdefgh", NULL), -ENAMETOOLONG);
    assert_string_equal(small, "");
}

static void test_apply(void **state)
{
    static const struct {
        const char *doc, *patch, *want; /* want NULL: refused */
    } cases[] = {
        {"{'a':1}", "[{'op':'add','path':'/b','value':2}]", "{'a':1,'b':2}"},
        {"{'a':[1]}", "[{'op':'add','path':'/a/-','value':2}]", "{'a':[1,2]}"},
        {"{'a':[1,3]}", "[{'op':'add','path':'/a/1','value':2}]", "{'a':[1,2,3]}"},
        {"{'a':[1]}", "[{'op':'add','path':'/a/1','value':2}]", "{'a':[1,2]}"},
        {"{'a':{'b':1}}", "[{'op':'replace','path':'/a/b','value':{'c':[]}}]",
         "{'a':{'b':{'c':[]}}}"},
        {"{'a':[1,2]}", "[{'op':'replace','path':'/a/0','value':5}]", "{'a':[5,2]}"},
        {"{'a':[1,2],'b':1}", "[{'op':'remove','path':'/a/0'},{'op':'remove','path':'/b'}]",
         "{'a':[2]}"},
        {"{'a/b':{'~':1}}", "[{'op':'replace','path':'/a~1b/~0','value':2}]", "{'a/b':{'~':2}}"},
        {"{'a':1}", "[{'op':'replace','path':'/b','value':2}]", NULL},
        {"{'a':1}", "[{'op':'add','path':'/x/y','value':2}]", NULL},
        {"{'a':[1]}", "[{'op':'add','path':'/a/3','value':2}]", NULL},
        {"{'a':[1]}", "[{'op':'replace','path':'/a/1','value':2}]", NULL},
        {"{'a':[1]}", "[{'op':'add','path':'/a/01','value':2}]", NULL},
        {"{'a':1}", "[{'op':'move','from':'/a','path':'/b'}]", NULL},
        {"{'a':1}", "[{'op':'add','path':'/b'}]", NULL},
        {"{'a':1}", "[{'op':'add','path':'b','value':1}]", NULL},
        {"{'a':1}", "[{'op':'add','path':'/a~2','value':1}]", NULL},
        {"{'a':1}", "{}", NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *doc = js(cases[i].doc), *patch = js(cases[i].patch);
        char err[128] = "";
        int rc = jpatch_apply(doc, patch, err, sizeof(err));

        if (!cases[i].want) {
            if (rc != -EINVAL || !err[0])
                fail_msg("case %zu: applied", i);
        } else {
            json_t *want = js(cases[i].want);

            if (rc != 0 || !json_equal(doc, want))
                fail_msg("case %zu: rc %d %s", i, rc, err);
            json_decref(want);
        }
        json_decref(doc);
        json_decref(patch);
    }
}

static void test_printable(void **state)
{
    char buf[8];

    (void)state;
    assert_string_equal(adm_printable("a\tb\xc3\xa9z", buf, sizeof(buf)), "a?b??z");
    assert_string_equal(adm_printable("0123456789", buf, sizeof(buf)), "0123456");
    assert_string_equal(adm_printable(NULL, buf, sizeof(buf)), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),        cmocka_unit_test(test_decode_invalid),
        cmocka_unit_test(test_decode_limits), cmocka_unit_test(test_response),
        cmocka_unit_test(test_pointer),       cmocka_unit_test(test_apply),
        cmocka_unit_test(test_printable),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
