/* cliqo-e2e-https: one HTTPS request with a client certificate, for the e2e tests' reads and
 * writes of their clusters' API servers (tests/e2e/lib.sh, kcurl). It takes the subset of curl's
 * options that kcurl passes and answers as curl does for them. It exists because the suite makes
 * thousands of these requests, and curl's start-up (33 shared libraries) costs about twice the CPU
 * of this program's, linked with OpenSSL alone.
 *
 *   cliqo-e2e-https [-s] [-S] [-f] [-X METHOD] [-H 'Name: value']... [--data-binary BODY]
 *                   [-w FORMAT] [--max-time SECONDS] --cacert FILE --cert FILE --key FILE URL
 *
 * URL is https://HOST[:PORT]/PATH. The server's certificate must chain to --cacert and name HOST
 * (an IP address or a DNS name), as curl checks it. -f: an answer of 400 or more prints nothing
 * and exits 22 ("The requested URL returned error: CODE" on stderr). -w: printed after the body;
 * \n, \t, \\ and %{http_code} are understood, anything else is refused. --data-binary: the body
 * as given (no @file), POST unless -X says otherwise, Content-Type
 * application/x-www-form-urlencoded unless a -H names one. Exit status as curl's: 0, 2 bad usage,
 * 7 no connection, 22 (-f), 28 the time ran out, 35 the TLS handshake failed, 56 the answer could
 * not be read, 58 the client certificate or key could not be used, 77 the CA file could not be
 * read. Errors go to stderr (-s and -S change nothing).
 *
 * One difference: the API server indents its JSON for a user agent that starts with "curl", so
 * curl's answers are indented and this program's are compact (the tests parse them with jq).
 *
 * The answer is read whole (at most E2E_HTTPS_MAX_ANSWER bytes, its head at most 64 KiB), framed
 * by Content-Length, chunked, or by the end of the connection (the request says Connection: close).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define E2E_HTTPS_MAX_HEADERS 32
#define E2E_HTTPS_MAX_HEAD    (64 * 1024)
#define E2E_HTTPS_MAX_ANSWER  (512L * 1024 * 1024)

enum {
    EH_OK = 0,
    EH_USAGE = 2,
    EH_CONNECT = 7,
    EH_HTTP_ERROR = 22,
    EH_TIMEOUT = 28,
    EH_TLS = 35,
    EH_RECV = 56,
    EH_CERT = 58,
    EH_CACERT = 77,
};

struct eh_opts {
    const char *method;
    const char *headers[E2E_HTTPS_MAX_HEADERS];
    int nheaders;
    const char *data;
    const char *wfmt;
    const char *cacert, *cert, *key;
    const char *url;
    bool fail;
    long max_time;
};

struct eh_buf {
    char *p;
    size_t len, cap;
};

static void eh_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void eh_err(const char *fmt, ...)
{
    va_list ap;
    fputs("cliqo-e2e-https: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void eh_on_alarm(int sig)
{
    static const char msg[] = "cliqo-e2e-https: operation timed out (--max-time)\n";
    (void)sig;
    /* only async-signal-safe calls here */
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to do */
    }
    _exit(EH_TIMEOUT);
}

static int eh_buf_add(struct eh_buf *b, const char *p, size_t n)
{
    if (n > (size_t)E2E_HTTPS_MAX_ANSWER - b->len)
        return -EFBIG;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        while (cap < b->len + n)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return -ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static int eh_parse_args(int argc, char **argv, struct eh_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-s") || !strcmp(a, "-S") || !strcmp(a, "-sS"))
            continue;
        if (!strcmp(a, "-f")) {
            o->fail = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return 1;
        if (a[0] != '-') {
            if (o->url) {
                eh_err("two URLs: %s and %s", o->url, a);
                return -EINVAL;
            }
            o->url = a;
            continue;
        }
        if (!v) {
            eh_err("%s needs a value", a);
            return -EINVAL;
        }
        i++;
        if (!strcmp(a, "-X")) {
            o->method = v;
        } else if (!strcmp(a, "-H")) {
            if (o->nheaders == E2E_HTTPS_MAX_HEADERS) {
                eh_err("more than %d headers", E2E_HTTPS_MAX_HEADERS);
                return -E2BIG;
            }
            if (!strchr(v, ':') || strpbrk(v, "\r\n")) {
                eh_err("bad header %s (Name: value, one line)", v);
                return -EINVAL;
            }
            o->headers[o->nheaders++] = v;
        } else if (!strcmp(a, "--data-binary")) {
            o->data = v;
        } else if (!strcmp(a, "-w")) {
            for (const char *p = strstr(v, "%{"); p; p = strstr(p + 2, "%{"))
                if (strncmp(p, "%{http_code}", 12)) {
                    eh_err("-w: only %%{http_code} is understood: %s", v);
                    return -EINVAL;
                }
            o->wfmt = v;
        } else if (!strcmp(a, "--max-time")) {
            char *end;
            o->max_time = strtol(v, &end, 10);
            if (*end || o->max_time <= 0 || o->max_time > 86400) {
                eh_err("--max-time wants whole seconds, 1 to 86400: %s", v);
                return -EINVAL;
            }
        } else if (!strcmp(a, "--cacert")) {
            o->cacert = v;
        } else if (!strcmp(a, "--cert")) {
            o->cert = v;
        } else if (!strcmp(a, "--key")) {
            o->key = v;
        } else {
            eh_err("unknown option %s (see --help)", a);
            return -EINVAL;
        }
    }
    if (!o->url || !o->cacert || !o->cert || !o->key) {
        eh_err("a URL, --cacert, --cert and --key are required (see --help)");
        return -EINVAL;
    }
    if (o->method && (!*o->method || strpbrk(o->method, " \r\n"))) {
        eh_err("bad method %s", o->method);
        return -EINVAL;
    }
    return 0;
}

/* https://HOST[:PORT]/PATH, HOST possibly [IPv6]; the parts into host, port and *path (in url). */
static int eh_split_url(const char *url, char *host, size_t hostsz, char *port, size_t portsz,
                        const char **path)
{
    const char *p, *h, *hend, *slash;
    if (strncmp(url, "https://", 8))
        return -EINVAL;
    h = url + 8;
    slash = strchr(h, '/');
    *path = slash ? slash : "/";
    if (!slash)
        slash = h + strlen(h);
    if (*h == '[') {
        hend = memchr(h, ']', (size_t)(slash - h));
        if (!hend)
            return -EINVAL;
        h++;
        p = hend + 1;
    } else {
        hend = memchr(h, ':', (size_t)(slash - h));
        if (!hend)
            hend = slash;
        p = hend;
    }
    if (hend == h || (size_t)(hend - h) >= hostsz)
        return -EINVAL;
    memcpy(host, h, (size_t)(hend - h));
    host[hend - h] = '\0';
    if (p < slash && *p == ':') {
        p++;
        if (slash == p || (size_t)(slash - p) >= portsz ||
            strspn(p, "0123456789") < (size_t)(slash - p))
            return -EINVAL;
        memcpy(port, p, (size_t)(slash - p));
        port[slash - p] = '\0';
    } else if (p == slash) {
        snprintf(port, portsz, "443");
    } else {
        return -EINVAL;
    }
    if (strpbrk(*path, " \r\n"))
        return -EINVAL;
    return 0;
}

static int eh_connect(const char *host, const char *port)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *ai;
    int fd = -1, rc = getaddrinfo(host, port, &hints, &res);
    if (rc) {
        eh_err("cannot resolve %s: %s", host, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
            break;
        rc = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        eh_err("failed to connect to %s port %s: %s", host, port, strerror(rc ? rc : ECONNREFUSED));
    return fd;
}

static void eh_tls_err(const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    eh_err("%s%s%s", what, e ? ": " : "", buf);
}

static SSL_CTX *eh_tls_ctx(const struct eh_opts *o, int *status)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        eh_tls_err("cannot make a TLS context");
        *status = EH_TLS;
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_load_verify_locations(ctx, o->cacert, NULL) != 1) {
        eh_tls_err("cannot read the CA file");
        *status = EH_CACERT;
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, o->key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        eh_tls_err("cannot use the client certificate and key");
        *status = EH_CERT;
        goto fail;
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

static int eh_write_all(SSL *ssl, const char *p, size_t n)
{
    while (n > 0) {
        int chunk = n > (1u << 30) ? 1 << 30 : (int)n;
        int w = SSL_write(ssl, p, chunk);
        if (w <= 0)
            return -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int eh_send_request(SSL *ssl, const struct eh_opts *o, const char *host, const char *port,
                           const char *path)
{
    struct eh_buf req = {0};
    const char *method = o->method ? o->method : o->data ? "POST" : "GET";
    bool has_ctype = false;
    char line[1024];
    int rc, n;
    bool v6 = strchr(host, ':') != NULL;

    n = snprintf(line, sizeof(line), "%s ", method);
    if ((rc = eh_buf_add(&req, line, (size_t)n)) || (rc = eh_buf_add(&req, path, strlen(path))))
        goto out;
    n = snprintf(line, sizeof(line),
                 " HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: cliqo-e2e-https\r\nAccept: */*\r\n"
                 "Connection: close\r\n",
                 v6 ? "[" : "", host, v6 ? "]" : "", port);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        rc = -ENAMETOOLONG;
        goto out;
    }
    if ((rc = eh_buf_add(&req, line, (size_t)n)))
        goto out;
    for (int i = 0; i < o->nheaders; i++) {
        if (!strncasecmp(o->headers[i], "Content-Type:", 13))
            has_ctype = true;
        if ((rc = eh_buf_add(&req, o->headers[i], strlen(o->headers[i]))) ||
            (rc = eh_buf_add(&req, "\r\n", 2)))
            goto out;
    }
    if (o->data) {
        n = snprintf(line, sizeof(line), "%sContent-Length: %zu\r\n",
                     has_ctype ? "" : "Content-Type: application/x-www-form-urlencoded\r\n",
                     strlen(o->data));
        if ((rc = eh_buf_add(&req, line, (size_t)n)))
            goto out;
    }
    if ((rc = eh_buf_add(&req, "\r\n", 2)))
        goto out;
    if (o->data && (rc = eh_buf_add(&req, o->data, strlen(o->data))))
        goto out;
    rc = eh_write_all(ssl, req.p, req.len);
out:
    free(req.p);
    return rc;
}

/* Reads until the peer closes, or (once the head is known) until the body's framing is satisfied.
 */
static int eh_read_some(SSL *ssl, struct eh_buf *in, bool *eof)
{
    char chunk[65536];
    int r = SSL_read(ssl, chunk, sizeof(chunk));
    if (r > 0)
        return eh_buf_add(in, chunk, (size_t)r);
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_ZERO_RETURN) {
        *eof = true;
        return 0;
    }
    /* A peer that closes without close_notify: the end of the answer when its framing allows it. */
    if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_SSL) {
        unsigned long err = ERR_peek_error();
        if (r == 0 || ERR_GET_REASON(err) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            ERR_clear_error();
            *eof = true;
            return 0;
        }
    }
    return -EIO;
}

static const char *eh_header(const char *head, size_t headlen, const char *name)
{
    size_t nl = strlen(name);
    const char *p = memchr(head, '\n', headlen), *end = head + headlen;
    while (p && p + 1 < end) {
        p++;
        if ((size_t)(end - p) > nl && !strncasecmp(p, name, nl) && p[nl] == ':') {
            p += nl + 1;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            return p;
        }
        p = memchr(p, '\n', (size_t)(end - p));
    }
    return NULL;
}

/* The body of a chunked answer in raw[0..n), decoded into out from *pos (where the last call
 * stopped: the start of the first chunk it did not have whole); -EAGAIN while it is incomplete. */
static int eh_dechunk(const char *raw, size_t n, size_t *pos, struct eh_buf *out)
{
    for (size_t i = *pos;; *pos = i) {
        const char *eol = memchr(raw + i, '\n', n - i);
        if (!eol)
            return -EAGAIN;
        if (!isxdigit((unsigned char)raw[i])) /* (strtoull would skip spaces, the newline too) */
            return -EPROTO;
        char *end;
        unsigned long long sz = strtoull(raw + i, &end, 16);
        if ((*end != '\r' && *end != ';' && *end != '\n'))
            return -EPROTO;
        if (sz > (unsigned long long)E2E_HTTPS_MAX_ANSWER)
            return -EFBIG;
        i = (size_t)(eol - raw) + 1;
        if (sz == 0)
            return 0; /* trailers, if any, are not wanted */
        if (n - i < sz + 2)
            return -EAGAIN;
        size_t data = i; /* its CRLF is there: the check above */
        i += (size_t)sz;
        if (raw[i] == '\r')
            i++;
        if (raw[i] != '\n')
            return -EPROTO;
        i++;
        int rc = eh_buf_add(out, raw + data, (size_t)sz);
        if (rc)
            return rc;
    }
}

static void eh_print_w(const char *fmt, int code)
{
    for (const char *p = fmt; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            putchar(*p == 'n' ? '\n' : *p == 't' ? '\t' : *p);
        } else if (!strncmp(p, "%{http_code}", 12)) {
            printf("%03d", code);
            p += 11;
        } else {
            putchar(*p);
        }
    }
}

static const char usage[] =
    "usage: cliqo-e2e-https [-s] [-S] [-f] [-X METHOD] [-H 'Name: value']... [--data-binary BODY]\n"
    "                       [-w FORMAT] [--max-time SECONDS] --cacert FILE --cert FILE --key FILE "
    "URL\n"
    "One HTTPS request with a client certificate, answering as curl does for these options\n"
    "(the e2e tests' kcurl). -f: nothing printed and exit 22 for an answer of 400 or more.\n"
    "-w: printed after the body; \\n, \\t and %{http_code} are understood.\n";

int main(int argc, char **argv)
{
    struct eh_opts o = {0};
    struct eh_buf in = {0}, body = {0};
    const char *outp = NULL;
    size_t outlen = 0;
    char host[256], port[8];
    const char *path;
    SSL_CTX *ctx = NULL;
    SSL *ssl = NULL;
    int fd = -1, status = EH_OK, code = 0, rc;
    bool eof = false;
    size_t headlen = 0;

    rc = eh_parse_args(argc, argv, &o);
    if (rc) {
        fputs(usage, rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : EH_USAGE;
    }
    if (eh_split_url(o.url, host, sizeof(host), port, sizeof(port), &path)) {
        eh_err("bad URL %s (https://HOST[:PORT]/PATH)", o.url);
        return EH_USAGE;
    }
    if (o.max_time) {
        struct sigaction sa = {.sa_handler = eh_on_alarm};
        sigaction(SIGALRM, &sa, NULL);
        alarm((unsigned)o.max_time);
    }
    /* No openssl.cnf: nothing in it is wanted here, and reading it is a good part of the start-up.
     */
    OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
    ctx = eh_tls_ctx(&o, &status);
    if (!ctx)
        goto out;
    fd = eh_connect(host, port);
    if (fd < 0) {
        status = EH_CONNECT;
        goto out;
    }
    ssl = SSL_new(ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1) {
        eh_tls_err("cannot make a TLS connection");
        status = EH_TLS;
        goto out;
    }
    {
        unsigned char addr[16];
        bool is_ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
        int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
                       : SSL_set1_host(ssl, host) && SSL_set_tlsext_host_name(ssl, host);
        if (ok != 1) {
            eh_tls_err("cannot set the name to check");
            status = EH_TLS;
            goto out;
        }
    }
    if (SSL_connect(ssl) != 1) {
        long v = SSL_get_verify_result(ssl);
        if (v != X509_V_OK)
            eh_err("the server's certificate is not trusted for %s: %s", host,
                   X509_verify_cert_error_string(v));
        else
            eh_tls_err("TLS handshake failed");
        status = EH_TLS;
        goto out;
    }
    if (eh_send_request(ssl, &o, host, port, path)) {
        eh_err("cannot send the request");
        status = EH_RECV;
        goto out;
    }

    /* the head */
    for (;;) {
        const char *sep = in.len ? memmem(in.p, in.len, "\r\n\r\n", 4) : NULL;
        if (sep) {
            headlen = (size_t)(sep - in.p) + 4;
            if (sscanf(in.p, "HTTP/%*d.%*d %d", &code) != 1 || code < 100 || code > 999) {
                eh_err("not an HTTP answer");
                status = EH_RECV;
                goto out;
            }
            if (code >= 200)
                break;
            memmove(in.p, in.p + headlen, in.len - headlen); /* 1xx: the real answer follows */
            in.len -= headlen;
            continue;
        }
        if (in.len > E2E_HTTPS_MAX_HEAD || eof) {
            eh_err(eof ? "the server closed the connection before its answer"
                       : "the answer's head is longer than 64 KiB");
            status = EH_RECV;
            goto out;
        }
        if ((rc = eh_read_some(ssl, &in, &eof))) {
            eh_err("cannot read the answer: %s", strerror(-rc));
            status = EH_RECV;
            goto out;
        }
    }
    if (o.fail && code >= 400) {
        eh_err("The requested URL returned error: %d", code);
        status = EH_HTTP_ERROR;
        goto out;
    }

    /* the body */
    {
        const char *te = eh_header(in.p, headlen, "Transfer-Encoding");
        const char *cl = eh_header(in.p, headlen, "Content-Length");
        bool chunked = te && !strncasecmp(te, "chunked", 7);
        bool none = code == 204 || code == 304 || (o.method && !strcmp(o.method, "HEAD"));
        long long want = -1;
        size_t pos = 0;
        if (!chunked && cl) {
            char *end;
            want = strtoll(cl, &end, 10);
            if (end == cl || want < 0 || want > E2E_HTTPS_MAX_ANSWER) {
                eh_err("bad Content-Length");
                status = EH_RECV;
                goto out;
            }
        }
        for (;;) {
            size_t have = in.len - headlen;
            if (none)
                break;
            if (chunked) {
                rc = eh_dechunk(in.p + headlen, have, &pos, &body);
                if (rc == 0)
                    break;
                if (rc != -EAGAIN) {
                    eh_err("bad chunked body: %s", strerror(-rc));
                    status = EH_RECV;
                    goto out;
                }
            } else if (want >= 0 && have >= (size_t)want) {
                break;
            }
            if (eof) {
                if (chunked || want >= 0) {
                    eh_err("the server closed the connection before the end of its answer");
                    status = EH_RECV;
                    goto out;
                }
                break;
            }
            if ((rc = eh_read_some(ssl, &in, &eof))) {
                eh_err("cannot read the answer: %s", strerror(-rc));
                status = EH_RECV;
                goto out;
            }
        }
        /* what is printed: the decoded chunks, or the body as it came */
        if (chunked) {
            outp = body.p;
            outlen = body.len;
        } else if (!none) {
            outp = in.p + headlen;
            outlen = in.len - headlen;
            if (want >= 0 && outlen > (size_t)want)
                outlen = (size_t)want;
        }
    }
    if (outlen && fwrite(outp, 1, outlen, stdout) != outlen)
        status = EH_RECV;
    if (o.wfmt)
        eh_print_w(o.wfmt, code);
    if (fflush(stdout))
        status = EH_RECV;
out:
    if (ssl)
        SSL_free(ssl);
    if (fd >= 0)
        close(fd);
    SSL_CTX_free(ctx);
    free(in.p);
    free(body.p);
    return status;
}
