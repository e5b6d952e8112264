/* libFuzzer harness for the PKI parsers (src/peering/pki.c): the strict one-certificate PEM parser
 * behind peer_pki_ca_hash / peer_pki_ca_match, and the `sha256:<hex>` pin parser. The first byte
 * chooses: even: the rest is a PEM CA (hashed, then matched against its own hash and a wrong one);
 * odd: the rest is a pin string. */
#include "../src/peering/pki.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(const char *err, size_t errlen, int r)
{
    if (strnlen(err, errlen) == errlen)
        __builtin_trap();
    if ((r < 0) != (err[0] != '\0'))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256], hash[PEER_CA_HASH_LEN + 1];
    unsigned char md[32];
    int r;

    if (size == 0)
        return 0;
    if (data[0] % 2 == 0) {
        const char *pem = (const char *)data + 1;
        size_t len = size - 1;

        r = peer_pki_ca_hash(pem, len, hash, err, sizeof err);
        check_err(err, sizeof err, r);
        if (r < 0) {
            if (r != -EINVAL && r != -E2BIG && r != -EIO)
                __builtin_trap();
            return 0;
        }
        if (strlen(hash) != PEER_CA_HASH_LEN || peer_pki_hash_parse(hash, md, NULL, 0) != 0)
            __builtin_trap();
        if (peer_pki_ca_match(pem, len, hash, err, sizeof err) != 0)
            __builtin_trap();
        hash[PEER_CA_HASH_LEN - 1] = hash[PEER_CA_HASH_LEN - 1] == '0' ? '1' : '0';
        if (peer_pki_ca_match(pem, len, hash, err, sizeof err) != -EACCES)
            __builtin_trap();
    } else {
        char s[128];
        size_t n = size - 1 < sizeof s - 1 ? size - 1 : sizeof s - 1;

        memcpy(s, data + 1, n);
        s[n] = '\0';
        r = peer_pki_hash_parse(s, md, err, sizeof err);
        check_err(err, sizeof err, r);
        if (r == 0 && (strlen(s) != PEER_CA_HASH_LEN || strncmp(s, "sha256:", 7) != 0))
            __builtin_trap();
    }
    ERR_clear_error();
    return 0;
}
