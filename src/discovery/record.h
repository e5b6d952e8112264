/* drec: the content of cliqo's DNS-SD records, written by the announcer and parsed by the browser
 * (mDNS on the LAN, unicast DNS on the WAN). Pure functions: no network, no allocation, no state,
 * so that every parser here is fuzzed (fuzz/fuzz-discovery-record.c).
 *
 * Everything parsed here comes from the network and is hostile: every field is bounded and
 * validated, and a record that fails any check is rejected whole with a reason (counted by the
 * caller in a metric, never logged above debug). Nothing parsed here is ever a trust anchor: the CA
 * hash of an announcement is only compared with the one the operator supplied (docs/discovery.md).
 *
 * TXT keys (RFC 6763 section 6: "key=value" strings, keys case-insensitive, the first occurrence of
 * a key wins, unknown keys are ignored so that later versions can add some):
 *   txtvers=1                    optional; another value rejects the record
 *   id=<cluster ID>              required: an RFC 1123 label (peer_cluster_id_valid)
 *   name=<cluster name>          optional: an RFC 1123 label
 *   url=https://host[:port]      the auth endpoint; required on the LAN (DREC_REQUIRE_URL),
 * optional on the WAN where the SRV record gives host and port cahash=sha256:<64 hex> optional: the
 * hash of the auth CA's public key (peering/pki.h)
 *
 * Instance names: "<prefix>_<cluster ID>", or "<prefix>_<cluster ID> #<n>" after the n-th name
 * conflict (n from 2). The prefix is the cluster name (or any DNS-SD instance text), shortened so
 * that the whole name, with room for a " #<n>" of up to 9999, fits in 63 bytes; the ID is never
 * shortened. With no room left for a prefix the instance is the ID alone. The ID is recovered as
 * the text after the last '_' (cluster IDs have no '_').
 *
 * Output parameters are written on success only. Errors: -EINVAL (malformed, with a reason),
 * -ENAMETOOLONG (does not fit). */
#ifndef CLIQO_DISCOVERY_RECORD_H
#define CLIQO_DISCOVERY_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "peering/identity.h"
#include "peering/pki.h"

#define DREC_LABEL_MAX     63   /* a DNS label, so an instance name, in bytes */
#define DREC_URL_MAX       512  /* auth URLs announced or built from SRV */
#define DREC_TXT_ITEM_MAX  255  /* one TXT string */
#define DREC_TXT_ITEMS_MAX 32   /* strings looked at in one TXT record */
#define DREC_TXT_TOTAL_MAX 2048 /* bytes of one TXT record */
#define DREC_TXT_BUILD_MAX 5    /* strings drec_txt_build writes */
#define DREC_CONFLICT_MAX  9999 /* largest conflict number of an instance name */
#define DREC_HOST_MAX      253  /* DNS name in presentation form, no trailing dot */
#define DREC_TXT_VERSION   "1"
#define DREC_REQUIRE_URL   0x1u /* drec_txt_parse: url= must be present (LAN) */

enum drec_reason {
    DREC_OK,
    DREC_TOO_LARGE,    /* too many strings, a string or the record too long */
    DREC_BAD_ITEM,     /* empty key, control or non-ASCII bytes */
    DREC_BAD_VERSION,  /* txtvers is not 1 */
    DREC_MISSING_ID,   /* no id= */
    DREC_BAD_ID,       /* id= is not a cluster ID */
    DREC_BAD_NAME,     /* name= is not a cluster name */
    DREC_MISSING_URL,  /* no url= where one is required */
    DREC_BAD_URL,      /* url= is not https://host[:port] */
    DREC_BAD_HASH,     /* cahash= is not sha256:<64 hex> */
    DREC_BAD_INSTANCE, /* the instance name is not <prefix>_<id>[ #n] */
    DREC_ID_MISMATCH,  /* the instance's ID differs from id= */
    DREC_BAD_SRV,      /* SRV target or port unusable */
    DREC_MULTIPLE_TXT, /* more than one TXT record for one instance (WAN) */
    _DREC_REASON_MAX,
    _DREC_REASON_INVALID = -22
};

/* A short lowercase name of the reason ("too-large", ...), for metric labels and logs. */
const char *drec_reason_name(enum drec_reason r);

/* One announcement: what a cluster says about itself. Empty strings are absent fields. */
struct drec_announce {
    char id[PEER_NAME_MAX + 1];
    char name[PEER_NAME_MAX + 1];
    char url[DREC_URL_MAX + 1];
    char ca_hash[PEER_CA_HASH_LEN + 1]; /* normalised to lowercase hex */
};

/* One TXT string as received (not NUL-terminated). */
struct drec_txt_item {
    const unsigned char *data;
    size_t len;
};

/* Parses a TXT record. flags: DREC_REQUIRE_URL. Returns 0, or -EINVAL with *ret_reason set. */
int drec_txt_parse(const struct drec_txt_item *items, size_t n, unsigned flags,
                   struct drec_announce *ret, enum drec_reason *ret_reason);

/* Writes the TXT strings of `a` (txtvers first; absent fields left out) as NUL-terminated "k=v"
 * strings into items[0..] and their count into *ret_n. `a` must be valid (drec_announce_valid).
 * Returns 0, -EINVAL or -ENAMETOOLONG. */
int drec_txt_build(const struct drec_announce *a,
                   char items[DREC_TXT_BUILD_MAX][DREC_TXT_ITEM_MAX + 1], size_t *ret_n);

/* True when every present field of `a` is valid and the ID is present. */
bool drec_announce_valid(const struct drec_announce *a, enum drec_reason *ret_reason);

/* The instance name for (prefix, id) after `conflict` conflicts (0 or 1: none, else " #<n>").
 * prefix may be NULL or empty. Characters of the prefix that DNS-SD instance names cannot carry
 * (control bytes) are replaced by '-', and a multi-byte UTF-8 sequence is never cut. Returns 0,
 * -EINVAL (bad id, conflict > DREC_CONFLICT_MAX) or -ENAMETOOLONG (the ID and the suffix alone do
 * not fit). */
int drec_instance_build(const char *prefix, const char *id, unsigned conflict,
                        char ret[DREC_LABEL_MAX + 1]);

/* Parses an instance name (len bytes, not NUL-terminated) into its cluster ID and conflict number
 * (0 when none). Returns 0, or -EINVAL with *ret_reason DREC_BAD_INSTANCE. */
int drec_instance_parse(const char *instance, size_t len, char ret_id[PEER_NAME_MAX + 1],
                        unsigned *ret_conflict, enum drec_reason *ret_reason);

/* Splits a service instance's full name in DNS presentation form ("<instance>.<service>.<domain>",
 * with '\.', '\\' and '\DDD' escapes in the instance label, as c-ares writes them) into the
 * unescaped instance label, checking that the rest is `service_domain` (compared without case and
 * without a trailing dot). Returns 0 with the label (not NUL-terminated inside: *ret_len bytes, a
 * NUL is added after them), or -EINVAL. */
int drec_fullname_split(const char *full, const char *service_domain,
                        char ret_label[DREC_LABEL_MAX + 1], size_t *ret_len);

/* True for "https://<host>[:<port>]" with an optional single trailing "/": host an IPv4 address,
 * a bracketed IPv6 address or a DNS name; port 1..65535; nothing else (no user info, path, query or
 * fragment), at most DREC_URL_MAX bytes. */
bool drec_url_valid(const char *url);

/* The port of a valid URL (443 when none is written). */
unsigned drec_url_port(const char *url);

/* "https://<target>:<port>" from an SRV record's target (presentation form, trailing dot allowed)
 * and port. Returns 0, or -EINVAL (target not a DNS name, port 0). */
int drec_url_from_srv(const char *target, unsigned port, char ret[DREC_URL_MAX + 1]);

/* Parses a cahash value, normalising it to lowercase into ret. Returns 0 or -EINVAL. */
int drec_hash_normalize(const char *s, size_t len, char ret[PEER_CA_HASH_LEN + 1]);

#endif
