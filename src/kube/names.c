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

bool kname_label_value(const char *s, bool allow_empty)
{
    size_t n = s ? strlen(s) : 0;

    if (!s || n > KNAME_LABEL_MAX)
        return false;
    if (n == 0)
        return allow_empty;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

        if (!an && c != '-' && c != '_' && c != '.')
            return false;
        if ((i == 0 || i == n - 1) && !an)
            return false;
    }
    return true;
}

bool kname_label_key(const char *s)
{
    const char *slash = s ? strchr(s, '/') : NULL;

    if (!s || !*s)
        return false;
    if (!slash)
        return kname_label_value(s, false);
    return kname_dns_subdomain_n(s, (size_t)(slash - s)) && kname_label_value(slash + 1, false);
}
