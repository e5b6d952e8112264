/* nodesim shell: the commands `kubectl exec` can run in a simulated container, as a tiny shell
 * would (docs/nodesim.md): echo [-n], cat (stdin to stdout; files do not exist), hostname (the pod
 * name), env, printenv [NAME...], sleep N, true, false, exit [N], and sh: `sh -c SCRIPT` runs a
 * script, a plain `sh` reads commands from stdin (prompt "# " on a terminal). Scripts are lists of
 * commands separated by ';', '&&', '||' or newlines; words take '...' and "..." quotes, backslash
 * escapes, $NAME, ${NAME} and $? expansions; `>&2`, `1>&2` and `2>&1` redirect. Anything else is
 * not found: exit 127 with a message on stderr (pipes and other redirections: exit 2).
 *
 * On a terminal (tty) the shell also plays the line discipline: input is echoed, CR becomes LF,
 * erase (DEL or BS) works on the current line, lines reach the command when complete, ^D on an
 * empty line is end of input, ^C interrupts (exit 130), and output LF becomes CR LF.
 *
 * Pure and event-driven: no I/O, no clock. The caller feeds input, calls ns_shell_wake when a sleep
 * it was asked for is over, and receives output and the exit status through struct ns_shell_io.
 * Bounded: a script or an input line is at most NS_SHELL_MAX_LINE bytes, at most NS_SHELL_MAX_WORDS
 * words per command and NS_SHELL_MAX_CMDS commands per script. */
#ifndef CLIQO_NODESIM_SHELL_H
#define CLIQO_NODESIM_SHELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NS_SHELL_MAX_LINE  8192
#define NS_SHELL_MAX_WORDS 256
#define NS_SHELL_MAX_CMDS  256
#define NS_SHELL_MAX_ENV   128

struct ns_shell;

struct ns_shell_io {
    /* Output on fd 1 or 2. */
    void (*out)(void *data, int fd, const char *buf, size_t len);
    /* Wake me (ns_shell_wake) after ms milliseconds. */
    void (*sleep)(void *data, uint64_t ms);
    /* The command is over; nothing more comes from the shell. */
    void (*exit)(void *data, int code);
    void *data;
};

struct ns_shell_env {
    const char *hostname;
    const char *const *vars; /* "NAME=value" */
    size_t nvars;
    bool tty;
    bool has_stdin; /* without stdin, input is at its end from the start */
};

/* Copies argv and env. Returns 0, -EINVAL (no argv) or -ENOMEM. */
int ns_shell_new(const char *const *argv, size_t argc, const struct ns_shell_env *env,
                 const struct ns_shell_io *io, struct ns_shell **ret);
/* Runs until it needs input, a wake-up, or has exited. */
void ns_shell_start(struct ns_shell *sh);
/* Input from the client; len 0 is the end of input. */
void ns_shell_input(struct ns_shell *sh, const char *buf, size_t len);
void ns_shell_wake(struct ns_shell *sh);
bool ns_shell_exited(const struct ns_shell *sh);
void ns_shell_free(struct ns_shell *sh);

#endif
