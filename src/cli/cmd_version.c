#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#ifndef CLIQO_GIT_REVISION
#define CLIQO_GIT_REVISION "unknown"
#endif

int cmd_version_main(int argc, char **argv)
{
    bool json = false;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("Usage: cliqoctl version [-o json]\n\nPrint the cliqoctl version and git "
                   "revision.\n");
            return 0;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc && strcmp(argv[i + 1], "json") == 0) {
            json = true;
            i++;
        } else {
            return cli_fail("version: unknown argument '%s' (try --help)", argv[i]);
        }
    }
    if (json)
        printf("{\"version\": \"%s\", \"gitRevision\": \"%s\"}\n", CLIQO_VERSION,
               CLIQO_GIT_REVISION);
    else
        printf("cliqoctl %s (%s)\n", CLIQO_VERSION, CLIQO_GIT_REVISION);
    return 0;
}
