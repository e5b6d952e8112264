/* nodesim shell: see shell.h.
 *
 * A script is cut into commands of raw words (quotes kept) once; each word is expanded when its
 * command runs, so that $? sees the status of the command before. Commands that wait (cat for its
 * input, sleep for its timer, an interactive sh for its next line) suspend the run; input and
 * wake-ups resume it. */
#include "nodesim/shell.h"

#include "common/strutil.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_INPUT (64u << 10) /* input queued while no command reads it */

enum conn { C_SEQ, C_AND, C_OR };
enum wait { W_NONE, W_CAT, W_SLEEP, W_LINE };

struct cmd {
    char **words; /* raw, quotes kept */
    size_t nwords;
    enum conn conn; /* how it follows the command before */
    int out_fd;     /* where fd 1 goes (1, or 2 with >&2) */
    int err_fd;     /* where fd 2 goes (2, or 1 with 2>&1) */
};

struct ns_shell {
    struct ns_shell_io io;
    char *hostname;
    char **vars;
    size_t nvars;
    bool tty, has_stdin;
    char **argv;
    size_t argc;
    struct cmd *cmds;
    size_t ncmds, pc;
    int status; /* $? */
    bool interactive;
    enum wait wait;
    int cat_out;
    bool input_eof, exited;
    struct sbuf inq; /* input not yet read by a command */
    char line[NS_SHELL_MAX_LINE];
    size_t linelen; /* tty: the line being edited */
    int depth;      /* run() re-entrancy guard */
};

static void run(struct ns_shell *sh);
static void pump(struct ns_shell *sh);

/* ---- output -------------------------------------------------------------------------------- */

static void out(struct ns_shell *sh, int fd, const char *buf, size_t len)
{
    if (sh->exited || len == 0)
        return;
    if (!sh->tty) {
        sh->io.out(sh->io.data, fd, buf, len);
        return;
    }
    /* A terminal: one stream, LF written as CR LF. */
    while (len > 0) {
        const char *nl = memchr(buf, '\n', len);
        size_t n = nl ? (size_t)(nl - buf) : len;

        if (n)
            sh->io.out(sh->io.data, 1, buf, n);
        if (!nl)
            break;
        sh->io.out(sh->io.data, 1, "\r\n", 2);
        buf += n + 1;
        len -= n + 1;
    }
}

static void outs(struct ns_shell *sh, int fd, const char *s)
{
    out(sh, fd, s, strlen(s));
}

__attribute__((format(printf, 3, 4))) static void outf(struct ns_shell *sh, int fd, const char *fmt,
                                                       ...)
{
    char buf[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        out(sh, fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static void finish(struct ns_shell *sh, int code)
{
    if (sh->exited)
        return;
    sh->wait = W_NONE;
    sh->exited = true;
    sh->io.exit(sh->io.data, code);
}

/* ---- scripts ------------------------------------------------------------------------------- */

static void free_cmds(struct ns_shell *sh)
{
    for (size_t i = 0; i < sh->ncmds; i++) {
        for (size_t w = 0; w < sh->cmds[i].nwords; w++)
            x_free(sh->cmds[i].words[w]);
        x_free(sh->cmds[i].words);
    }
    x_free(sh->cmds);
    sh->cmds = NULL;
    sh->ncmds = sh->pc = 0;
}

/* Cuts a script into commands. Returns 0, -EINVAL with a message (unsupported syntax, unmatched
 * quote) or -E2BIG / -ENOMEM. */
static int parse_script(struct ns_shell *sh, const char *s, char *err, size_t errlen)
{
    struct cmd cur = {.out_fd = 1, .err_fd = 2};
    struct sbuf word;
    bool in_word = false;
    int r = 0;

    free_cmds(sh);
    if (strlen(s) > NS_SHELL_MAX_LINE) {
        snprintf(err, errlen, "script too long");
        return -E2BIG;
    }
    sbuf_init(&word, NS_SHELL_MAX_LINE + 1);
    for (const char *p = s;; p++) {
        char c = *p;
        bool end_word = c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == ';' ||
                        (c == '&' && p[1] == '&') || (c == '|' && p[1] == '|');

        if (!end_word && (c == '|' || c == '<' || c == '(' || c == ')' || c == '`' ||
                          (c == '&' && !(in_word && sbuf_len(&word) && p[-1] == '>')) ||
                          (c == '>' && !(p[1] == '&')))) {
            snprintf(err, errlen, "unsupported syntax near '%c'", c);
            r = -EINVAL;
            goto out;
        }
        if (c == '#' && !in_word) {
            while (p[1] && p[1] != '\n')
                p++;
            continue;
        }
        if (!end_word) {
            /* Part of a word: copy quotes and escapes raw, expanded later. */
            if (c == '\'' || c == '"') {
                const char *q = p + 1;

                while (*q && *q != c)
                    q += (c == '"' && *q == '\\' && q[1]) ? 2 : 1;
                if (!*q) {
                    snprintf(err, errlen, "unterminated quoted string");
                    r = -EINVAL;
                    goto out;
                }
                r = sbuf_add(&word, p, (size_t)(q - p + 1));
                p = q;
            } else if (c == '\\' && p[1]) {
                r = sbuf_add(&word, p, 2);
                p++;
            } else {
                r = sbuf_add(&word, p, 1);
            }
            if (r < 0)
                goto out;
            in_word = true;
            continue;
        }
        if (in_word) {
            const char *w = sbuf_str(&word);

            if (strcmp(w, ">&2") == 0 || strcmp(w, "1>&2") == 0) {
                cur.out_fd = 2;
            } else if (strcmp(w, "2>&1") == 0) {
                cur.err_fd = 1;
            } else if (strchr(w, '>')) {
                snprintf(err, errlen, "unsupported redirection '%s'", w);
                r = -EINVAL;
                goto out;
            } else {
                char **nw;

                if (cur.nwords >= NS_SHELL_MAX_WORDS) {
                    snprintf(err, errlen, "too many words");
                    r = -E2BIG;
                    goto out;
                }
                nw = x_reallocarray(cur.words, cur.nwords + 1, sizeof(*nw));
                if (!nw) {
                    r = -ENOMEM;
                    goto out;
                }
                cur.words = nw;
                cur.words[cur.nwords] = sbuf_steal(&word);
                if (!cur.words[cur.nwords]) {
                    r = -ENOMEM;
                    goto out;
                }
                cur.nwords++;
            }
            sbuf_done(&word);
            sbuf_init(&word, NS_SHELL_MAX_LINE + 1);
            in_word = false;
        }
        if (c == ' ' || c == '\t')
            continue;
        /* End of a command: ';', newline, '&&', '||' or the end. */
        if (cur.nwords > 0) {
            struct cmd *nc;

            if (sh->ncmds >= NS_SHELL_MAX_CMDS) {
                snprintf(err, errlen, "too many commands");
                r = -E2BIG;
                goto out;
            }
            nc = x_reallocarray(sh->cmds, sh->ncmds + 1, sizeof(*nc));
            if (!nc) {
                r = -ENOMEM;
                goto out;
            }
            sh->cmds = nc;
            sh->cmds[sh->ncmds++] = cur;
            cur = (struct cmd){.out_fd = 1, .err_fd = 2};
        } else if (c == '&' || c == '|') {
            snprintf(err, errlen, "syntax error near '%c%c'", c, c);
            r = -EINVAL;
            goto out;
        }
        if (c == '\0')
            break;
        if (c == '&' || c == '|') {
            cur.conn = c == '&' ? C_AND : C_OR;
            p++;
        }
    }
out:
    for (size_t w = 0; w < cur.nwords; w++)
        x_free(cur.words[w]);
    x_free(cur.words);
    sbuf_done(&word);
    if (r < 0)
        free_cmds(sh);
    return r;
}

static const char *var(struct ns_shell *sh, const char *name, size_t len)
{
    for (size_t i = 0; i < sh->nvars; i++)
        if (strncmp(sh->vars[i], name, len) == 0 && sh->vars[i][len] == '=')
            return sh->vars[i] + len + 1;
    return "";
}

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

/* Appends $... at *pp (pointing at '$') to b. */
static int expand_var(struct ns_shell *sh, const char **pp, struct sbuf *b)
{
    const char *p = *pp + 1;
    char st[8];

    if (*p == '?') {
        snprintf(st, sizeof(st), "%d", sh->status);
        *pp = p + 1;
        return sbuf_adds(b, st);
    }
    if (*p == '{') {
        const char *e = strchr(p, '}');

        if (e && e > p + 1) {
            *pp = e + 1;
            return sbuf_adds(b, var(sh, p + 1, (size_t)(e - p - 1)));
        }
    } else if (name_char(*p, true)) {
        const char *e = p;

        while (name_char(*e, false))
            e++;
        *pp = e;
        return sbuf_adds(b, var(sh, p, (size_t)(e - p)));
    }
    *pp = p;
    return sbuf_add(b, "$", 1);
}

/* Expands one raw word (quotes, escapes, variables). Caller frees. */
static char *expand(struct ns_shell *sh, const char *w)
{
    struct sbuf b;
    int r = 0;

    sbuf_init(&b, NS_SHELL_MAX_LINE * 4);
    for (const char *p = w; *p && r == 0;) {
        if (*p == '\'') {
            const char *e = strchr(p + 1, '\'');

            r = sbuf_add(&b, p + 1, (size_t)(e - p - 1));
            p = e + 1;
        } else if (*p == '"') {
            p++;
            while (*p && *p != '"' && r == 0) {
                if (*p == '\\' && p[1] && strchr("\"\\$`", p[1])) {
                    r = sbuf_add(&b, p + 1, 1);
                    p += 2;
                } else if (*p == '$') {
                    r = expand_var(sh, &p, &b);
                } else {
                    r = sbuf_add(&b, p++, 1);
                }
            }
            if (*p == '"')
                p++;
        } else if (*p == '\\' && p[1]) {
            r = sbuf_add(&b, p + 1, 1);
            p += 2;
        } else if (*p == '$') {
            r = expand_var(sh, &p, &b);
        } else {
            r = sbuf_add(&b, p++, 1);
        }
    }
    if (r < 0 || sbuf_add(&b, "", 0) < 0) {
        sbuf_done(&b);
        return NULL;
    }
    if (sbuf_len(&b) == 0) {
        sbuf_done(&b);
        return x_strdup("");
    }
    return sbuf_steal(&b);
}

/* ---- builtins ------------------------------------------------------------------------------ */

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

static int parse_status(const char *s, int *ret)
{
    uint64_t v;

    if (parse_u64(s, 1u << 30, &v) < 0)
        return -EINVAL;
    *ret = (int)(v & 255);
    return 0;
}

/* Seconds with an optional fraction ("2", "0.5") into milliseconds, at most a day. */
static int parse_sleep(const char *s, uint64_t *ret)
{
    uint64_t whole = 0, frac = 0, scale = 1000;
    const char *dot = strchr(s, '.');
    char w[16];
    size_t n = dot ? (size_t)(dot - s) : strlen(s);

    if (n == 0 && (!dot || !dot[1]))
        return -EINVAL;
    if (n) {
        if (n >= sizeof(w))
            return -EINVAL;
        memcpy(w, s, n);
        w[n] = '\0';
        if (parse_u64(w, 86400, &whole) < 0)
            return -EINVAL;
    }
    if (dot) {
        for (const char *p = dot + 1; *p; p++) {
            if (*p < '0' || *p > '9')
                return -EINVAL;
            scale /= 10;
            frac += (uint64_t)(*p - '0') * scale;
            if (scale == 0)
                break;
        }
    }
    *ret = whole * 1000 + frac;
    return *ret > 86400000 ? -EINVAL : 0;
}

enum { DONE = 0, WAITING = 1, EXITED = 2 };

/* Runs one command (argv expanded); returns DONE with sh->status set, WAITING or EXITED. */
static int builtin(struct ns_shell *sh, char **argv, size_t argc, int out_fd, int err_fd,
                   bool script)
{
    const char *name = base(argv[0]);

    if (strcmp(name, "echo") == 0) {
        size_t i = 1;
        bool nl = true;

        if (argc > 1 && strcmp(argv[1], "-n") == 0) {
            nl = false;
            i = 2;
        }
        for (; i < argc; i++) {
            outs(sh, out_fd, argv[i]);
            if (i + 1 < argc)
                outs(sh, out_fd, " ");
        }
        if (nl)
            outs(sh, out_fd, "\n");
        sh->status = 0;
        return DONE;
    }
    if (strcmp(name, "cat") == 0) {
        bool from_stdin = argc == 1;

        sh->status = 0;
        for (size_t i = 1; i < argc; i++) {
            if (strcmp(argv[i], "-") == 0) {
                from_stdin = true;
                continue;
            }
            outf(sh, err_fd, "cat: %s: No such file or directory\n", argv[i]);
            sh->status = 1;
        }
        if (!from_stdin)
            return DONE;
        sh->wait = W_CAT;
        sh->cat_out = out_fd;
        return WAITING;
    }
    if (strcmp(name, "hostname") == 0) {
        outf(sh, out_fd, "%s\n", sh->hostname);
        sh->status = 0;
        return DONE;
    }
    if (strcmp(name, "env") == 0 || (strcmp(name, "printenv") == 0 && argc == 1)) {
        for (size_t i = 0; i < sh->nvars; i++)
            outf(sh, out_fd, "%s\n", sh->vars[i]);
        sh->status = 0;
        return DONE;
    }
    if (strcmp(name, "printenv") == 0) {
        sh->status = 0;
        for (size_t i = 1; i < argc; i++) {
            bool found = false;

            for (size_t v = 0; v < sh->nvars; v++) {
                size_t n = strlen(argv[i]);

                if (strncmp(sh->vars[v], argv[i], n) == 0 && sh->vars[v][n] == '=') {
                    outf(sh, out_fd, "%s\n", sh->vars[v] + n + 1);
                    found = true;
                    break;
                }
            }
            if (!found)
                sh->status = 1;
        }
        return DONE;
    }
    if (strcmp(name, "sleep") == 0) {
        uint64_t ms;

        if (argc != 2 || parse_sleep(argv[1], &ms) < 0) {
            outf(sh, err_fd, "sleep: invalid time interval '%s'\n", argc > 1 ? argv[1] : "");
            sh->status = 1;
            return DONE;
        }
        sh->wait = W_SLEEP;
        sh->io.sleep(sh->io.data, ms);
        return WAITING;
    }
    if (strcmp(name, "true") == 0 || strcmp(name, ":") == 0) {
        sh->status = 0;
        return DONE;
    }
    if (strcmp(name, "false") == 0) {
        sh->status = 1;
        return DONE;
    }
    if (strcmp(name, "exit") == 0) {
        int code = sh->status;

        if (argc > 1 && parse_status(argv[1], &code) < 0) {
            outf(sh, err_fd, "sh: exit: Illegal number: %s\n", argv[1]);
            code = 2;
        }
        finish(sh, code);
        return EXITED;
    }
    if (strcmp(name, "sh") == 0 || strcmp(name, "bash") == 0 || strcmp(name, "ash") == 0) {
        outs(sh, err_fd, "sh: nested shells are not supported here\n");
        sh->status = 2;
        return DONE;
    }
    if (script)
        outf(sh, err_fd, "sh: 1: %s: not found\n", argv[0]);
    else
        outf(sh, err_fd,
             "OCI runtime exec failed: exec failed: unable to start container process: exec: "
             "\"%s\": executable file not found in $PATH: unknown\n",
             argv[0]);
    sh->status = 127;
    return DONE;
}

static int run_cmd(struct ns_shell *sh, const struct cmd *c)
{
    char *argv[NS_SHELL_MAX_WORDS];
    size_t argc = 0;
    int r;

    for (size_t i = 0; i < c->nwords; i++) {
        argv[argc] = expand(sh, c->words[i]);
        if (!argv[argc]) {
            outs(sh, 2, "sh: out of memory\n");
            sh->status = 2;
            r = DONE;
            goto out;
        }
        argc++;
    }
    r = builtin(sh, argv, argc, c->out_fd == 2 ? c->err_fd : 1, c->err_fd == 1 ? c->out_fd : 2,
                true);
out:
    for (size_t i = 0; i < argc; i++)
        x_free(argv[i]);
    return r;
}

static void prompt(struct ns_shell *sh)
{
    if (sh->tty)
        outs(sh, 1, "# ");
}

/* Runs the script from pc until a command waits, the shell exits, or the script ends; an
 * interactive shell then takes its next line. */
static void run(struct ns_shell *sh)
{
    if (sh->depth > 0)
        return; /* resumed from inside a run: the outer loop continues */
    sh->depth++;
    while (!sh->exited && sh->wait == W_NONE) {
        const char *q, *nl;
        char err[128], *line;
        struct sbuf rest;

        if (sh->pc < sh->ncmds) {
            const struct cmd *c = &sh->cmds[sh->pc++];

            if ((c->conn == C_AND && sh->status != 0) || (c->conn == C_OR && sh->status == 0))
                continue;
            if (run_cmd(sh, c) == EXITED)
                break;
            continue;
        }
        if (!sh->interactive) {
            finish(sh, sh->status);
            break;
        }
        if (sh->ncmds > 0) { /* a line's commands are over */
            free_cmds(sh);
            prompt(sh);
        }
        q = sbuf_str(&sh->inq);
        nl = memchr(q, '\n', sbuf_len(&sh->inq));
        if (!nl && !(sh->input_eof && sbuf_len(&sh->inq) > 0)) {
            if (sh->input_eof)
                finish(sh, sh->status);
            else
                sh->wait = W_LINE;
            break;
        }
        line = x_strndup(q, nl ? (size_t)(nl - q) : sbuf_len(&sh->inq));
        sbuf_init(&rest, MAX_INPUT);
        if (nl && (size_t)(nl - q + 1) < sbuf_len(&sh->inq))
            (void)sbuf_add(&rest, nl + 1, sbuf_len(&sh->inq) - (size_t)(nl - q + 1));
        sbuf_done(&sh->inq);
        sh->inq = rest;
        if (!line) {
            finish(sh, 2);
            break;
        }
        if (parse_script(sh, line, err, sizeof(err)) < 0) {
            outf(sh, 2, "sh: %s\n", err);
            sh->status = 2;
        }
        x_free(line);
        if (sh->ncmds == 0)
            prompt(sh); /* an empty line, or one that did not parse */
    }
    sh->depth--;
    /* A command now reading input that is already there (or at its end). */
    if (!sh->exited && sh->wait == W_CAT && (sbuf_len(&sh->inq) > 0 || sh->input_eof))
        pump(sh);
}

/* ---- input --------------------------------------------------------------------------------- */

/* Gives queued input to the command that reads it. */
static void pump(struct ns_shell *sh)
{
    if (sh->exited)
        return;
    if (sh->wait == W_CAT) {
        if (sbuf_len(&sh->inq)) {
            out(sh, sh->cat_out, sbuf_str(&sh->inq), sbuf_len(&sh->inq));
            sbuf_done(&sh->inq);
            sbuf_init(&sh->inq, MAX_INPUT);
        }
        if (sh->input_eof) {
            sh->wait = W_NONE;
            run(sh);
        }
        return;
    }
    if (sh->wait == W_LINE &&
        (memchr(sbuf_str(&sh->inq), '\n', sbuf_len(&sh->inq)) || sh->input_eof)) {
        sh->wait = W_NONE;
        run(sh);
    }
}

static void queue(struct ns_shell *sh, const char *buf, size_t len)
{
    if (sh->wait == W_CAT && sbuf_len(&sh->inq) == 0) {
        out(sh, sh->cat_out, buf, len); /* the common case: straight through */
        return;
    }
    if (sbuf_add(&sh->inq, buf, len) < 0) {
        /* Over MAX_INPUT while nothing reads: the caller should have paused. Dropped. */
        sbuf_init(&sh->inq, MAX_INPUT);
    }
}

static void echo(struct ns_shell *sh, const char *s, size_t n)
{
    if (!sh->exited)
        sh->io.out(sh->io.data, 1, s, n);
}

/* The terminal's line discipline (canonical mode, echo, icrnl, onlcr). */
static void tty_input(struct ns_shell *sh, const char *buf, size_t len)
{
    for (size_t i = 0; i < len && !sh->exited && !sh->input_eof; i++) {
        char c = buf[i];

        if (c == 0x03) { /* ^C */
            echo(sh, "^C\r\n", 4);
            finish(sh, 130);
            return;
        }
        if (c == 0x04) { /* ^D */
            if (sh->linelen == 0) {
                sh->input_eof = true;
            } else {
                queue(sh, sh->line, sh->linelen);
                sh->linelen = 0;
            }
            pump(sh);
            continue;
        }
        if (c == 0x7f || c == 0x08) {
            if (sh->linelen > 0) {
                sh->linelen--;
                echo(sh, "\b \b", 3);
            }
            continue;
        }
        if (c == '\r' || c == '\n') {
            echo(sh, "\r\n", 2);
            if (sh->linelen < sizeof(sh->line))
                sh->line[sh->linelen++] = '\n';
            queue(sh, sh->line, sh->linelen);
            sh->linelen = 0;
            pump(sh);
            continue;
        }
        if (sh->linelen + 1 >= sizeof(sh->line)) {
            queue(sh, sh->line, sh->linelen);
            sh->linelen = 0;
        }
        sh->line[sh->linelen++] = c;
        echo(sh, &c, 1);
    }
}

void ns_shell_input(struct ns_shell *sh, const char *buf, size_t len)
{
    if (sh->exited || sh->input_eof)
        return;
    if (len == 0) {
        if (sh->tty && sh->linelen) {
            queue(sh, sh->line, sh->linelen);
            sh->linelen = 0;
        }
        sh->input_eof = true;
        pump(sh);
        return;
    }
    if (sh->tty) {
        tty_input(sh, buf, len);
        return;
    }
    queue(sh, buf, len);
    pump(sh);
}

void ns_shell_wake(struct ns_shell *sh)
{
    if (sh->exited || sh->wait != W_SLEEP)
        return;
    sh->wait = W_NONE;
    sh->status = 0;
    run(sh);
    pump(sh);
}

bool ns_shell_exited(const struct ns_shell *sh)
{
    return sh->exited;
}

/* ---- life cycle ---------------------------------------------------------------------------- */

static char **dup_strv(const char *const *v, size_t n)
{
    char **d = x_calloc(n ? n : 1, sizeof(*d));

    if (!d)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        d[i] = x_strdup(v[i]);
        if (!d[i]) {
            for (size_t j = 0; j < i; j++)
                x_free(d[j]);
            x_free(d);
            return NULL;
        }
    }
    return d;
}

int ns_shell_new(const char *const *argv, size_t argc, const struct ns_shell_env *env,
                 const struct ns_shell_io *io, struct ns_shell **ret)
{
    struct ns_shell *sh;

    if (!argv || argc == 0 || !env || !io || !io->out || !io->exit || !io->sleep)
        return -EINVAL;
    sh = x_calloc(1, sizeof(*sh));
    if (!sh)
        return -ENOMEM;
    sh->io = *io;
    sh->tty = env->tty;
    sh->has_stdin = env->has_stdin;
    sh->input_eof = !env->has_stdin;
    sbuf_init(&sh->inq, MAX_INPUT);
    sh->hostname = x_strdup(env->hostname ? env->hostname : "localhost");
    sh->nvars = env->nvars > NS_SHELL_MAX_ENV ? NS_SHELL_MAX_ENV : env->nvars;
    sh->vars = dup_strv(env->vars, sh->nvars);
    sh->argv = dup_strv(argv, argc);
    sh->argc = argc;
    if (!sh->hostname || !sh->vars || !sh->argv) {
        sh->argc = sh->argv ? argc : 0;
        if (!sh->vars)
            sh->nvars = 0;
        ns_shell_free(sh);
        return -ENOMEM;
    }
    *ret = sh;
    return 0;
}

void ns_shell_start(struct ns_shell *sh)
{
    const char *name = base(sh->argv[0]);
    char err[128];

    if (strcmp(name, "sh") == 0 || strcmp(name, "bash") == 0 || strcmp(name, "ash") == 0) {
        if (sh->argc >= 2 && strcmp(sh->argv[1], "-c") == 0) {
            if (sh->argc < 3) {
                outs(sh, 2, "sh: -c: option requires an argument\n");
                finish(sh, 2);
                return;
            }
            if (parse_script(sh, sh->argv[2], err, sizeof(err)) < 0) {
                outf(sh, 2, "sh: %s\n", err);
                finish(sh, 2);
                return;
            }
            run(sh);
            return;
        }
        if (sh->argc >= 2) {
            outf(sh, 2, "sh: cannot open %s: No such file\n", sh->argv[1]);
            finish(sh, 2);
            return;
        }
        sh->interactive = true;
        prompt(sh);
        run(sh);
        return;
    }
    /* One command, run directly (no shell syntax, no expansion). */
    switch (builtin(sh, sh->argv, sh->argc, 1, 2, false)) {
    case DONE:
        finish(sh, sh->status);
        break;
    case WAITING:
        pump(sh); /* cat without stdin ends at once */
        break;
    default:
        break;
    }
}

void ns_shell_free(struct ns_shell *sh)
{
    if (!sh)
        return;
    free_cmds(sh);
    for (size_t i = 0; i < sh->argc; i++)
        x_free(sh->argv[i]);
    x_free(sh->argv);
    for (size_t i = 0; i < sh->nvars; i++)
        x_free(sh->vars[i]);
    x_free(sh->vars);
    x_free(sh->hostname);
    sbuf_done(&sh->inq);
    x_free(sh);
}
