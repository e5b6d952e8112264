#include "kube/names.h"

#include <string.h>

static bool alnum_lower(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* The n bytes at s are one label. */
static bool label_n(const char *s, size_t n)
{
    if (n == 0 || n > KNAME_LABEL_MAX || !alnum_lower(s[0]) || !alnum_lower(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!alnum_lower(s[i]) && s[i] != '-')
            return false;
    return true;
}

bool kname_dns_label(const char *s)
{
    return s && label_n(s, strnlen(s, KNAME_LABEL_MAX + 1));
}

bool kname_dns_subdomain_n(const char *s, size_t n)
{
    size_t start = 0;

    if (!s || n == 0 || n > KNAME_SUBDOMAIN_MAX)
        return false;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (!label_n(s + start, i - start))
            return false;
        start = i + 1;
    }
    return true;
}

bool kname_dns_subdomain(const char *s)
{
    return s && kname_dns_subdomain_n(s, strnlen(s, KNAME_SUBDOMAIN_MAX + 1));
}
