/* cliqoctl: the command-line tool of cliqo. Dispatches to one subcommand per file. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct cli_command commands[] = {
    {"install", cmd_install_main, "Install cliqo into a cluster (CRDs, RBAC, identity)"},
    {"uninstall", cmd_uninstall_main, "Remove cliqo and everything it created from a cluster"},
    {"generate-add-command", cmd_generate_add_command_main,
     "Print the 'cliqoctl add' command that peers another cluster with this one"},
    {"add", cmd_add_main, "Peer with a foreign cluster (verifies its auth endpoint first)"},
    {"unpeer", cmd_unpeer_main, "End the peering with a foreign cluster"},
    {"status", cmd_status_main, "Show this cluster's identity, its foreign clusters and sharing"},
    {"accept", cmd_accept_main, "Accept a provider's Advertisement (acceptPolicy Manual)"},
    {"refuse", cmd_refuse_main, "Refuse a provider's Advertisement (its virtual node goes)"},
    {"offload", cmd_offload_main,
     "Offload a namespace to peer clusters (its NamespaceOffloading: strategy, selector)"},
    {"unoffload", cmd_unoffload_main, "Stop offloading a namespace (providers release it)"},
    {"discovered", cmd_discovered_main,
     "List the clusters discovery found (LAN, WAN), how, since when, and their trust"},
    {"dev", cmd_dev_main,
     "Local multi-cluster environment for development and tests (up|down|status|env)"},
    {"broker", cmd_broker_main, "Talk to cliqo-broker's API: status, toggle, policy"},
    {"version", cmd_version_main, "Print the cliqoctl version"},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: cliqoctl <command> [options]\n\n"
               "cliqo shares resources between Kubernetes clusters.\n\nCommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-21s %s\n", commands[i].name, commands[i].description);
    fprintf(f, "\nRun 'cliqoctl <command> --help' for the options of a command.\n");
}

bool cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    return false;
}

size_t cli_body_write(char *p, size_t size, size_t n, void *data)
{
    struct cli_body *b = data;

    if (sbuf_add(&b->body, p, size * n) < 0) {
        b->too_big = true;
        return 0; /* aborts the transfer */
    }
    return size * n;
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;

    fputs("cliqoctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version_main(1, (char *[]){"version", NULL});
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "cliqoctl: unknown command '%s' (run 'cliqoctl --help' for the list)\n",
            argv[1]);
    return 2;
}
