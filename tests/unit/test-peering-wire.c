#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/xalloc.h"
#include "peering/kubeconfig_out.h"
#include "peering/wire.h"

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fail_msg("\"%s\" does not contain \"%s\"", (hay), (needle));                           \
    } while (0)

#define ID  "7d3f4c5e-8a2b-4c1d-9e0f-123456789abc"
#define TOK "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
/* The proof fields with values of the right format (the signature itself is peering/idkey's). */
#define PROOF      ",\"publicKey\":\"AAEC\",\"timestamp\":1700000000,\"signature\":\"AwQF\""
#define KEYID      "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define REQ_PREFIX "{\"clusterID\":\"" ID "\",\"clusterName\":\"a\",\"token\":\"" TOK "\""

static int req_decode(const char *s, struct peer_identity_request *req, struct peer_wire_error *e)
{
    return peer_wire_identity_request_decode(s, strlen(s), req, e);
}

static void expect_req_error(const char *body, const char *reason, const char *msg_part)
{
    struct peer_identity_request req;
    struct peer_wire_error e;

    memset(&req, 0x5a, sizeof req);
    if (req_decode(body, &req, &e) != -EINVAL)
        fail_msg("decoded: %s", body);
    assert_string_equal(e.reason, reason);
    assert_contains(e.message, msg_part);
    /* A signature that is not even base64 is no proof: 403, as one that does not verify. */
    assert_int_equal(peer_wire_http_status(e.reason),
                     strcmp(reason, "invalid-signature") == 0 ? 403 : 400);
    assert_int_equal((unsigned char)req.cluster_id[0], 0x5a); /* not written */
}

static void test_request_decode(void **state)
{
    struct peer_identity_request req;
    struct peer_wire_error e;

    (void)state;
    assert_int_equal(req_decode("{\"clusterID\":\"" ID "\",\"clusterName\":\"cluster-a\","
                                "\"token\":\"" TOK "\"" PROOF "}",
                                &req, &e),
                     0);
    assert_string_equal(req.cluster_id, ID);
    assert_string_equal(req.cluster_name, "cluster-a");
    assert_string_equal(req.token, TOK);
    assert_int_equal(req.public_key_len, 3);
    assert_memory_equal(req.public_key, "\x00\x01\x02", 3);
    assert_int_equal(req.timestamp, 1700000000);
    assert_int_equal(req.signature_len, 3);
    assert_memory_equal(req.signature, "\x03\x04\x05", 3);
    assert_string_equal(e.reason, "");
    assert_string_equal(e.message, "");
    peer_identity_request_clear(&req);
    assert_int_equal(req.token[0], '\0');

    /* Unknown fields are ignored, whatever their type; whitespace anywhere. */
    assert_int_equal(req_decode(" {\n\"future\": {\"x\": [1, null]}, \"token\": \"" TOK "\",\n"
                                "\"clusterName\": \"b\", \"clusterID\": \"c1\", \"n\": 1.5e3" PROOF
                                "}\r\n",
                                &req, &e),
                     0);
    assert_string_equal(req.cluster_id, "c1");
    /* err may be NULL. */
    assert_int_equal(req_decode("{}", &req, NULL), -EINVAL);

    expect_req_error("", "malformed-json", "not valid JSON");
    expect_req_error("{", "malformed-json", "not valid JSON");
    expect_req_error("clusterID=x", "malformed-json", "not valid JSON");
    expect_req_error("{} x", "malformed-json", "not valid JSON");
    expect_req_error("{}{}", "malformed-json", "not valid JSON");
    expect_req_error("{\"clusterID\":\"a\",\"clusterID\":\"b\"}", "malformed-json", "duplicate");
    expect_req_error("{\"clusterID\":\"a\\u0000b\"}", "malformed-json", "not valid JSON");
    expect_req_error("{\"clusterID\":\"\xff\"}", "malformed-json", "not valid JSON");
    expect_req_error("[]", "not-an-object", "JSON object");
    expect_req_error("\"x\"", "not-an-object", "JSON object");
    expect_req_error("null", "not-an-object", "JSON object");
    expect_req_error("42", "not-an-object", "JSON object");
    expect_req_error("{}", "missing-field", "\"clusterID\" is required");
    expect_req_error("{\"clusterID\":\"" ID "\"}", "missing-field", "\"clusterName\"");
    expect_req_error("{\"clusterID\":\"" ID "\",\"clusterName\":\"a\"}", "missing-field",
                     "\"token\"");
    expect_req_error("{\"clusterID\":null}", "invalid-field-type",
                     "\"clusterID\" must be a string");
    expect_req_error("{\"clusterID\":1}", "invalid-field-type", "clusterID");
    expect_req_error("{\"clusterID\":\"" ID "\",\"clusterName\":[\"a\"]}", "invalid-field-type",
                     "clusterName");
    expect_req_error("{\"clusterID\":\"" ID "\",\"clusterName\":\"a\",\"token\":true}",
                     "invalid-field-type", "token");
    expect_req_error("{\"clusterID\":\"\"}", "invalid-cluster-id", "cluster ID");
    expect_req_error("{\"clusterID\":\"ABC\"}", "invalid-cluster-id", "cluster ID");
    expect_req_error("{\"clusterID\":\"a/../b\"}", "invalid-cluster-id", "cluster ID");
    expect_req_error("{\"clusterID\":\"" ID "\",\"clusterName\":\"Cluster A\"}",
                     "invalid-cluster-name", "cluster name");
    expect_req_error("{\"clusterID\":\"" ID "\",\"clusterName\":\"a\",\"token\":\"abc\"}",
                     "invalid-token", "64 lowercase hex");
    expect_req_error("{\"clusterID\":\"" ID "\",\"clusterName\":\"a\",\"token\":\"" TOK " \"}",
                     "invalid-token", "64 lowercase hex");
    /* The proof: every field required, strictly typed and bounded. */
    expect_req_error(REQ_PREFIX "}", "missing-field", "\"publicKey\"");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"AAEC\"}", "missing-field", "\"timestamp\"");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"AAEC\",\"timestamp\":1}", "missing-field",
                     "\"signature\"");
    expect_req_error(REQ_PREFIX ",\"publicKey\":1}", "invalid-field-type", "publicKey");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"\"}", "invalid-public-key", "base64");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"AAE\"}", "invalid-public-key", "base64");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"A=EC\"}", "invalid-public-key", "base64");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"AAEC\",\"timestamp\":\"1\"}",
                     "invalid-field-type", "\"timestamp\" must be an integer");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"AAEC\",\"timestamp\":1.5}", "invalid-field-type",
                     "timestamp");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"AAEC\",\"timestamp\":-1}", "invalid-timestamp",
                     "Unix seconds");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"AAEC\",\"timestamp\":253402300800}",
                     "invalid-timestamp", "Unix seconds");
    expect_req_error(REQ_PREFIX ",\"publicKey\":\"AAEC\",\"timestamp\":1,\"signature\":\"*\"}",
                     "invalid-signature", "base64");
    {
        /* Bounds: PEER_WIRE_KEY_MAX bytes of key are fine, one more is not. */
        char body[2048], b64[700];
        struct peer_identity_request r2;

        memset(b64, 'A', sizeof b64);
        b64[344] = '\0'; /* 258 bytes */
        snprintf(body, sizeof body,
                 REQ_PREFIX ",\"publicKey\":\"%s\",\"timestamp\":1,\"signature\":\"AwQF\"}", b64);
        expect_req_error(body, "invalid-public-key", "1 to 256 bytes");
        b64[340] = 'A';
        b64[341] = 'A';
        b64[342] = '=';
        b64[343] = '=';
        b64[344] = '\0'; /* 256 bytes */
        snprintf(body, sizeof body,
                 REQ_PREFIX ",\"publicKey\":\"%s\",\"timestamp\":1,\"signature\":\"AwQF\"}", b64);
        assert_int_equal(req_decode(body, &r2, &e), 0);
        assert_int_equal(r2.public_key_len, 256);
        memset(b64, 'A', sizeof b64);
        b64[112] = '\0'; /* 84 bytes of signature */
        snprintf(body, sizeof body,
                 REQ_PREFIX ",\"publicKey\":\"AAEC\",\"timestamp\":1,\"signature\":\"%s\"}", b64);
        if (req_decode(body, &r2, &e) != -EINVAL)
            fail_msg("an 84-byte signature decoded");
        assert_string_equal(e.reason, "invalid-signature");
        assert_int_equal(peer_wire_http_status(e.reason), 403);
    }
}

static void test_request_size(void **state)
{
    struct peer_identity_request req;
    struct peer_wire_error e;
    const char *core = REQ_PREFIX PROOF "}";
    char *big = malloc(PEER_WIRE_REQUEST_MAX + 2);

    (void)state;
    assert_non_null(big);
    memset(big, ' ', PEER_WIRE_REQUEST_MAX + 1);
    memcpy(big, core, strlen(core));
    /* Exactly at the limit: fine. */
    assert_int_equal(peer_wire_identity_request_decode(big, PEER_WIRE_REQUEST_MAX, &req, &e), 0);
    assert_int_equal(peer_wire_identity_request_decode(big, PEER_WIRE_REQUEST_MAX + 1, &req, &e),
                     -E2BIG);
    assert_string_equal(e.reason, "body-too-large");
    assert_int_equal(peer_wire_http_status(e.reason), 413);
    free(big);
    /* The length is what counts, not a NUL. */
    assert_int_equal(peer_wire_identity_request_decode(core, 10, &req, &e), -EINVAL);
    assert_string_equal(e.reason, "malformed-json");
    assert_int_equal(peer_wire_identity_request_decode(NULL, 0, &req, &e), -EINVAL);
    assert_int_equal(peer_wire_identity_request_decode(NULL, 5, &req, &e), -EINVAL);
}

static void test_request_encode(void **state)
{
    struct peer_identity_request req = {ID, "cluster-a", TOK,       {0, 1, 2},
                                        3,  1700000000,  {3, 4, 5}, 3},
                                 back;
    struct peer_wire_error e;
    char *json = NULL;

    (void)state;
    assert_int_equal(peer_wire_identity_request_encode(&req, &json), 0);
    assert_string_equal(json, "{\"clusterID\":\"" ID
                              "\",\"clusterName\":\"cluster-a\",\"token\":\"" TOK "\"" PROOF "}");
    assert_int_equal(req_decode(json, &back, &e), 0);
    assert_memory_equal(&req, &back, sizeof req);
    x_free(json);
    json = NULL;
    req.token[0] = 'X';
    assert_int_equal(peer_wire_identity_request_encode(&req, &json), -EINVAL);
    req.token[0] = '0';
    req.cluster_name[0] = '-';
    assert_int_equal(peer_wire_identity_request_encode(&req, &json), -EINVAL);
    assert_null(json);
    assert_int_equal(peer_wire_identity_request_encode(NULL, &json), -EINVAL);
    req.cluster_name[0] = 'c';
    req.signature_len = 0;
    assert_int_equal(peer_wire_identity_request_encode(&req, &json), -EINVAL);
    req.signature_len = PEER_WIRE_SIG_MAX + 1;
    assert_int_equal(peer_wire_identity_request_encode(&req, &json), -EINVAL);
    req.signature_len = 3;
    req.timestamp = -1;
    assert_int_equal(peer_wire_identity_request_encode(&req, &json), -EINVAL);
    req.timestamp = 1;
    assert_int_equal(peer_wire_identity_request_encode(&req, &json), 0);
    x_free(json);
}

static void test_status(void **state)
{
    (void)state;
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_FORBIDDEN), 403);
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_RATE_LIMITED), 429);
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_OWN_ID), 400);
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_TOO_LARGE), 413);
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_NOT_FOUND), 404);
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_METHOD), 405);
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_MEDIA_TYPE), 415);
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_UNAVAILABLE), 503);
    assert_int_equal(peer_wire_http_status(PEER_WIRE_E_INTERNAL), 500);
    assert_int_equal(peer_wire_http_status("whatever"), 500);
    assert_int_equal(peer_wire_http_status(NULL), 500);
}

static char *make_kubeconfig(const char *ns, const char *server)
{
    struct peer_kubeconfig_params p = {
        .server = server,
        .ca_pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        .token = "eyJhbGciOi.sa-token",
        .namespace = ns,
        .cluster_name = "cluster-b",
    };
    char *kc = NULL, err[256];

    p.ca_pem_len = strlen(p.ca_pem);
    assert_int_equal(peer_kubeconfig_build(&p, &kc, err, sizeof err), 0);
    return kc;
}

static void test_response(void **state)
{
    struct peer_identity_response resp = {{0}};
    struct peer_wire_error e;
    char *kc = make_kubeconfig("cliqo-tenant-a-123456", "https://10.0.0.1:6443");
    char *json = NULL, body[4096];

    (void)state;
    assert_int_equal(peer_wire_identity_response_encode("cliqo-tenant-a-123456", kc, NULL, &json),
                     0);
    assert_int_equal(peer_wire_identity_response_decode(json, strlen(json), &resp, &e), 0);
    assert_string_equal(resp.namespace, "cliqo-tenant-a-123456");
    assert_string_equal(resp.kubeconfig, kc);
    peer_identity_response_done(&resp);
    assert_null(resp.kubeconfig);
    peer_identity_response_done(&resp);
    peer_identity_response_done(NULL);
    x_free(json);

    /* Namespace of the kubeconfig differs. */
    assert_int_equal(peer_wire_identity_response_encode("other", kc, NULL, &json), 0);
    assert_int_equal(peer_wire_identity_response_decode(json, strlen(json), &resp, &e), -EINVAL);
    assert_string_equal(e.reason, "invalid-kubeconfig");
    assert_contains(e.message, "namespace");
    x_free(json);
    x_free(kc);

    /* Kubeconfigs refused: one that reads a local file; one that does not pin a CA (a peer's
     * kubeconfig must not weaken TLS, kc_check_peer). */
    {
        static const struct {
            const char *cluster, *msg;
        } bad[] = {
            {",\\\"certificate-authority\\\":\\\"/etc/passwd\\\"", "does not load"},
            {"", "certificate-authority-data is missing"},
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            snprintf(
                body, sizeof body,
                "{\"namespace\":\"ns\",\"kubeconfig\":\"{\\\"clusters\\\":[{\\\"name\\\":"
                "\\\"c\\\",\\\"cluster\\\":{\\\"server\\\":\\\"https://x\\\"%s}}],"
                "\\\"contexts\\\":[{\\\"name\\\":\\\"c\\\",\\\"context\\\":{\\\"cluster\\\":"
                "\\\"c\\\",\\\"namespace\\\":\\\"ns\\\"}}],\\\"current-context\\\":\\\"c\\\"}\"}",
                bad[i].cluster);
            assert_int_equal(peer_wire_identity_response_decode(body, strlen(body), &resp, &e),
                             -EINVAL);
            assert_string_equal(e.reason, "invalid-kubeconfig");
            assert_contains(e.message, bad[i].msg);
        }
    }
    /* Plain http is refused even for a loopback server, which kc_load_mem() alone accepts. */
    kc = make_kubeconfig("ns", "http://127.0.0.1:8080");
    assert_int_equal(peer_wire_identity_response_encode("ns", kc, NULL, &json), 0);
    assert_int_equal(peer_wire_identity_response_decode(json, strlen(json), &resp, &e), -EINVAL);
    assert_string_equal(e.reason, "invalid-kubeconfig");
    assert_contains(e.message, "https://");
    x_free(json);
    x_free(kc);

    snprintf(body, sizeof body, "{\"namespace\":\"Bad_NS\",\"kubeconfig\":\"x\"}");
    assert_int_equal(peer_wire_identity_response_decode(body, strlen(body), &resp, &e), -EINVAL);
    assert_string_equal(e.reason, "invalid-namespace");
    snprintf(body, sizeof body, "{\"namespace\":\"ns\"}");
    assert_int_equal(peer_wire_identity_response_decode(body, strlen(body), &resp, &e), -EINVAL);
    assert_string_equal(e.reason, "missing-field");
    assert_contains(e.message, "kubeconfig");
    snprintf(body, sizeof body, "{\"namespace\":\"ns\",\"kubeconfig\":{}}");
    assert_int_equal(peer_wire_identity_response_decode(body, strlen(body), &resp, &e), -EINVAL);
    assert_string_equal(e.reason, "invalid-field-type");
    snprintf(body, sizeof body, "{\"namespace\":\"ns\",\"kubeconfig\":\"\"}");
    assert_int_equal(peer_wire_identity_response_decode(body, strlen(body), &resp, &e), -EINVAL);
    assert_string_equal(e.reason, "invalid-kubeconfig");
    assert_int_equal(
        peer_wire_identity_response_decode(body, PEER_WIRE_RESPONSE_MAX + 1, &resp, &e), -E2BIG);
    assert_null(resp.kubeconfig);

    assert_int_equal(peer_wire_identity_response_encode("Bad", "x", NULL, &json), -EINVAL);
    assert_int_equal(peer_wire_identity_response_encode("ns", "", NULL, &json), -EINVAL);
    assert_int_equal(peer_wire_identity_response_encode("ns", NULL, NULL, &json), -EINVAL);
    assert_int_equal(peer_wire_identity_response_encode("ns", "\xc3(", NULL, &json), -EINVAL);

    /* keyId: optional; when present, a key ID. */
    kc = make_kubeconfig("ns", "https://h");
    assert_int_equal(peer_wire_identity_response_encode("ns", kc, KEYID, &json), 0);
    assert_contains(json, "\"keyId\":\"" KEYID "\"");
    assert_int_equal(peer_wire_identity_response_decode(json, strlen(json), &resp, &e), 0);
    assert_string_equal(resp.key_id, KEYID);
    peer_identity_response_done(&resp);
    assert_string_equal(resp.key_id, "");
    x_free(json);
    assert_int_equal(peer_wire_identity_response_encode("ns", kc, "", &json), 0);
    assert_null(strstr(json, "keyId"));
    x_free(json);
    assert_int_equal(peer_wire_identity_response_encode("ns", kc, "ABC", &json), -EINVAL);
    x_free(kc);
    static const char *const bad_ids[] = {"\"abc\"", "\"" KEYID "0\"", "1", "null"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        char *k2 = make_kubeconfig("ns", "https://h");
        json_t *o = json_pack("{s:s,s:s}", "namespace", "ns", "kubeconfig", k2);
        char *txt = json_dumps(o, JSON_COMPACT), *full = malloc(strlen(txt) + 128);

        assert_non_null(full);
        snprintf(full, strlen(txt) + 128, "%.*s,\"keyId\":%s}", (int)strlen(txt) - 1, txt,
                 bad_ids[i]);
        assert_int_equal(peer_wire_identity_response_decode(full, strlen(full), &resp, &e),
                         -EINVAL);
        assert_true(strcmp(e.reason, "invalid-key-id") == 0 ||
                    strcmp(e.reason, "invalid-field-type") == 0);
        free(full);
        free(txt);
        json_decref(o);
        x_free(k2);
    }
}

static void test_ids(void **state)
{
    struct peer_ids ids = {ID, "cluster-b", ""}, back;
    struct peer_wire_error e;
    char *json = NULL;
    const char *lower = "{\"clusterID\":\"" ID "\",\"clusterName\":\"b\"}";

    (void)state;
    assert_int_equal(peer_wire_ids_encode(&ids, &json), 0);
    assert_string_equal(json, "{\"clusterId\":\"" ID "\",\"clusterName\":\"cluster-b\"}");
    assert_int_equal(peer_wire_ids_decode(json, strlen(json), &back, &e), 0);
    assert_memory_equal(&ids, &back, sizeof ids);
    x_free(json);
    /* The /ids field is clusterId, as in Liqo. */
    assert_int_equal(peer_wire_ids_decode(lower, strlen(lower), &back, &e), -EINVAL);
    assert_string_equal(e.reason, "missing-field");
    assert_contains(e.message, "clusterId");
    lower = "{\"clusterId\":\"x\",\"clusterName\":\"B\"}";
    assert_int_equal(peer_wire_ids_decode(lower, strlen(lower), &back, &e), -EINVAL);
    assert_string_equal(e.reason, "invalid-cluster-name");
    /* keyId, optional. */
    snprintf(ids.key_id, sizeof ids.key_id, "%s", KEYID);
    assert_int_equal(peer_wire_ids_encode(&ids, &json), 0);
    assert_string_equal(json, "{\"clusterId\":\"" ID
                              "\",\"clusterName\":\"cluster-b\",\"keyId\":\"" KEYID "\"}");
    assert_int_equal(peer_wire_ids_decode(json, strlen(json), &back, &e), 0);
    assert_string_equal(back.key_id, KEYID);
    x_free(json);
    lower = "{\"clusterId\":\"x\",\"clusterName\":\"b\",\"keyId\":\"" KEYID "X\"}";
    assert_int_equal(peer_wire_ids_decode(lower, strlen(lower), &back, &e), -EINVAL);
    assert_string_equal(e.reason, "invalid-key-id");
    ids.cluster_id[0] = '\0';
    assert_int_equal(peer_wire_ids_encode(&ids, &json), -EINVAL);
}

static void test_error_body(void **state)
{
    struct peer_wire_error out, e;
    char *json = NULL;
    char longmsg[2000];
    const char *b;

    (void)state;
    assert_int_equal(peer_wire_error_encode("forbidden", "bad token", &json), 0);
    assert_string_equal(json, "{\"error\":\"forbidden\",\"message\":\"bad token\"}");
    assert_int_equal(peer_wire_error_decode(json, strlen(json), &out, &e), 0);
    assert_string_equal(out.reason, "forbidden");
    assert_string_equal(out.message, "bad token");
    x_free(json);

    /* Sanitised: controls become spaces, bad UTF-8 '?', both ways. */
    assert_int_equal(peer_wire_error_encode("x", "a\nb\x1b[31m\xff\xc3\xa9", &json), 0);
    assert_string_equal(json, "{\"error\":\"x\",\"message\":\"a b [31m?\xc3\xa9\"}");
    x_free(json);
    b = "{\"error\":\"x\",\"message\":\"line1\\nline2\\u0007\\u00e9\\ud83d\\ude00\"}";
    assert_int_equal(peer_wire_error_decode(b, strlen(b), &out, &e), 0);
    assert_string_equal(out.message, "line1 line2 \xc3\xa9\xf0\x9f\x98\x80");
    assert_int_equal(peer_wire_error_encode("x", NULL, &json), 0);
    assert_string_equal(json, "{\"error\":\"x\",\"message\":\"\"}");
    x_free(json);

    /* Long messages are cut at a character boundary. */
    for (size_t i = 0; i + 1 < sizeof longmsg; i += 2) {
        longmsg[i] = (char)0xc3;
        longmsg[i + 1] = (char)0xa9;
    }
    longmsg[sizeof longmsg - 1] = '\0';
    assert_int_equal(peer_wire_error_encode("x", longmsg, &json), 0);
    assert_int_equal(peer_wire_error_decode(json, strlen(json), &out, &e), 0);
    assert_int_equal(strlen(out.message), PEER_WIRE_MESSAGE_MAX - 1); /* 255 2-byte characters */
    x_free(json);

    assert_int_equal(peer_wire_error_encode("Bad Reason", "m", &json), -EINVAL);
    assert_int_equal(peer_wire_error_encode("", "m", &json), -EINVAL);
    assert_int_equal(peer_wire_error_encode(NULL, "m", &json), -EINVAL);

    b = "{\"error\":\"Not Valid\",\"message\":\"m\"}";
    assert_int_equal(peer_wire_error_decode(b, strlen(b), &out, &e), -EINVAL);
    assert_string_equal(e.reason, "invalid-error-reason");
    b = "{\"error\":\"x\"}";
    assert_int_equal(peer_wire_error_decode(b, strlen(b), &out, &e), -EINVAL);
    assert_string_equal(e.reason, "missing-field");
    b = "{\"message\":\"x\"}";
    assert_int_equal(peer_wire_error_decode(b, strlen(b), &out, &e), -EINVAL);
    assert_string_equal(e.reason, "missing-field");
    b = "<html>502 Bad Gateway</html>";
    assert_int_equal(peer_wire_error_decode(b, strlen(b), &out, &e), -EINVAL);
    assert_string_equal(e.reason, "malformed-json");
}

static void test_sanitize(void **state)
{
    char out[8];

    (void)state;
    peer_wire_sanitize(out, sizeof out, "abcdefghij", 10);
    assert_string_equal(out, "abcdefg");
    peer_wire_sanitize(out, sizeof out, "abcdef\xc3\xa9", 8); /* no room for the 2 bytes */
    assert_string_equal(out, "abcdef");
    peer_wire_sanitize(out, sizeof out, "\xed\xa0\x80", 3); /* a surrogate */
    assert_string_equal(out, "???");
    peer_wire_sanitize(out, sizeof out, "\xc0\xaf", 2); /* overlong */
    assert_string_equal(out, "??");
    peer_wire_sanitize(out, sizeof out, "\xf4\x90\x80\x80", 4); /* > U+10FFFF */
    assert_string_equal(out, "????");
    peer_wire_sanitize(out, sizeof out, "a\0b", 3);
    assert_string_equal(out, "a b");
    peer_wire_sanitize(out, sizeof out, NULL, 3);
    assert_string_equal(out, "");
    peer_wire_sanitize(out, 1, "abc", 3);
    assert_string_equal(out, "");
}

static void test_oom(void **state)
{
    struct peer_identity_request req = {ID, "cluster-a", TOK, {0, 1, 2}, 3, 1, {3}, 1};
    struct peer_ids ids = {ID, "b", ""};
    char *kc = make_kubeconfig("ns", "https://h");
    int r = -ENOMEM;

    (void)state;
    for (long n = 0; r == -ENOMEM; n++) {
        char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        struct peer_identity_response resp = {{0}};
        struct peer_wire_error e;

        xalloc_fail_after(n);
        r = peer_wire_identity_request_encode(&req, &a);
        if (r == 0)
            r = peer_wire_ids_encode(&ids, &b);
        if (r == 0)
            r = peer_wire_error_encode("x", "y", &c);
        if (r == 0)
            r = peer_wire_identity_response_encode("ns", kc, NULL, &d);
        if (r == 0)
            r = peer_wire_identity_response_decode(d, strlen(d), &resp, &e);
        xalloc_fail_after(-1);
        assert_true(r == 0 || r == -ENOMEM);
        peer_identity_response_done(&resp);
        x_free(a);
        x_free(b);
        x_free(c);
        x_free(d);
    }
    x_free(kc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_decode),
        cmocka_unit_test(test_request_size),
        cmocka_unit_test(test_request_encode),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_response),
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_error_body),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_oom),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
