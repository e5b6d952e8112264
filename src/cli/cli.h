/* cli: the cliqoctl command table and the helpers its subcommands share.
 *
 * Each subcommand is `int cmd_<name>_main(int argc, char **argv)` in its own file, with argv[0] set
 * to the subcommand name. It returns the process exit status: 0 on success, 1 on failure (after
 * printing a one-line reason to stderr), 2 on misuse. `--help` prints usage to stdout and returns
 * 0. */
#ifndef CLIQO_CLI_H
#define CLIQO_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strutil.h"

struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *description;
};

int cmd_install_main(int argc, char **argv);
int cmd_uninstall_main(int argc, char **argv);
int cmd_generate_add_command_main(int argc, char **argv);
int cmd_add_main(int argc, char **argv);
int cmd_unpeer_main(int argc, char **argv);
int cmd_status_main(int argc, char **argv);
int cmd_accept_main(int argc, char **argv);
int cmd_refuse_main(int argc, char **argv);
int cmd_discovered_main(int argc, char **argv);
int cmd_offload_main(int argc, char **argv);
int cmd_unoffload_main(int argc, char **argv);
int cmd_dev_main(int argc, char **argv);
int cmd_version_main(int argc, char **argv);
int cmd_broker_main(int argc, char **argv);

/* True when argv[1..] asks for help (-h or --help). */
bool cli_wants_help(int argc, char **argv);

/* Prints "cliqoctl: <message>" to stderr and returns 1. */
__attribute__((format(printf, 1, 2))) int cli_fail(const char *fmt, ...);

/* A bounded sink for an HTTP answer's body (libcurl's CURLOPT_WRITEFUNCTION with CURLOPT_WRITEDATA
 * a struct cli_body whose buffer was set up with sbuf_init(&b.body, max)): past max it sets too_big
 * and aborts the transfer. */
struct cli_body {
    struct sbuf body;
    bool too_big;
};
size_t cli_body_write(char *p, size_t size, size_t n, void *data);

#endif
