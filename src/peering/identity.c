#include "peering/identity.h"
#include "kube/names.h"

#include <errno.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

static const char id_hex[] = "0123456789abcdef";

int peer_uuid_v4(char ret[PEER_UUID_LEN + 1])
{
    unsigned char b[16];
    char out[PEER_UUID_LEN + 1];
    size_t o = 0;

    if (RAND_bytes(b, sizeof b) != 1)
        return -EIO;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 10 (RFC 4122) */
    for (size_t i = 0; i < sizeof b; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = id_hex[b[i] >> 4];
        out[o++] = id_hex[b[i] & 0x0f];
    }
    out[o] = '\0';
    memcpy(ret, out, sizeof out);
    return 0;
}

static bool id_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool peer_cluster_id_valid(const char *s)
{
    return kname_dns_label(s);
}

bool peer_cluster_name_valid(const char *s)
{
    return kname_dns_label(s);
}

int peer_tenant_namespace(const char *cluster_id, const char *cluster_name,
                          char ret[PEER_NAME_MAX + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char part[PEER_TENANT_NAME_PART_MAX + 1];
    char out[PEER_NAME_MAX + 1];
    size_t n = 0, start = 0, o;

    if (!peer_cluster_id_valid(cluster_id))
        return -EINVAL;
    if (EVP_Digest(cluster_id, strlen(cluster_id), md, &mdlen, EVP_sha256(), NULL) != 1 ||
        mdlen < 3)
        return -EIO;

    for (const char *p = cluster_name ? cluster_name : ""; *p && n < PEER_TENANT_NAME_PART_MAX;
         p++) {
        char c = *p;

        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        part[n++] = id_alnum(c) ? c : '-';
    }
    while (n > 0 && part[n - 1] == '-')
        n--;
    while (start < n && part[start] == '-')
        start++;

    o = strlen(PEER_TENANT_PREFIX);
    memcpy(out, PEER_TENANT_PREFIX, o);
    if (start < n) {
        memcpy(out + o, part + start, n - start);
        o += n - start;
        out[o++] = '-';
    }
    for (size_t i = 0; i < PEER_TENANT_HASH_LEN / 2; i++) {
        out[o++] = id_hex[md[i] >> 4];
        out[o++] = id_hex[md[i] & 0x0f];
    }
    out[o] = '\0';
    memcpy(ret, out, o + 1);
    return 0;
}
