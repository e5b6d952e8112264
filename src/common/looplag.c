#include "common/looplag.h"

#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t llag_thread_cpu_ns(void)
{
    struct timespec t;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) < 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t llag_thread_faults(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_THREAD, &ru) < 0)
        return 0;
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

uint64_t llag_busy_ns(uint64_t prev_cpu_ns, uint64_t now_cpu_ns)
{
    return now_cpu_ns < prev_cpu_ns ? 0 : now_cpu_ns - prev_cpu_ns;
}

static void trace_arm(struct llag *l);
static struct llag *traced; /* the one llag_trace watches (one loop per process) */

static void on_prepare(uv_prepare_t *h)
{
    struct llag *l = h->data;

    l->poll_cpu_ns = llag_thread_cpu_ns();
}

static void on_check(uv_check_t *h)
{
    struct llag *l = h->data;
    uint64_t now = llag_thread_cpu_ns(), busy, faults = llag_thread_faults();

    busy = llag_busy_ns(l->last_cpu_ns, now);
    l->iterations++;
    if (busy > l->max_ns) {
        l->max_ns = busy;
        l->max_faults = faults >= l->last_faults ? faults - l->last_faults : 0;
        /* The prepare ran in this iteration unless none ran since the last check. */
        l->max_io_ns = l->poll_cpu_ns >= l->last_cpu_ns ? llag_busy_ns(l->poll_cpu_ns, now) : 0;
    }
    if (l->fn)
        l->fn(l, busy, l->data);
    /* Read again: the callback's own work (a metric, a log line) is not the next iteration's. */
    l->last_cpu_ns = l->fn ? llag_thread_cpu_ns() : now;
    l->last_faults = l->fn ? llag_thread_faults() : faults;
    if (l->trace_ms)
        trace_arm(l);
}

int llag_start(struct llag *l, uv_loop_t *loop, llag_fn fn, void *data)
{
    int r;

    memset(l, 0, sizeof(*l));
    r = uv_check_init(loop, &l->check);
    if (r < 0)
        return r;
    r = uv_prepare_init(loop, &l->prepare);
    if (r < 0) {
        uv_close((uv_handle_t *)&l->check, NULL);
        return r;
    }
    l->check.data = l;
    l->prepare.data = l;
    l->fn = fn;
    l->data = data;
    l->running = true;
    l->last_cpu_ns = llag_thread_cpu_ns(); /* the first iteration counts from here */
    l->last_faults = llag_thread_faults();
    uv_check_start(&l->check, on_check);
    uv_unref((uv_handle_t *)&l->check);
    uv_prepare_start(&l->prepare, on_prepare);
    uv_unref((uv_handle_t *)&l->prepare);
    return 0;
}

void llag_stop(struct llag *l)
{
    if (!l || !l->running)
        return;
    l->running = false;
    if (l->trace_ms) {
        timer_delete(l->trace_timer);
        l->trace_ms = 0;
        traced = NULL;
    }
    uv_close((uv_handle_t *)&l->check, NULL);
    uv_close((uv_handle_t *)&l->prepare, NULL);
}

double llag_max_seconds(const struct llag *l)
{
    return (double)l->max_ns / 1e9;
}

uint64_t llag_max_faults(const struct llag *l)
{
    return l->max_faults;
}

double llag_max_io_seconds(const struct llag *l)
{
    return (double)l->max_io_ns / 1e9;
}

/* ---- llag_trace ---------------------------------------------------------------------------------
 */

/* Appends text to line (cap bytes, *len used), as far as it fits. Async-signal-safe. */
static void put_text(char *line, size_t cap, size_t *len, const char *text)
{
    while (*text && *len < cap)
        line[(*len)++] = *text++;
}

/* Appends v in decimal. Async-signal-safe. */
static void put_u64(char *line, size_t cap, size_t *len, uint64_t v)
{
    char digits[24];
    size_t nd = 0;

    do
        digits[nd++] = (char)('0' + v % 10);
    while ((v /= 10) && nd < sizeof(digits));
    while (nd && *len < cap)
        line[(*len)++] = digits[--nd];
}

static void on_trace_signal(int sig)
{
    void *frames[48];
    char line[128];
    struct timespec wall;
    size_t len = 0;
    int n, saved = errno;

    (void)sig;
    /* "loop stall trace: iteration I at U us": only async-signal-safe calls here */
    put_text(line, sizeof(line), &len, "loop stall trace: iteration ");
    put_u64(line, sizeof(line), &len, traced ? traced->iterations : 0);
    put_text(line, sizeof(line), &len, " at ");
    put_u64(line, sizeof(line), &len,
            traced ? llag_busy_ns(traced->last_cpu_ns, llag_thread_cpu_ns()) / 1000 : 0);
    put_text(line, sizeof(line), &len, " us (wall ");
    /* clock_gettime is async-signal-safe: the time of day lets a trace be matched with what
     * another process saw at that moment (bench/stallprobe) */
    if (clock_gettime(CLOCK_REALTIME, &wall) == 0)
        put_u64(line, sizeof(line), &len,
                (uint64_t)wall.tv_sec * 1000u + (uint64_t)wall.tv_nsec / 1000000u);
    put_text(line, sizeof(line), &len, " ms)\n");
    n = backtrace(frames, 48);
    if (write(STDERR_FILENO, line, len) < 0) {
        /* nothing to do: diagnostics only */
    }
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    errno = saved;
}

static void trace_arm(struct llag *l)
{
    struct itimerspec its = {0};

    its.it_value.tv_sec = l->trace_ms / 1000;
    its.it_value.tv_nsec = (long)(l->trace_ms % 1000) * 1000000L;
    its.it_interval.tv_nsec = 2000000L;
    timer_settime(l->trace_timer, 0, &its, NULL);
}

int llag_trace(struct llag *l, unsigned threshold_ms)
{
    struct sigevent sev = {0};
    struct sigaction sa = {0};
    void *warm[1];

    if (!l->running || l->trace_ms || threshold_ms == 0)
        return -EINVAL;
    backtrace(warm, 1); /* loads libgcc's unwinder now, not in the signal handler */
    sa.sa_handler = on_trace_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) < 0)
        return -errno;
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &l->trace_timer) < 0)
        return -errno;
    l->trace_ms = threshold_ms;
    traced = l;
    trace_arm(l);
    return 0;
}
