#include "common/netaddr.h"
#include "common/strutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

int netaddr_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len)
{
    struct sockaddr_storage ss;
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon, *port_s;
    uint64_t port;
    size_t hlen;

    if (!s || !ret || !ret_len)
        return -EINVAL;
    memset(&ss, 0, sizeof(ss));
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

        if (!end || end[1] != ':')
            return -EINVAL;
        hlen = (size_t)(end - s - 1);
        if (hlen == 0 || hlen >= sizeof(host))
            return -EINVAL;
        memcpy(host, s + 1, hlen);
        host[hlen] = '\0';
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
            return -EINVAL;
        port_s = end + 2;
        if (parse_u64(port_s, 65535, &port) < 0)
            return -EINVAL;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *ret = ss;
        *ret_len = sizeof(*in6);
        return 0;
    }
    colon = strrchr(s, ':');
    if (!colon || strchr(s, ':') != colon)
        return -EINVAL; /* no port, or an IPv6 address without brackets */
    hlen = (size_t)(colon - s);
    if (hlen >= sizeof(host))
        return -EINVAL;
    memcpy(host, s, hlen);
    host[hlen] = '\0';
    if (parse_u64(colon + 1, 65535, &port) < 0)
        return -EINVAL;
    {
        struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;

        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        if (hlen == 0)
            in4->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (strcmp(host, "localhost") == 0)
            in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        else if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
            return -EINVAL;
        *ret = ss;
        *ret_len = sizeof(*in4);
    }
    return 0;
}

bool netaddr_is_loopback(const char *s)
{
    struct sockaddr_storage ss;
    socklen_t len;

    if (netaddr_parse(s, &ss, &len) < 0)
        return false;
    if (ss.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
    return ss.ss_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
}
