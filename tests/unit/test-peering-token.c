#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/xalloc.h"
#include "peering/token.h"

static void test_generate(void **state)
{
    char a[PEER_TOKEN_LEN + 1], b[PEER_TOKEN_LEN + 1];

    (void)state;
    assert_int_equal(peer_token_generate(a), 0);
    assert_int_equal(peer_token_generate(b), 0);
    assert_int_equal(strlen(a), PEER_TOKEN_LEN);
    assert_true(peer_token_valid(a));
    assert_true(peer_token_valid(b));
    assert_string_not_equal(a, b);
}

static void test_valid(void **state)
{
    char t[PEER_TOKEN_LEN + 2];

    (void)state;
    memset(t, 'a', PEER_TOKEN_LEN);
    t[PEER_TOKEN_LEN] = '\0';
    assert_true(peer_token_valid(t));
    t[3] = '9';
    assert_true(peer_token_valid(t));
    t[3] = 'A'; /* upper case */
    assert_false(peer_token_valid(t));
    t[3] = 'g';
    assert_false(peer_token_valid(t));
    t[3] = ' ';
    assert_false(peer_token_valid(t));
    t[3] = 'a';
    t[PEER_TOKEN_LEN - 1] = '\0'; /* 63 */
    assert_false(peer_token_valid(t));
    t[PEER_TOKEN_LEN - 1] = 'a';
    t[PEER_TOKEN_LEN] = 'a'; /* 65 */
    t[PEER_TOKEN_LEN + 1] = '\0';
    assert_false(peer_token_valid(t));
    t[PEER_TOKEN_LEN] = '\n';
    assert_false(peer_token_valid(t));
    assert_false(peer_token_valid(""));
    assert_false(peer_token_valid(NULL));
}

static void test_equal(void **state)
{
    char a[PEER_TOKEN_LEN + 1], b[PEER_TOKEN_LEN + 1];

    (void)state;
    assert_int_equal(peer_token_generate(a), 0);
    memcpy(b, a, sizeof a);
    assert_true(peer_token_equal(a, b));
    b[0] = b[0] == 'a' ? 'b' : 'a';
    assert_false(peer_token_equal(a, b));
    memcpy(b, a, sizeof a);
    b[PEER_TOKEN_LEN - 1] = b[PEER_TOKEN_LEN - 1] == 'a' ? 'b' : 'a';
    assert_false(peer_token_equal(a, b));
    b[PEER_TOKEN_LEN - 1] = '\0'; /* a prefix is not equal */
    assert_false(peer_token_equal(a, b));
    assert_false(peer_token_equal(a, ""));
    assert_true(peer_token_equal("", ""));
    assert_false(peer_token_equal(a, NULL));
    assert_false(peer_token_equal(NULL, a));
    assert_false(peer_token_equal(NULL, NULL));
}

static void test_limiter_defaults(void **state)
{
    struct peer_limiter *l = NULL;
    uint64_t retry = 0;
    const uint64_t t0 = 1000000;

    (void)state;
    assert_int_equal(peer_limiter_new(0, 0, 0, &l), 0);
    for (int i = 0; i < 5; i++) {
        assert_false(peer_limiter_check(l, "10.0.0.1", t0 + 10 * i, &retry));
        assert_int_equal(peer_limiter_fail(l, "10.0.0.1", t0 + 10 * i), 0);
    }
    /* 5 failures at t0..t0+40: blocked until the first leaves the 60 s window. */
    assert_true(peer_limiter_check(l, "10.0.0.1", t0 + 40, &retry));
    assert_int_equal(retry, 60000 - 40);
    assert_true(peer_limiter_check(l, "10.0.0.1", t0 + 59999, &retry));
    assert_int_equal(retry, 1);
    assert_true(peer_limiter_check(l, "10.0.0.1", t0 + 59999, NULL));
    /* Other addresses are not affected. */
    assert_false(peer_limiter_check(l, "10.0.0.2", t0 + 50, &retry));
    /* Sliding: at t0+60000 the first failure has left; one more failure blocks again. */
    assert_false(peer_limiter_check(l, "10.0.0.1", t0 + 60000, &retry));
    assert_int_equal(peer_limiter_fail(l, "10.0.0.1", t0 + 60000), 0);
    assert_true(peer_limiter_check(l, "10.0.0.1", t0 + 60000, &retry));
    assert_int_equal(retry, 10); /* the t0+10 failure leaves at t0+60010 */
    assert_false(peer_limiter_check(l, "10.0.0.1", t0 + 60010, &retry));
    /* Long after: everything has expired. */
    assert_false(peer_limiter_check(l, "10.0.0.1", t0 + 200000, &retry));
    assert_int_equal(peer_limiter_fail(l, "10.0.0.1", t0 + 200000), 0);
    assert_false(peer_limiter_check(l, "10.0.0.1", t0 + 200000, &retry));
    /* Reset forgets the address. */
    for (int i = 0; i < 5; i++)
        assert_int_equal(peer_limiter_fail(l, "10.0.0.3", t0 + 300000), 0);
    assert_true(peer_limiter_check(l, "10.0.0.3", t0 + 300000, NULL));
    assert_int_equal(peer_limiter_size(l), 2);
    peer_limiter_reset(l, "10.0.0.3");
    peer_limiter_reset(l, "10.9.9.9");
    peer_limiter_reset(l, NULL);
    assert_false(peer_limiter_check(l, "10.0.0.3", t0 + 300000, NULL));
    assert_int_equal(peer_limiter_size(l), 1);
    l = peer_limiter_free(l);
    assert_null(l);
    assert_null(peer_limiter_free(NULL));
}

static void test_limiter_addresses(void **state)
{
    struct peer_limiter *l = NULL;
    char longaddr[PEER_LIMITER_ADDR_MAX + 2];

    (void)state;
    assert_int_equal(peer_limiter_new(2, 1000, 4, &l), 0);
    memset(longaddr, '1', sizeof longaddr - 1);
    longaddr[sizeof longaddr - 1] = '\0';
    assert_int_equal(peer_limiter_fail(l, longaddr, 0), -EINVAL);
    assert_int_equal(peer_limiter_fail(l, "", 0), -EINVAL);
    assert_int_equal(peer_limiter_fail(l, NULL, 0), -EINVAL);
    assert_false(peer_limiter_check(l, NULL, 0, NULL));
    longaddr[PEER_LIMITER_ADDR_MAX] = '\0'; /* the longest allowed */
    assert_int_equal(peer_limiter_fail(l, longaddr, 0), 0);
    assert_int_equal(peer_limiter_fail(l, longaddr, 0), 0);
    assert_true(peer_limiter_check(l, longaddr, 0, NULL));
    assert_true(peer_limiter_check(l, "fe80::1%eth0", 0, NULL) == false);
    peer_limiter_free(l);
}

static void test_limiter_eviction(void **state)
{
    struct peer_limiter *l = NULL;
    char addr[32];

    (void)state;
    assert_int_equal(peer_limiter_new(2, 1000, 4, &l), 0);
    /* a,b,c,d fill the table; d's failures are newest, a's oldest. */
    for (int i = 0; i < 4; i++) {
        snprintf(addr, sizeof addr, "addr-%d", i);
        assert_int_equal(peer_limiter_fail(l, addr, 100 + (uint64_t)i), 0);
        assert_int_equal(peer_limiter_fail(l, addr, 100 + (uint64_t)i), 0);
    }
    assert_int_equal(peer_limiter_size(l), 4);
    /* addr-1 fails again later: addr-0 is now the stalest. */
    assert_int_equal(peer_limiter_fail(l, "addr-1", 200), 0);
    assert_int_equal(peer_limiter_fail(l, "new", 300), 0);
    assert_int_equal(peer_limiter_size(l), 4);
    assert_false(peer_limiter_check(l, "addr-0", 300, NULL)); /* evicted */
    assert_true(peer_limiter_check(l, "addr-1", 300, NULL));
    assert_true(peer_limiter_check(l, "addr-2", 300, NULL));
    assert_true(peer_limiter_check(l, "addr-3", 300, NULL));
    /* When entries have expired, they go first, all of them. */
    assert_int_equal(peer_limiter_fail(l, "late", 5000), 0);
    assert_int_equal(peer_limiter_size(l), 1);
    peer_limiter_free(l);
}

static void test_limiter_clock_back(void **state)
{
    struct peer_limiter *l = NULL;
    uint64_t retry = 0;

    (void)state;
    assert_int_equal(peer_limiter_new(2, 1000, 0, &l), 0);
    assert_int_equal(peer_limiter_fail(l, "a", 5000), 0);
    assert_int_equal(peer_limiter_fail(l, "a", 5000), 0);
    /* The clock went back: the failures still count, for a whole window. */
    assert_true(peer_limiter_check(l, "a", 10, &retry));
    assert_int_equal(retry, 1000);
    assert_false(peer_limiter_check(l, "a", 6000, &retry));
    peer_limiter_free(l);
}

static void test_limiter_args(void **state)
{
    struct peer_limiter *l = NULL;

    (void)state;
    assert_int_equal(peer_limiter_new(PEER_LIMITER_MAX_FAILURES + 1, 0, 0, &l), -EINVAL);
    assert_int_equal(peer_limiter_new(0, 0, PEER_LIMITER_MAX_CAPACITY + 1, &l), -EINVAL);
    assert_null(l);
    xalloc_fail_after(0);
    assert_int_equal(peer_limiter_new(0, 0, 0, &l), -ENOMEM);
    xalloc_fail_after(1);
    assert_int_equal(peer_limiter_new(0, 0, 0, &l), -ENOMEM);
    xalloc_fail_after(-1);
    assert_null(l);
    /* A ring of the largest size wraps correctly. */
    assert_int_equal(peer_limiter_new(PEER_LIMITER_MAX_FAILURES, 100, 1, &l), 0);
    for (uint64_t t = 0; t < 1000; t++) {
        assert_int_equal(peer_limiter_fail(l, "x", t), 0);
        assert_int_equal(peer_limiter_check(l, "x", t, NULL), t >= PEER_LIMITER_MAX_FAILURES - 1);
    }
    peer_limiter_free(l);
}

/* A sequence of attempts from one address (limit 3 per 1000 ms); a right token passes at every
 * point, even while the address is blocked, and neither counts nor resets the failures. */
static void test_verdict_shared_address(void **state)
{
    static const char right[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    static const char wrong[] = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
    static const struct {
        const char *given;
        uint64_t now;
        enum peer_verdict want;
        uint64_t retry; /* expected when LIMITED */
    } steps[] = {
        {right, 0, PEER_VERDICT_OK, 0},
        {wrong, 0, PEER_VERDICT_WRONG, 0},
        {wrong, 10, PEER_VERDICT_WRONG, 0},
        {right, 15, PEER_VERDICT_OK, 0}, /* does not reset the count */
        {wrong, 20, PEER_VERDICT_WRONG, 0},
        {wrong, 30, PEER_VERDICT_LIMITED, 970},
        {NULL, 40, PEER_VERDICT_LIMITED, 960},
        {"", 40, PEER_VERDICT_LIMITED, 960},
        {"short", 50, PEER_VERDICT_LIMITED, 950},
        {right, 60, PEER_VERDICT_OK, 0}, /* blocked address, right token */
        {right, 61, PEER_VERDICT_OK, 0},
        {wrong, 999, PEER_VERDICT_LIMITED, 1},
        {wrong, 1000, PEER_VERDICT_WRONG, 0}, /* the first failure left the window */
        {wrong, 1005, PEER_VERDICT_LIMITED, 5},
        {right, 1005, PEER_VERDICT_OK, 0},
    };
    struct peer_limiter *l = NULL;

    (void)state;
    assert_int_equal(peer_limiter_new(3, 1000, 0, &l), 0);
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        uint64_t retry = 0;

        print_message("step %zu\n", i);
        assert_int_equal(
            peer_token_verdict(l, "10.0.0.1", right, steps[i].given, steps[i].now, &retry),
            steps[i].want);
        if (steps[i].want == PEER_VERDICT_LIMITED)
            assert_int_equal(retry, steps[i].retry);
        /* Another address is never affected. */
        assert_false(peer_limiter_check(l, "10.0.0.2", steps[i].now, NULL));
    }
    peer_limiter_free(l);
}

/* No current token (the Secret was not read yet, or holds none): everything is wrong. */
static void test_verdict_no_token(void **state)
{
    static const char tok[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    static const char *const expected[] = {NULL, ""};
    struct peer_limiter *l = NULL;

    (void)state;
    assert_int_equal(peer_limiter_new(2, 1000, 0, &l), 0);
    for (size_t i = 0; i < 2; i++) {
        const char *addr = i == 0 ? "a" : "b";

        assert_int_equal(peer_token_verdict(l, addr, expected[i], tok, 0, NULL),
                         PEER_VERDICT_WRONG);
        assert_int_equal(peer_token_verdict(l, addr, expected[i], "", 0, NULL), PEER_VERDICT_WRONG);
        assert_int_equal(peer_token_verdict(l, addr, expected[i], NULL, 0, NULL),
                         PEER_VERDICT_LIMITED);
    }
    /* An invalid address is counted nowhere and never blocked, but its wrong token stays wrong. */
    assert_int_equal(peer_token_verdict(l, NULL, tok, "x", 0, NULL), PEER_VERDICT_WRONG);
    assert_int_equal(peer_token_verdict(l, NULL, tok, tok, 0, NULL), PEER_VERDICT_OK);
    peer_limiter_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_equal),
        cmocka_unit_test(test_limiter_defaults),
        cmocka_unit_test(test_limiter_addresses),
        cmocka_unit_test(test_limiter_eviction),
        cmocka_unit_test(test_limiter_clock_back),
        cmocka_unit_test(test_limiter_args),
        cmocka_unit_test(test_verdict_shared_address),
        cmocka_unit_test(test_verdict_no_token),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
