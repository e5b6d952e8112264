/* libFuzzer harness for the auth endpoint's JSON decoders (src/peering/wire.c) and the check of a
 * request's proof (src/peering/idkey.c: public key parsing, signature verification). The first byte
 * chooses the decoder ('0' + n works well in seeds), the rest is the body:
 *   0: POST /identity request   1: its 201 response   2: GET /ids   3: error body
 * A decoded request is verified as if made to provider "prov-1" at its own timestamp: it must be
 * refused (-EBADMSG) unless it carries a valid P-256 signature, and never crash.
 * Every successful decode must give valid fields that encode and decode again to the same value;
 * every failure must explain itself with a known reason.
 *
 * The units are included, not only linked, so that they are built with the fuzzer's coverage
 * instrumentation (see fuzz-kubeconfig.c); kc_load_mem comes from the library. */
#include "../src/peering/identity.c"
#include "../src/peering/token.c"
#include "../src/peering/wire.c"
#include "../src/peering/idkey.c"

#include "kube/names.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failure(int r, const struct peer_wire_error *e)
{
    int st = peer_wire_http_status(e->reason);

    if (r != -EINVAL && r != -E2BIG && r != -ENOMEM)
        __builtin_trap();
    if (r == -ENOMEM)
        return;
    if (e->reason[0] == '\0' || e->message[0] == '\0' ||
        (st != 400 && st != 413 && strcmp(e->reason, PEER_WIRE_E_SIGNATURE) != 0))
        __builtin_trap();
    if ((r == -E2BIG) != (st == 413))
        __builtin_trap();
}

/* A message is valid UTF-8 without control characters. */
static void check_text(const char *s)
{
    size_t n = strlen(s);

    for (size_t i = 0; i < n;) {
        size_t l = wire_utf8_len((const unsigned char *)s + i, n - i);

        if (l == 0 || (l == 1 && ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)))
            __builtin_trap();
        i += l;
    }
}

static void fuzz_request(const uint8_t *data, size_t size)
{
    struct peer_identity_request req, back;
    struct peer_wire_error e;
    char *json = NULL;
    int r = peer_wire_identity_request_decode(data, size, &req, &e);

    if (r < 0) {
        check_failure(r, &e);
        return;
    }
    if (!peer_cluster_id_valid(req.cluster_id) || !peer_cluster_name_valid(req.cluster_name) ||
        !peer_token_valid(req.token) || e.reason[0])
        __builtin_trap();
    if (peer_wire_identity_request_encode(&req, &json) < 0)
        __builtin_trap();
    if (peer_wire_identity_request_decode(json, strlen(json), &back, &e) < 0 ||
        strcmp(req.cluster_id, back.cluster_id) != 0 ||
        strcmp(req.cluster_name, back.cluster_name) != 0 || strcmp(req.token, back.token) != 0 ||
        req.public_key_len != back.public_key_len ||
        memcmp(req.public_key, back.public_key, req.public_key_len) != 0 ||
        req.timestamp != back.timestamp || req.signature_len != back.signature_len ||
        memcmp(req.signature, back.signature, req.signature_len) != 0)
        __builtin_trap();
    x_free(json);
    {
        char id[PEER_KEY_ID_LEN + 1], msg[PEER_WIRE_MESSAGE_MAX + 1];
        int v = peer_idkey_verify_request(&req, "prov-1", req.timestamp, PEER_IDKEY_WINDOW, id, msg,
                                          sizeof msg);

        if (v != 0 && v != -EBADMSG && v != -ENOMEM && v != -EIO)
            __builtin_trap();
        if (v == 0 && !peer_idkey_id_valid(id))
            __builtin_trap();
    }
}

static void fuzz_response(const uint8_t *data, size_t size)
{
    struct peer_identity_response resp = {.kubeconfig = NULL}, back = {.kubeconfig = NULL};
    struct peer_wire_error e;
    char *json = NULL;
    int r = peer_wire_identity_response_decode(data, size, &resp, &e);

    if (r < 0) {
        check_failure(r, &e);
        if (resp.kubeconfig)
            __builtin_trap();
        return;
    }
    if (!kname_dns_label(resp.namespace) || !resp.kubeconfig)
        __builtin_trap();
    if (peer_wire_identity_response_encode(resp.namespace, resp.kubeconfig, resp.key_id, &json) < 0)
        __builtin_trap();
    if (peer_wire_identity_response_decode(json, strlen(json), &back, &e) < 0 ||
        strcmp(resp.namespace, back.namespace) != 0 || strcmp(resp.kubeconfig, back.kubeconfig) ||
        strcmp(resp.key_id, back.key_id) != 0)
        __builtin_trap();
    x_free(json);
    peer_identity_response_done(&resp);
    peer_identity_response_done(&back);
}

static void fuzz_ids(const uint8_t *data, size_t size)
{
    struct peer_ids ids, back;
    struct peer_wire_error e;
    char *json = NULL;
    int r = peer_wire_ids_decode(data, size, &ids, &e);

    if (r < 0) {
        check_failure(r, &e);
        return;
    }
    if (peer_wire_ids_encode(&ids, &json) < 0)
        __builtin_trap();
    if (peer_wire_ids_decode(json, strlen(json), &back, &e) < 0 ||
        memcmp(&ids, &back, sizeof ids) != 0)
        __builtin_trap();
    x_free(json);
}

static void fuzz_error(const uint8_t *data, size_t size)
{
    struct peer_wire_error out, back, e;
    char *json = NULL;
    int r = peer_wire_error_decode(data, size, &out, &e);

    if (r < 0) {
        check_failure(r, &e);
        check_text(e.message);
        return;
    }
    check_text(out.message);
    if (!wire_reason_valid(out.reason))
        __builtin_trap();
    if (peer_wire_error_encode(out.reason, out.message, &json) < 0)
        __builtin_trap();
    if (peer_wire_error_decode(json, strlen(json), &back, &e) < 0 ||
        strcmp(out.reason, back.reason) != 0 || strcmp(out.message, back.message) != 0)
        __builtin_trap();
    x_free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char clean[PEER_WIRE_MESSAGE_MAX + 1];

    if (size == 0)
        return 0;
    switch (data[0] % 4) {
    case 0:
        fuzz_request(data + 1, size - 1);
        break;
    case 1:
        fuzz_response(data + 1, size - 1);
        break;
    case 2:
        fuzz_ids(data + 1, size - 1);
        break;
    default:
        fuzz_error(data + 1, size - 1);
        break;
    }
    peer_wire_sanitize(clean, sizeof clean, (const char *)data, size);
    check_text(clean);
    return 0;
}
