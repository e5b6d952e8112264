/* brk config: the command line of cliqo-broker (docs/broker.md).
 *
 * The broker runs the agent's skeleton (leader election, health, metrics, informers, queues), so
 * the daemon flags it shares with cliqo-agent (--kubeconfig, --namespace, --leader-elect, the
 * lease's timings, --log-level) are checked by agent_config_parse; its own flags are checked here.
 * The API listener is the skeleton's HTTP server: --api-addr is cliqo-agent's --http-addr, and
 * /metrics is served on it too. Defaults that differ from the agent's: the Lease cliqo-broker,
 * the API on 127.0.0.1:8000. */
#ifndef CLIQO_BROKER_CONFIG_H
#define CLIQO_BROKER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/config.h"

#define BRK_DEFAULT_API_ADDR     "127.0.0.1:8000"
#define BRK_DEFAULT_TOKEN_SECRET "cliqo-broker-token"
#define BRK_MAX_FORWARD          24  /* agent flags on one command line */
#define BRK_FORWARD_MAX          600 /* bytes of one of them, "--name=value" */

struct brk_config {
    bool catalog, orchestrator, aggregator; /* --with-*: at least one */
    const char *api_addr;
    bool api_loopback;        /* api_addr is a loopback address */
    const char *token_secret; /* Secret in the namespace, key "token" */
    const char *token_file;   /* else: a file (a mounted Secret), re-read every probe interval */
    bool require_token;       /* mutating endpoints need the bearer token */
    bool public_catalog;      /* reads need no token even beyond loopback */
    bool default_enabled;     /* a provider without a toggle is enabled */
    uint64_t probe_interval_ms, probe_timeout_ms;
    uint32_t rate, burst; /* requests per second and burst per client address; 0: no limit */
    uint32_t global_rate; /* every client together; 0: no limit */
    bool leader_elect;    /* --leader-elect, handed on to the agent's settings */
    bool help, version;
    /* The flags handed to agent_config_parse, and its result (api_addr as --http-addr). */
    char def_buf[4][BRK_FORWARD_MAX];
    char fwd_buf[BRK_MAX_FORWARD][BRK_FORWARD_MAX];
    char *fwd[1 + 4 + BRK_MAX_FORWARD + 1]; /* the program, def_buf, fwd_buf, NULL */
    int nfwd;
    struct agent_config agent;
};

/* Parses argv into cfg (strings borrowed from argv). Returns 0 or -EINVAL with one line in err. */
int brk_config_parse(int argc, char **argv, struct brk_config *cfg, char *err, size_t errlen);
/* The --help text. */
void brk_usage(FILE *f);

#endif
