#include "cli/cli.h"
#include "cli/kube.h"

#include <stdio.h>
#include <string.h>

#ifndef CLIQO_GIT_REVISION
#define CLIQO_GIT_REVISION "unknown"
#endif

int cmd_version_main(int argc, char **argv)
{
    bool json = false, help = false;
    char err[256];
    /* clang-format off */
    const struct opts_def defs[] = {
        CLI_OPT_OUTPUT(&json, "print a JSON object"),
        {.name = "help", .short_name = 'h', .kind = OPTS_FLAG, .flags = OPTS_STOP, .dest = &help,
         .help = "print this help"},
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {
        .defs = defs,
        .usage = "Usage: cliqoctl version [-o json]\n\nPrint the cliqoctl version and git "
                 "revision.\n\nOptions:\n"};

    if (opts_parse(&opts, argc, argv, err, sizeof(err)) < 0)
        return cli_fail("version: %s", err);
    if (help) {
        opts_print_help(&opts, stdout);
        return 0;
    }
    if (json)
        printf("{\"version\": \"%s\", \"gitRevision\": \"%s\"}\n", CLIQO_VERSION,
               CLIQO_GIT_REVISION);
    else
        printf("cliqoctl %s (%s)\n", CLIQO_VERSION, CLIQO_GIT_REVISION);
    return 0;
}
