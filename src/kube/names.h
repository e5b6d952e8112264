/* kube/names: Kubernetes' DNS-1123 names, as the apiserver's validation (and so the CRDs' patterns)
 * accept them.
 *
 * A label (namespace names, cluster IDs and names, container names) is 1 to 63 bytes of [a-z0-9-]
 * that start and end with [a-z0-9]. A subdomain (most object names, the prefix of a qualified label
 * key) is 1 to 253 bytes of labels joined by single dots. Only lowercase: unlike DNS itself,
 * Kubernetes refuses "A". Each label of a subdomain is held to 63 bytes too, which is stricter than
 * the apiserver (it only bounds the whole); every caller checked that way before these were shared.
 */
#ifndef CLIQO_KUBE_NAMES_H
#define CLIQO_KUBE_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define KNAME_LABEL_MAX     63
#define KNAME_SUBDOMAIN_MAX 253

/* True when s (NULL allowed: false) is a DNS-1123 label. */
bool kname_dns_label(const char *s);
/* True when s (NULL allowed: false) is a DNS-1123 subdomain. */
bool kname_dns_subdomain(const char *s);
/* The same for the n bytes at s (a part of a longer string; a NUL among them: false). */
bool kname_dns_subdomain_n(const char *s, size_t n);
/* A label value, or the name part of a qualified name: at most 63 bytes of [A-Za-z0-9._-] that
 * start and end with an alphanumeric; empty is valid when allow_empty. NULL: false. */
bool kname_label_value(const char *s, bool allow_empty);
/* A qualified name (a label key, an annotation key, an extended resource's name): [prefix/]name,
 * the prefix a subdomain, the name as kname_label_value. NULL: false. */
bool kname_label_key(const char *s);

#endif
