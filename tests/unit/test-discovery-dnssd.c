/* Unit tests of src/discovery/dnssd.c against a real DNS server: dnsmasq (Debian's dnsmasq-base)
 * serving PTR, SRV and TXT records, started by the test in a private network namespace of its own
 * (so no port is shared with anything else on the machine). Needs root for the namespace and
 * dnsmasq installed: without either the test fails and says so. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "discovery/dnssd.h"

#define PORT     "5353" /* a private namespace: any port is ours */
#define SERVER   "127.0.0.1:" PORT
#define SVC      "_liqo_auth._tcp"
#define DOM      "example.test"
#define FULL(x)  x "." SVC "." DOM
#define DEADLINE 20000

static uv_loop_t loop;
static pid_t dnsmasq = -1;

static const char *dnsmasq_path(void)
{
    const char *e = getenv("DNSMASQ");

    if (e && *e)
        return e;
    return access("/usr/sbin/dnsmasq", X_OK) == 0 ? "/usr/sbin/dnsmasq" : NULL;
}

static void stop_dnsmasq(void)
{
    if (dnsmasq > 0) {
        kill(dnsmasq, SIGTERM);
        waitpid(dnsmasq, NULL, 0);
    }
    dnsmasq = -1;
}

static void start_dnsmasq(const char *const *records)
{
    const char *argv[64];
    size_t n = 0;
    const char *path = dnsmasq_path();

    if (!path)
        fail_msg("dnsmasq not found (install Debian's dnsmasq-base, or set DNSMASQ)");
    argv[n++] = path;
    argv[n++] = "--keep-in-foreground";
    argv[n++] = "--conf-file=/dev/null";
    argv[n++] = "--no-resolv";
    argv[n++] = "--no-hosts";
    argv[n++] = "--pid-file=";
    argv[n++] = "--listen-address=127.0.0.1";
    argv[n++] = "--bind-interfaces";
    argv[n++] = "--port=" PORT;
    argv[n++] = "--local=/" DOM "/";
    argv[n++] = "--user=root";
    for (size_t i = 0; records[i] && n < 62; i++)
        argv[n++] = records[i];
    argv[n] = NULL;
    dnsmasq = fork();
    assert_true(dnsmasq >= 0);
    if (dnsmasq == 0) {
        execv(path, (char *const *)argv);
        _exit(127);
    }
}

struct res {
    bool done;
    int err;
    char message[200];
    size_t n, truncated;
    struct dnssd_instance inst[8];
};

static void on_result(struct dnssd *d, const struct dnssd_result *r, void *data)
{
    struct res *o = data;

    (void)d;
    o->done = true;
    o->err = r->err;
    snprintf(o->message, sizeof(o->message), "%s", r->message);
    o->n = r->n;
    o->truncated = r->truncated;
    for (size_t i = 0; i < r->n && i < 8; i++) {
        o->inst[i] = r->inst[i];
        o->inst[i].ntxt = 0; /* the TXT bytes are borrowed: keep only the first string's copy */
    }
    if (r->n > 0 && r->inst[0].ntxt > 0) {
        static char first[DREC_TXT_ITEM_MAX + 1];

        snprintf(first, sizeof(first), "%.*s", (int)r->inst[0].txt[0].len,
                 (const char *)r->inst[0].txt[0].data);
        o->inst[0].txt[0].data = (const unsigned char *)first;
        o->inst[0].txt[0].len = strlen(first);
        o->inst[0].ntxt = r->inst[0].ntxt;
    }
}

static uv_timer_t tick;
static void on_tick(uv_timer_t *t)
{
    (void)t;
}

/* One browse with a fresh resolver; runs the loop until the result. */
static void browse(const char *server, unsigned timeout_ms, size_t max, struct res *o)
{
    struct dnssd *d = NULL;
    struct dnssd_options opt = {
        .server = server, .timeout_ms = timeout_ms, .tries = 1, .max_instances = max};
    char err[256];
    uint64_t end;

    memset(o, 0, sizeof(*o));
    assert_int_equal(dnssd_new(&loop, &opt, &d, err, sizeof(err)), 0);
    assert_int_equal(dnssd_browse(d, SVC, DOM, on_result, o, NULL), 0);
    uv_update_time(&loop);
    end = uv_now(&loop) + DEADLINE;
    while (!o->done && uv_now(&loop) < end) {
        uv_run(&loop, UV_RUN_ONCE);
        uv_update_time(&loop);
    }
    d = dnssd_free(d);
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_true(o->done);
}

/* Browses until the server answers (dnsmasq takes a moment to bind). */
static void browse_ready(struct res *o, size_t max)
{
    for (int i = 0; i < 100; i++) {
        browse(SERVER, 300, max, o);
        if (o->err != -EIO && o->err != -ETIMEDOUT)
            return;
        usleep(100000);
    }
    fail_msg("dnsmasq did not answer: %s", o->message);
}

static const struct dnssd_instance *by_name(const struct res *o, const char *full)
{
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->inst[i].fullname, full) == 0)
            return &o->inst[i];
    fail_msg("no instance %s", full);
    return NULL;
}

static void test_browse(void **state)
{
    static const char *const recs[] = {"--ptr-record=" SVC "." DOM "," FULL("a_aaa"),
                                       "--ptr-record=" SVC "." DOM "," FULL("b_bbb"),
                                       "--ptr-record=" SVC "." DOM "," FULL("stale_ccc"),
                                       "--ptr-record=" SVC "." DOM "," FULL("twotxt_ddd"),
                                       "--srv-host=" FULL("a_aaa") ",auth-a." DOM ",19207",
                                       "--txt-record=" FULL("a_aaa") ",txtvers=1,id=aaa,name=a",
                                       "--srv-host=" FULL("b_bbb") ",auth-b." DOM ",19217,0,0",
                                       "--srv-host=" FULL("b_bbb") ",backup-b." DOM ",1,5,0",
                                       "--txt-record=" FULL("b_bbb") ",id=bbb",
                                       "--txt-record=" FULL("stale_ccc") ",id=ccc",
                                       "--srv-host=" FULL("twotxt_ddd") ",auth-d." DOM ",1",
                                       "--txt-record=" FULL("twotxt_ddd") ",id=ddd",
                                       "--txt-record=" FULL("twotxt_ddd") ",id=eee",
                                       NULL};
    const struct dnssd_instance *in;
    struct res o;

    (void)state;
    start_dnsmasq(recs);
    browse_ready(&o, 0);
    assert_int_equal(o.err, 0);
    assert_int_equal(o.n, 4);
    in = by_name(&o, FULL("a_aaa"));
    assert_int_equal(in->state, DNSSD_OK);
    assert_string_equal(in->target, "auth-a." DOM);
    assert_int_equal(in->port, 19207);
    in = by_name(&o, FULL("b_bbb"));
    assert_int_equal(in->state, DNSSD_OK);
    assert_string_equal(in->target, "auth-b." DOM); /* lowest priority wins */
    in = by_name(&o, FULL("stale_ccc"));
    assert_int_equal(in->state, DNSSD_ABSENT); /* TXT but no SRV */
    in = by_name(&o, FULL("twotxt_ddd"));
    assert_true(in->multiple_txt);
    /* The TXT strings in wire order (the first one of instance 0, whichever that is). */
    assert_true(o.inst[0].ntxt > 0);

    /* A cap on instances: the rest is counted, not looked up. */
    browse(SERVER, 1000, 2, &o);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.truncated, 2);
    stop_dnsmasq();
}

static void test_absent_and_failures(void **state)
{
    static const char *const none[] = {"--txt-record=other." DOM ",x=1", NULL};
    struct res o;

    (void)state;
    start_dnsmasq(none);
    browse_ready(&o, 0);
    /* NXDOMAIN for the PTR name: the domain lists no instance (not an error to act on). */
    assert_int_equal(o.err, -ENOENT);
    assert_int_equal(o.n, 0);
    stop_dnsmasq();
    /* Nothing listens: a failure, never an absence. */
    browse(SERVER, 300, 0, &o);
    assert_true(o.err == -EIO || o.err == -ETIMEDOUT);
    assert_non_null(strstr(o.message, "PTR"));
}

static void test_bad_arguments(void **state)
{
    struct dnssd *d = NULL;
    char err[128];

    (void)state;
    assert_false(dnssd_server_valid("localhost"));
    assert_false(dnssd_server_valid("127.0.0.1:0"));
    assert_false(dnssd_server_valid("127.0.0.1:70000"));
    assert_false(dnssd_server_valid("127.0.0.1:"));
    assert_true(dnssd_server_valid("127.0.0.1"));
    assert_true(dnssd_server_valid("10.1.2.3:53"));
    assert_int_equal(dnssd_new(&loop, &(struct dnssd_options){.server = "x"}, &d, err, sizeof(err)),
                     -EINVAL);
    assert_int_equal(dnssd_new(&loop, NULL, &d, err, sizeof(err)), 0);
    assert_int_equal(dnssd_browse(d, SVC, "", on_result, NULL, NULL), -EINVAL);
    d = dnssd_free(d);
    uv_run(&loop, UV_RUN_NOWAIT);
}

static int setup(void **state)
{
    struct ifreq ifr;
    int fd;

    (void)state;
    if (unshare(CLONE_NEWNET) < 0) {
        fprintf(stderr,
                "test-discovery-dnssd: needs root (CAP_SYS_ADMIN) to create a private "
                "network namespace: unshare: %s\n",
                strerror(errno));
        return -1;
    }
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
    if (fd < 0 || ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        return -1;
    close(fd);
    uv_loop_init(&loop);
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, on_tick, 50, 50);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    stop_dnsmasq();
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_browse),
        cmocka_unit_test(test_absent_and_failures),
        cmocka_unit_test(test_bad_arguments),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
