/* netaddr: the listen and connect addresses of cliqo's servers ("HOST:PORT"), from flags and
 * configuration files, without name resolution. */
#ifndef CLIQO_COMMON_NETADDR_H
#define CLIQO_COMMON_NETADDR_H

#include <stdbool.h>
#include <sys/socket.h>

/* Parses "HOST:PORT": HOST is empty (every IPv4 address), a numeric IPv4 address, "[IPv6]"
 * (numeric, "[::]" for every address) or "localhost" (127.0.0.1); PORT is 0..65535 in decimal
 * digits only (0: any free port). Returns 0 or -EINVAL; *ret and *ret_len are written on success
 * only. */
int netaddr_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);
/* Whether "HOST:PORT" parses and is a loopback address (127.0.0.0/8, [::1]): a listener there is
 * reachable from this host only. */
bool netaddr_is_loopback(const char *s);

#endif
