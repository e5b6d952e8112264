/* cliqoctl dev: the local multi-cluster environment. The environment manager is the cliqo-devenv
 * tool (a shell program: it starts and supervises other programs and openssl, which is what shells
 * are for); this subcommand finds it and hands over argv unchanged. */
#include "cli/cli.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEVENV_NAME "cliqo-devenv"

/* Writes the path of cliqo-devenv into buf. Order: $CLIQO_DEVENV, the installed libexec directory
 * next to this executable, then the source tree this binary was built from. */
static int find_devenv(char *buf, size_t size)
{
    char exe[PATH_MAX];
    const char *env = getenv("CLIQO_DEVENV");
    ssize_t n;

    if (env && *env) {
        if (access(env, X_OK) != 0)
            return -errno;
        if ((size_t)snprintf(buf, size, "%s", env) >= size)
            return -ENAMETOOLONG;
        return 0;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *dir = dirname(exe);
        if ((size_t)snprintf(buf, size, "%s/../libexec/cliqo/" DEVENV_NAME, dir) < size &&
            access(buf, X_OK) == 0)
            return 0;
    }
#ifdef CLIQO_SOURCE_DIR
    if ((size_t)snprintf(buf, size, "%s/src/devenv/" DEVENV_NAME, CLIQO_SOURCE_DIR) < size &&
        access(buf, X_OK) == 0)
        return 0;
#endif
    return -ENOENT;
}

int cmd_dev_main(int argc, char **argv)
{
    char path[PATH_MAX];
    char **args;
    int r;

    r = find_devenv(path, sizeof(path));
    if (r < 0)
        return cli_fail("dev: cannot find %s (%s); set CLIQO_DEVENV to its path", DEVENV_NAME,
                        strerror(-r));
    args = calloc((size_t)argc + 1, sizeof(*args));
    if (!args)
        return cli_fail("dev: out of memory");
    args[0] = path;
    for (int i = 1; i < argc; i++)
        args[i] = argv[i];
    setenv("CLIQO_DEVENV_PROG", "cliqoctl dev", 1);
    execv(path, args);
    r = errno;
    free(args);
    return cli_fail("dev: cannot run %s: %s", path, strerror(r));
}
