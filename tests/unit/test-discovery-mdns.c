/* Unit tests of src/discovery/mdns.c and avahi_uv.c on real sockets: several Avahi responders in
 * one process, in a private network namespace of the test (so the host's network is untouched),
 * talking multicast over its loopback interface. Needs root (CAP_SYS_ADMIN) for the namespace:
 * without it the test fails and says so. Waits are bounded by generous deadlines, never asserted
 * as timings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "discovery/mdns.h"
#include "discovery/record.h"

#define DEADLINE_MS 20000

struct seen {
    char instance[DREC_LABEL_MAX + 1];
    struct drec_announce a;
    enum drec_reason why;
    unsigned found, removed, port;
    char first_txt[DREC_TXT_ITEM_MAX + 1];
    unsigned dropped_cap;
    enum mdns_pub_state pub;
    char pub_instance[DREC_LABEL_MAX + 1];
    unsigned renamed;
    char events[512]; /* "+instance;" and "-instance;" in order */
};

static uv_loop_t loop;

static void on_found(struct mdns *m, const struct mdns_found *f, void *data)
{
    struct seen *s = data;

    (void)m;
    snprintf(s->instance, sizeof(s->instance), "%s", f->instance);
    s->port = f->port;
    s->found++;
    snprintf(s->events + strlen(s->events), sizeof(s->events) - strlen(s->events), "+%s;",
             f->instance);
    memset(&s->a, 0, sizeof(s->a));
    (void)drec_txt_parse(f->txt, f->ntxt, DREC_REQUIRE_URL, &s->a, &s->why);
    if (f->ntxt > 0)
        snprintf(s->first_txt, sizeof(s->first_txt), "%.*s", (int)f->txt[0].len,
                 (const char *)f->txt[0].data);
}

static void on_removed(struct mdns *m, const char *instance, void *data)
{
    struct seen *s = data;

    (void)m;
    snprintf(s->instance, sizeof(s->instance), "%s", instance);
    s->removed++;
    snprintf(s->events + strlen(s->events), sizeof(s->events) - strlen(s->events), "-%s;",
             instance);
}

static void on_published(struct mdns *m, enum mdns_pub_state st, const char *instance,
                         const char *msg, void *data)
{
    struct seen *s = data;

    (void)m, (void)msg;
    s->pub = st;
    snprintf(s->pub_instance, sizeof(s->pub_instance), "%s", instance);
    if (st == MDNS_PUB_RENAMED)
        s->renamed++;
}

static void on_dropped(struct mdns *m, const char *reason, const char *instance, void *data)
{
    struct seen *s = data;

    (void)m, (void)instance;
    if (strcmp(reason, "cap") == 0)
        s->dropped_cap++;
}

static const struct mdns_callbacks cbs = {
    .found = on_found, .removed = on_removed, .published = on_published, .dropped = on_dropped};

/* Runs the loop until pred(arg) or the deadline; returns pred's last value. */
static bool run_until(bool (*pred)(const void *), const void *arg)
{
    uint64_t end = uv_now(&loop) + DEADLINE_MS;

    while (!pred(arg)) {
        if (uv_now(&loop) > end)
            return false;
        uv_run(&loop, UV_RUN_ONCE);
        uv_update_time(&loop);
    }
    return true;
}

/* A timer keeps uv_run(ONCE) from blocking forever when nothing else is due. */
static uv_timer_t tick;
static void on_tick(uv_timer_t *t)
{
    (void)t;
}

static struct mdns *responder(const char *host, struct seen *s, size_t max)
{
    static const char *const lo[] = {"lo", NULL};
    struct mdns_options o = {.host_name = host, .allow_ifaces = lo, .max_services = max};
    struct mdns *m = NULL;
    char err[256];

    assert_int_equal(mdns_new(&loop, &o, &cbs, s, &m, err, sizeof(err)), 0);
    return m;
}

static void publish(struct mdns *m, const char *prefix, const char *id, const char *url)
{
    struct drec_announce a = {0};
    char items[DREC_TXT_BUILD_MAX][DREC_TXT_ITEM_MAX + 1];
    const char *txt[DREC_TXT_BUILD_MAX];
    size_t n;

    snprintf(a.id, sizeof(a.id), "%s", id);
    snprintf(a.name, sizeof(a.name), "%s", prefix);
    snprintf(a.url, sizeof(a.url), "%s", url);
    assert_int_equal(drec_txt_build(&a, items, &n), 0);
    for (size_t i = 0; i < n; i++)
        txt[i] = items[i];
    assert_int_equal(mdns_publish(m, &(struct mdns_service){.prefix = prefix,
                                                            .id = id,
                                                            .type = "_liqo_auth._tcp",
                                                            .domain = "local",
                                                            .port = 19207,
                                                            .ttl = 30,
                                                            .txt = txt,
                                                            .ntxt = n}),
                     0);
}

static bool found_n(const void *p)
{
    const struct seen *s = p;

    return s->found > 0 && s->why == DREC_OK;
}

static bool removed_1(const void *p)
{
    return ((const struct seen *)p)->removed > 0;
}

static bool established(const void *p)
{
    return ((const struct seen *)p)->pub == MDNS_PUB_ESTABLISHED;
}

static bool url_changed(const void *p)
{
    return strcmp(((const struct seen *)p)->a.url, "https://10.0.0.9:19207") == 0;
}

static bool cap_hit(const void *p)
{
    const struct seen *s = p;

    return s->dropped_cap > 0;
}

static int setup_netns(void **state)
{
    struct ifreq ifr;
    int fd;

    (void)state;
    if (unshare(CLONE_NEWNET) < 0) {
        fprintf(stderr,
                "test-discovery-mdns: needs root (CAP_SYS_ADMIN) to create a private "
                "network namespace: unshare: %s\n",
                strerror(errno));
        return -1;
    }
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return -1;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    ifr.ifr_flags = IFF_UP | IFF_MULTICAST | IFF_LOOPBACK | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
        close(fd);
        return -1;
    }
    close(fd);
    if (getenv("TEST_DEBUG"))
        log_set_level(LOG_LEVEL_DEBUG);
    uv_loop_init(&loop);
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, on_tick, 50, 50);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop) == 0 ? 0 : -1;
}

static void settle(unsigned ms)
{
    uint64_t end;

    uv_update_time(&loop);
    end = uv_now(&loop) + ms;
    while (uv_now(&loop) < end) {
        uv_run(&loop, UV_RUN_ONCE);
        uv_update_time(&loop);
    }
}

static void test_announce_browse_update_goodbye(void **state)
{
    struct seen sa = {0}, sb = {0};
    struct mdns *a, *b;

    (void)state;
    a = responder("host-a", &sa, 0);
    b = responder("host-b", &sb, 0);
    publish(a, "alpha", "aaa", "https://10.0.0.1:19207");
    assert_int_equal(mdns_browse(b, "_liqo_auth._tcp", "local"), 0);
    assert_true(run_until(found_n, &sb));
    assert_string_equal(sb.instance, "alpha_aaa");
    assert_string_equal(sb.first_txt, "txtvers=1"); /* wire order kept */
    assert_string_equal(sb.a.id, "aaa");
    assert_string_equal(sb.a.name, "alpha");
    assert_int_equal(sb.port, 19207);
    assert_true(run_until(established, &sa));
    assert_string_equal(mdns_instance(a), "alpha_aaa");

    /* A TXT change is an update: seen again, never removed. */
    publish(a, "alpha", "aaa", "https://10.0.0.9:19207");
    assert_true(run_until(url_changed, &sb));
    assert_int_equal(sb.removed, 0);

    /* A new name: the new instance is announced before the old one says goodbye, so a browser
     * never sees the cluster leave. */
    sb.events[0] = '\0';
    publish(a, "beta", "aaa", "https://10.0.0.9:19207");
    assert_true(run_until(removed_1, &sb));
    assert_string_equal(sb.events, "+beta_aaa;-alpha_aaa;");
    assert_string_equal(mdns_instance(a), "beta_aaa");

    /* The responder's goodbye removes it at once (well before any TTL). */
    sb.removed = 0;
    a = mdns_free(a);
    assert_true(run_until(removed_1, &sb));
    assert_string_equal(sb.instance, "beta_aaa");
    assert_int_equal(mdns_followed(b), 0);
    b = mdns_free(b);
    settle(100);
}

static bool renamed(const void *p)
{
    const struct seen *s = p;

    return s->renamed > 0 && s->pub == MDNS_PUB_ESTABLISHED;
}

static void test_name_conflict(void **state)
{
    struct seen sa = {0}, sc = {0};
    struct mdns *a, *c;

    (void)state;
    a = responder("host-a", &sa, 0);
    publish(a, "alpha", "aaa", "https://10.0.0.1:19207");
    assert_true(run_until(established, &sa));
    /* Another responder wants the same instance name: it loses the probe and renames itself,
     * keeping the ID whole. */
    c = responder("host-c", &sc, 0);
    publish(c, "alpha", "aaa", "https://10.0.0.3:19207");
    assert_true(run_until(renamed, &sc));
    assert_string_equal(sc.pub_instance, "alpha_aaa #2");
    assert_string_equal(mdns_instance(a), "alpha_aaa");
    c = mdns_free(c);
    a = mdns_free(a);
    settle(100);
}

static void test_cap(void **state)
{
    struct seen s[4], sb = {0};
    struct mdns *p[4], *b;
    char id[8], prefix[8];

    (void)state;
    memset(s, 0, sizeof(s));
    b = responder("host-b", &sb, 2);
    assert_int_equal(mdns_browse(b, "_liqo_auth._tcp", "local"), 0);
    for (int i = 0; i < 4; i++) {
        snprintf(id, sizeof(id), "id%d", i);
        snprintf(prefix, sizeof(prefix), "p%d", i);
        snprintf(s[i].instance, sizeof(s[i].instance), "h%d", i);
        p[i] = responder(s[i].instance, &s[i], 0);
        publish(p[i], prefix, id, "https://10.0.0.1:1");
    }
    assert_true(run_until(cap_hit, &sb));
    settle(1500);
    assert_int_equal(mdns_followed(b), 2);
    for (int i = 0; i < 4; i++)
        p[i] = mdns_free(p[i]);
    b = mdns_free(b);
    settle(100);
}

static void test_bad_arguments(void **state)
{
    struct seen sa = {0};
    struct mdns *a = responder("host-a", &sa, 0);

    (void)state;
    assert_int_equal(
        mdns_publish(a,
                     &(struct mdns_service){
                         .id = "x", .type = "not-a-type", .domain = "local", .port = 1, .ttl = 1}),
        -EINVAL);
    assert_int_equal(mdns_publish(a, &(struct mdns_service){.id = "Bad_ID",
                                                            .type = "_x._tcp",
                                                            .domain = "local",
                                                            .port = 1,
                                                            .ttl = 1}),
                     -EINVAL);
    assert_int_equal(mdns_browse(a, "_x", "local"), -EINVAL);
    a = mdns_free(a);
    settle(50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_announce_browse_update_goodbye),
        cmocka_unit_test(test_name_conflict),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_bad_arguments),
    };

    return cmocka_run_group_tests(tests, setup_netns, teardown);
}
