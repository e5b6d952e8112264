#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/netaddr.h"

/* "ip:port" or "[ip6]:port" of a parsed address. */
static void show(const struct sockaddr_storage *ss, char *buf, size_t size)
{
    char ip[INET6_ADDRSTRLEN];

    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;

        inet_ntop(AF_INET, &in4->sin_addr, ip, sizeof(ip));
        snprintf(buf, size, "%s:%u", ip, (unsigned)ntohs(in4->sin_port));
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(buf, size, "[%s]:%u", ip, (unsigned)ntohs(in6->sin6_port));
    }
}

static void test_parse(void **state)
{
    static const struct {
        const char *in, *out; /* out NULL: invalid */
    } cases[] = {
        {":8080", "0.0.0.0:8080"},
        {":0", "0.0.0.0:0"},
        {"127.0.0.1:80", "127.0.0.1:80"},
        {"127.0.0.1:10250", "127.0.0.1:10250"},
        {"localhost:1", "127.0.0.1:1"},
        {"0.0.0.0:0", "0.0.0.0:0"},
        {"[::1]:8443", "[::1]:8443"},
        {"[::1]:8", "[::1]:8"},
        {"[::]:65535", "[::]:65535"},
        {"[fe80::1:2]:9", "[fe80::1:2]:9"},
        {"[::ffff:255.255.255.255]:1", "[::ffff:255.255.255.255]:1"},
        {"10.1.2.3:65535", "10.1.2.3:65535"},
        {"", NULL},
        {":", NULL},
        {"8080", NULL},
        {"127.0.0.1", NULL},
        {"127.0.0.1:", NULL},
        {"127.0.0.1:65536", NULL},
        {"1.2.3.4:65536", NULL},
        {"127.0.0.1:-1", NULL},
        {"127.0.0.1:+80", NULL},
        {"127.0.0.1:80 ", NULL},
        {" 127.0.0.1:80", NULL},
        {"127.0.0.256:80", NULL},
        {"1.2.3:80", NULL},
        {"example.com:80", NULL},
        {"host:8", NULL},
        {"LOCALHOST:8", NULL},
        {"::1:80", NULL},
        {"::1:8", NULL},
        {"[::1]", NULL},
        {"[::1]80", NULL},
        {"[::1]:", NULL},
        {"[]:80", NULL},
        {"[1.2.3.4]:80", NULL},
        {"[::1:80", NULL},
        {"1.2.3.4:99999999999999999999999", NULL},
        {"[0123456789012345678901234567890123456789012345678901234567890123]:1", NULL},
        {"0000:0000:0000:0000:0000:0000:255.255.255.255:1", NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sockaddr_storage ss;
        socklen_t len = 7;
        char buf[80];
        int r = netaddr_parse(cases[i].in, &ss, &len);

        if (!cases[i].out) {
            if (r != -EINVAL)
                fail_msg("'%s' should be invalid", cases[i].in);
            assert_int_equal(len, 7); /* not written */
            continue;
        }
        if (r != 0)
            fail_msg("'%s' should parse", cases[i].in);
        show(&ss, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].out);
        assert_int_equal(len, ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                       : sizeof(struct sockaddr_in));
    }
}

static void test_null(void **state)
{
    struct sockaddr_storage ss;
    socklen_t len;

    (void)state;
    assert_int_equal(netaddr_parse(NULL, &ss, &len), -EINVAL);
    assert_int_equal(netaddr_parse(":80", NULL, &len), -EINVAL);
    assert_int_equal(netaddr_parse(":80", &ss, NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_null),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
