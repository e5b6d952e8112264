/* stallprobe: a control for the loop-stall figures of bench/agent-startup.sh.
 *
 *   stallprobe [--unit-us U] [--sleep-us S]
 *
 * Repeats a fixed piece of work (pseudo-random reads and writes over a 16 MiB array and a ring of
 * small allocations, the kind of work a decoder does), sized at start so that one piece takes
 * about U microseconds of CPU (100), then sleeps S microseconds (2000): a few percent of a core,
 * like an event loop's callbacks. Each piece does the same work, so a piece that took much longer
 * than the median was not slowed by its own code but by the machine (a virtual CPU held by its
 * host, memory the host had to bring back), which the thread's CPU clock counts as its own time.
 * Run beside the agent during a sync, it tells a stall of the agent's loop from one of the machine.
 *
 * On SIGTERM or SIGINT it prints one line and exits:
 *   stallprobe units=N median_us=M p99_us=P max_ms=X max_wall_ms=W over_10ms=K
 * max_ms is the longest piece in the thread's CPU time (the measure of cliqo's busiest iteration),
 * max_wall_ms the longest in wall time (which also holds time the machine gave to others). Then a
 * line for each of the first 64 pieces over 10 ms of CPU, with the time of day it ended:
 *   stallprobe stall cpu_ms=X wall_ms=W at_ms=T    (T in epoch milliseconds) */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strutil.h"

#define ARENA_WORDS ((size_t)2 << 20) /* 16 MiB of uint64_t */
#define RING        256
#define MAX_UNITS   ((size_t)1 << 20)
#define MAX_STALLS  64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec t;

    clock_gettime(id, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

struct probe {
    uint64_t *arena;
    void *ring[RING];
    uint64_t seed, sum;
    unsigned next;
};

/* One piece of work: steps reads and writes at random places, one small allocation in eight. */
static void work(struct probe *p, uint64_t steps)
{
    for (uint64_t i = 0; i < steps; i++) {
        uint64_t r = xorshift(&p->seed);
        uint64_t *w = &p->arena[r % ARENA_WORDS];
        p->sum += *w;
        *w = r;
        if ((i & 7) == 0) {
            unsigned k = p->next++ % RING;
            free(p->ring[k]);
            p->ring[k] = malloc(16 + (r >> 40) % 2048);
            if (p->ring[k])
                memset(p->ring[k], (int)r, 16);
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int parse_us(const char *v, uint64_t *out)
{
    int r = parse_u64(v, 1000000, out);

    return r < 0 ? r : *out == 0 ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
    uint64_t unit_us = 100, sleep_us = 2000, steps = 1000, *cpu = NULL, max_wall = 0, over = 0;
    size_t n = 0, nstalls = 0;
    struct {
        uint64_t cpu, wall, at;
    } stalls[MAX_STALLS];
    struct probe p = {.seed = 88172645463325252ull};
    struct sigaction sa = {.sa_handler = on_signal};
    int rc = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: stallprobe [--unit-us U] [--sleep-us S]\n"
                   "Repeats one fixed piece of work (about U us of CPU, 100) every S us (2000) "
                   "and,\non SIGTERM, prints how long the pieces took: the longest against the "
                   "median\nshows what the machine adds to a thread's CPU time.\n");
            return 0;
        }
        if (i + 1 >= argc ||
            (strcmp(argv[i], "--unit-us") == 0    ? parse_us(argv[i + 1], &unit_us)
             : strcmp(argv[i], "--sleep-us") == 0 ? parse_us(argv[i + 1], &sleep_us)
                                                  : -EINVAL) < 0) {
            fprintf(stderr, "stallprobe: bad option %s (see --help)\n", argv[i]);
            return 2;
        }
        i++;
    }
    p.arena = calloc(ARENA_WORDS, sizeof(*p.arena));
    cpu = calloc(MAX_UNITS, sizeof(*cpu));
    if (!p.arena || !cpu) {
        fprintf(stderr, "stallprobe: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < ARENA_WORDS; i++) /* every page touched before measuring */
        p.arena[i] = i;
    /* Warm up (the ring's allocations, the caches), then size the piece: double the steps until
     * one piece takes unit_us, the median of five. */
    for (uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
         clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < 200 * 1000000u;)
        work(&p, 10000);
    for (;;) {
        uint64_t d[5];
        for (int k = 0; k < 5; k++) {
            uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            work(&p, steps);
            d[k] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
        }
        qsort(d, 5, sizeof(d[0]), cmp_u64);
        if (d[2] >= unit_us * 1000 || steps > ((uint64_t)1 << 40))
            break;
        steps *= 2;
    }
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    while (!stop && n < MAX_UNITS) {
        struct timespec pause = {.tv_sec = (time_t)(sleep_us / 1000000),
                                 .tv_nsec = (long)(sleep_us % 1000000) * 1000};
        uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        work(&p, steps);
        uint64_t c = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0, w = clock_ns(CLOCK_MONOTONIC) - w0;
        cpu[n++] = c;
        max_wall = w > max_wall ? w : max_wall;
        if (c > 10 * 1000000u) {
            over++;
            if (nstalls < MAX_STALLS) {
                stalls[nstalls].cpu = c;
                stalls[nstalls].wall = w;
                stalls[nstalls++].at = clock_ns(CLOCK_REALTIME) / 1000000u;
            }
        }
        nanosleep(&pause, NULL);
    }
    if (n == 0) {
        fprintf(stderr, "stallprobe: stopped before the first piece\n");
        goto out;
    }
    qsort(cpu, n, sizeof(*cpu), cmp_u64);
    printf("stallprobe units=%zu median_us=%.0f p99_us=%.0f max_ms=%.1f max_wall_ms=%.1f "
           "over_10ms=%llu\n",
           n, cpu[n / 2] / 1e3, cpu[n - 1 - n / 100] / 1e3, cpu[n - 1] / 1e6, max_wall / 1e6,
           (unsigned long long)over);
    for (size_t i = 0; i < nstalls; i++)
        printf("stallprobe stall cpu_ms=%.1f wall_ms=%.1f at_ms=%llu\n", stalls[i].cpu / 1e6,
               stalls[i].wall / 1e6, (unsigned long long)stalls[i].at);
    fflush(stdout);
    rc = (int)(p.sum & 0); /* the work's result is used, so it is not optimised away */
out:
    for (unsigned k = 0; k < RING; k++)
        free(p.ring[k]);
    free(p.arena);
    free(cpu);
    return rc;
}
