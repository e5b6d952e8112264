/* libFuzzer harness for the parsers of discovery record content (src/discovery/record.c): what an
 * announcer on the LAN or a DNS server on the WAN sends us. The first byte chooses the parser:
 *   0: a TXT record in DNS wire form (length-prefixed strings), LAN rules (url required)
 *   1: the same, WAN rules
 *   2: an instance name        3: a full service name (c-ares presentation form)
 *   4: an auth URL             5: a CA hash value
 * Properties checked: a parse that succeeds gives fields that are valid and that build and parse
 * again to the same announcement; a failure leaves the output untouched and names a reason; an
 * instance name that parses rebuilds to itself when it was written by drec_instance_build.
 *
 * record.c is included so that it is built with the fuzzer's coverage instrumentation; the label
 * checks come from the peering library. */
#include "../src/discovery/record.c"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_txt(const uint8_t *d, size_t n, unsigned flags)
{
    struct drec_txt_item items[DREC_TXT_ITEMS_MAX + 8];
    struct drec_announce a, b, canary;
    char built[DREC_TXT_BUILD_MAX][DREC_TXT_ITEM_MAX + 1];
    struct drec_txt_item bi[DREC_TXT_BUILD_MAX];
    enum drec_reason why = _DREC_REASON_MAX;
    size_t count = 0, off = 0, bn = 0;

    while (off < n && count < sizeof(items) / sizeof(items[0])) {
        size_t l = d[off++];

        if (l > n - off)
            l = n - off;
        items[count].data = d + off;
        items[count].len = l;
        count++;
        off += l;
    }
    memset(&a, 0xa5, sizeof(a));
    canary = a;
    if (drec_txt_parse(items, count, flags, &a, &why) < 0) {
        if (why <= DREC_OK || why >= _DREC_REASON_MAX || memcmp(&a, &canary, sizeof(a)) != 0)
            __builtin_trap();
        return;
    }
    if (why != DREC_OK || !drec_announce_valid(&a, NULL) ||
        ((flags & DREC_REQUIRE_URL) && !a.url[0]))
        __builtin_trap();
    if (drec_txt_build(&a, built, &bn) < 0)
        __builtin_trap();
    for (size_t i = 0; i < bn; i++) {
        bi[i].data = (const unsigned char *)built[i];
        bi[i].len = strlen(built[i]);
    }
    if (drec_txt_parse(bi, bn, flags, &b, &why) < 0 || memcmp(&a, &b, sizeof(a)) != 0)
        __builtin_trap();
}

static void check_instance(const uint8_t *d, size_t n)
{
    char id[PEER_NAME_MAX + 1] = "canary", again[DREC_LABEL_MAX + 1];
    unsigned conflict = 77;
    enum drec_reason why;

    if (drec_instance_parse((const char *)d, n, id, &conflict, &why) < 0) {
        if (why != DREC_BAD_INSTANCE || strcmp(id, "canary") != 0 || conflict != 77)
            __builtin_trap();
        return;
    }
    if (!peer_cluster_id_valid(id) || conflict == 1 || conflict > DREC_CONFLICT_MAX)
        __builtin_trap();
    /* What we build from that ID parses back to it. */
    if (drec_instance_build("p", id, conflict, again) == 0) {
        char id2[PEER_NAME_MAX + 1];
        unsigned c2;

        if (drec_instance_parse(again, strlen(again), id2, &c2, &why) < 0 || strcmp(id, id2) != 0 ||
            c2 != conflict)
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;

    if (size < 1)
        return 0;
    switch (data[0] % 6) {
    case 0:
        check_txt(data + 1, size - 1, DREC_REQUIRE_URL);
        break;
    case 1:
        check_txt(data + 1, size - 1, 0);
        break;
    case 2:
        check_instance(data + 1, size - 1);
        break;
    case 3: {
        char label[DREC_LABEL_MAX + 1], id[PEER_NAME_MAX + 1];
        size_t len = 0;
        unsigned c;

        s = strndup((const char *)data + 1, size - 1);
        if (!s)
            return 0;
        if (drec_fullname_split(s, "_liqo_auth._tcp.example.com", label, &len) == 0) {
            if (len == 0 || len > DREC_LABEL_MAX || strlen(label) != len)
                __builtin_trap();
            (void)drec_instance_parse(label, len, id, &c, NULL);
        }
        free(s);
        break;
    }
    case 4: {
        char url[DREC_URL_MAX + 1];

        s = strndup((const char *)data + 1, size - 1);
        if (!s)
            return 0;
        if (drec_url_valid(s) && (drec_url_port(s) == 0 || strlen(s) > DREC_URL_MAX))
            __builtin_trap();
        (void)drec_url_from_srv(s, 443, url);
        free(s);
        break;
    }
    default: {
        char h[PEER_CA_HASH_LEN + 1];

        if (drec_hash_normalize((const char *)data + 1, size - 1, h) == 0 &&
            (strlen(h) != PEER_CA_HASH_LEN || strncmp(h, "sha256:", 7) != 0))
            __builtin_trap();
        break;
    }
    }
    return 0;
}
