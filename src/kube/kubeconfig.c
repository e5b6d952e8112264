/* kubeconfig: see kubeconfig.h for the behaviour.
 *
 * Two phases. Parsing turns one YAML document into a struct kc_file: every clusters[], users[] and
 * contexts[] entry with its raw fields, type-checked and with *-data fields already base64-decoded,
 * so that whole-file errors carry their YAML path (users[1].user.client-key-data). Resolution then
 * looks at a set of parsed files (one, or the $KUBECONFIG list in order, where the first file that
 * defines a name wins) and builds the struct kc_config of one context; its errors name the entity
 * (cluster "c1": ...) and the file that defined it. Every entry remembers its file, so relative
 * paths resolve against the right directory after a merge. */
#include "kube/kubeconfig.h"

#include "common/errbuf.h"
#include "common/fileio.h"
#include "common/strutil.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define ARRAY_SIZE(a)     (sizeof(a) / sizeof((a)[0]))
#define ORIGIN_MEMORY     "<memory>"
#define ORIGIN_IN_CLUSTER "in-cluster"
#define HAVE_MAX_NAMES    10
#define MAX_PATH_LEN      4096
#define KC_MAX_DEPTH      64     /* a kubeconfig needs 6 levels; extensions may add some */
#define KC_MAX_NODES      500000 /* KC_MAX_ENTRIES entries of each kind need about 300000 */

/* ---- errors and wiping ---- */

static void wipe_free(void *p, size_t len)
{
    if (!p)
        return;
    explicit_bzero(p, len);
    x_free(p);
}

static void str_wipe_free(char *s)
{
    if (s)
        wipe_free(s, strlen(s));
}

/* file_read() with the failure explained in `why` ("cannot read "/x": No such file ...").
 */
static int read_ref_file(const char *path, size_t max, char **ret, size_t *ret_len, char *why,
                         size_t whylen)
{
    int r = file_read(path, max, FILE_READ_REGULAR, ret, ret_len);

    if (r == -E2BIG)
        errbuf_fmt(why, whylen, 0, "\"%s\" is too large (more than %zu bytes)", path, max);
    else if (r == -EINVAL)
        errbuf_fmt(why, whylen, 0, "\"%s\" is not a regular file", path);
    else if (r < 0 && r != -ENOMEM)
        errbuf_fmt(why, whylen, 0, "cannot read \"%s\": %s", path, strerror(-r));
    return r;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* A bearer token goes into an HTTP header: printable ASCII, no spaces. */
static bool token_valid(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

/* Copies s[0..len) without surrounding whitespace into *ret, if it is a valid token. */
static int token_dup(const char *s, size_t len, char **ret)
{
    char *t;

    while (len && is_space(*s)) {
        s++;
        len--;
    }
    while (len && is_space(s[len - 1]))
        len--;
    if (!token_valid(s, len))
        return -EINVAL;
    t = x_strndup(s, len);
    if (!t)
        return -ENOMEM;
    *ret = t;
    return 0;
}

static int load_token(const char *path, char **ret, char *why, size_t whylen)
{
    char *buf = NULL;
    size_t len = 0;
    int r;

    r = read_ref_file(path, KC_MAX_REF_FILE_SIZE, &buf, &len, why, whylen);
    if (r < 0)
        return r;
    r = token_dup(buf, len, ret);
    if (r == -EINVAL) {
        bool blank = true;

        for (size_t i = 0; i < len; i++)
            blank = blank && is_space(buf[i]);
        if (blank)
            errbuf_fmt(why, whylen, 0, "\"%s\" is empty", path);
        else
            errbuf_fmt(
                why, whylen, 0,
                "\"%s\" does not hold a valid token (expected printable ASCII without spaces)",
                path);
    }
    wipe_free(buf, len);
    return r;
}

int kc_read_token(const char *path, char **ret_token, char *err, size_t errlen)
{
    char why[KC_ERR_LEN];
    int r;

    errbuf_clear(err, errlen);
    if (!path || !ret_token)
        return errbuf_fmt(err, errlen, -EINVAL, "token file: no path given");
    r = load_token(path, ret_token, why, sizeof why);
    if (r == -ENOMEM)
        errbuf_fmt(err, errlen, 0, "token file: out of memory");
    else if (r < 0)
        errbuf_fmt(err, errlen, 0, "token file: %s", why);
    return r;
}

/* ---- base64 ---- */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decodes standard padded base64 (RFC 4648 section 4) into a NUL-terminated buffer. CR and LF are
 * skipped, as Go's decoder (and so client-go) does; any other character outside the alphabet, a
 * missing or misplaced '=', or a truncated quantum fails with -EINVAL. Like Go's non-strict
 * decoder, non-zero padding bits are accepted. */
static int b64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len)
{
    unsigned char *out;
    unsigned char q[4];
    size_t o = 0, k = 0;
    bool done = false;

    out = x_malloc(len / 4 * 3 + 4);
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int v[4];

        if (c == '\r' || c == '\n')
            continue;
        if (done)
            goto bad;
        q[k++] = c;
        if (k < 4)
            continue;
        k = 0;
        for (int j = 0; j < 4; j++)
            v[j] = b64_value(q[j]);
        if (v[0] < 0 || v[1] < 0)
            goto bad;
        out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        if (q[2] == '=') {
            if (q[3] != '=')
                goto bad;
            done = true;
            continue;
        }
        if (v[2] < 0)
            goto bad;
        out[o++] = (unsigned char)((v[1] & 0xf) << 4 | v[2] >> 2);
        if (q[3] == '=') {
            done = true;
            continue;
        }
        if (v[3] < 0)
            goto bad;
        out[o++] = (unsigned char)((v[2] & 0x3) << 6 | v[3]);
    }
    if (k != 0)
        goto bad;
    out[o] = '\0';
    *ret = out;
    *ret_len = o;
    return 0;
bad:
    wipe_free(out, len / 4 * 3 + 4);
    return -EINVAL;
}

/* ---- the parsed model ---- */

struct blob {
    unsigned char *data;
    size_t len;
};

struct kc_file;

/* First member of every entry, so that lists can be handled generically. */
struct kc_entry {
    const struct kc_file *file;
    size_t index;
    char *name;
};

struct kc_cluster {
    struct kc_entry e;
    char *server;
    char *ca_file;
    struct blob ca_data;
    bool insecure;
    char *tls_server_name;
    bool proxy_url;
};

struct kc_user {
    struct kc_entry e;
    char *cert_file;
    struct blob cert_data;
    char *key_file;
    struct blob key_data;
    char *token;
    char *token_file;
    bool exec;
    bool auth_provider;
    bool basic;
    bool impersonate;
};

struct kc_context {
    struct kc_entry e;
    char *cluster;
    char *user;
    char *ns;
};

enum kind { KIND_CLUSTER, KIND_USER, KIND_CONTEXT, _KIND_MAX };

struct kc_list {
    char *items; /* n entries of kinds[kind].size bytes */
    size_t n;
};

struct kc_file {
    char *origin;   /* names the file in errors */
    char *base_dir; /* NULL: file references are refused */
    char *current_context;
    struct kc_list lists[_KIND_MAX];
};

/* How a field is read: a string, a boolean, base64 data, or a flag that is set when the key has
 * a non-empty value (for the features that are refused when selected). */
enum ftype { FT_STR, FT_BOOL, FT_B64, FT_FLAG };

struct field {
    const char *key;
    enum ftype type;
    size_t off;
};

#define FIELD(key, type, st, member)                                                               \
    {                                                                                              \
        key, type, offsetof(struct st, member)                                                     \
    }

static const struct field cluster_fields[] = {
    FIELD("server", FT_STR, kc_cluster, server),
    FIELD("certificate-authority", FT_STR, kc_cluster, ca_file),
    FIELD("certificate-authority-data", FT_B64, kc_cluster, ca_data),
    FIELD("insecure-skip-tls-verify", FT_BOOL, kc_cluster, insecure),
    FIELD("tls-server-name", FT_STR, kc_cluster, tls_server_name),
    FIELD("proxy-url", FT_FLAG, kc_cluster, proxy_url),
};

static const struct field user_fields[] = {
    FIELD("client-certificate", FT_STR, kc_user, cert_file),
    FIELD("client-certificate-data", FT_B64, kc_user, cert_data),
    FIELD("client-key", FT_STR, kc_user, key_file),
    FIELD("client-key-data", FT_B64, kc_user, key_data),
    FIELD("token", FT_STR, kc_user, token),
    FIELD("tokenFile", FT_STR, kc_user, token_file),
    FIELD("exec", FT_FLAG, kc_user, exec),
    FIELD("auth-provider", FT_FLAG, kc_user, auth_provider),
    FIELD("username", FT_FLAG, kc_user, basic),
    FIELD("password", FT_FLAG, kc_user, basic),
    FIELD("as", FT_FLAG, kc_user, impersonate),
    FIELD("as-uid", FT_FLAG, kc_user, impersonate),
    FIELD("as-groups", FT_FLAG, kc_user, impersonate),
    FIELD("as-user-extra", FT_FLAG, kc_user, impersonate),
};

static const struct field context_fields[] = {
    FIELD("cluster", FT_STR, kc_context, cluster),
    FIELD("user", FT_STR, kc_context, user),
    FIELD("namespace", FT_STR, kc_context, ns),
};

struct list_kind {
    const char *list_key; /* "clusters" */
    const char *item_key; /* "cluster": the key of the nested mapping, and the word in errors */
    const struct field *fields;
    size_t n_fields;
    size_t size;
};

static const struct list_kind kinds[_KIND_MAX] = {
    [KIND_CLUSTER] = {"clusters", "cluster", cluster_fields, ARRAY_SIZE(cluster_fields),
                      sizeof(struct kc_cluster)},
    [KIND_USER] = {"users", "user", user_fields, ARRAY_SIZE(user_fields), sizeof(struct kc_user)},
    [KIND_CONTEXT] = {"contexts", "context", context_fields, ARRAY_SIZE(context_fields),
                      sizeof(struct kc_context)},
};

static struct kc_entry *list_at(const struct kc_list *l, enum kind k, size_t i)
{
    return (struct kc_entry *)(void *)(l->items + i * kinds[k].size);
}

static void entry_done(struct kc_entry *e, enum kind k)
{
    char *base = (char *)e;

    for (size_t i = 0; i < kinds[k].n_fields; i++) {
        const struct field *f = &kinds[k].fields[i];

        if (f->type == FT_STR) {
            char **s = (char **)(void *)(base + f->off);

            str_wipe_free(*s);
            *s = NULL;
        } else if (f->type == FT_B64) {
            struct blob *b = (struct blob *)(void *)(base + f->off);

            wipe_free(b->data, b->len);
            b->data = NULL;
        }
    }
    x_free(e->name);
    e->name = NULL;
}

static struct kc_file *file_free(struct kc_file *f)
{
    if (!f)
        return NULL;
    for (int k = 0; k < _KIND_MAX; k++) {
        for (size_t i = 0; i < f->lists[k].n; i++)
            entry_done(list_at(&f->lists[k], (enum kind)k, i), (enum kind)k);
        x_free(f->lists[k].items);
    }
    x_free(f->origin);
    x_free(f->base_dir);
    x_free(f->current_context);
    x_free(f);
    return NULL;
}

/* ---- YAML parsing ---- */

struct yctx {
    yaml_document_t *doc;
    const char *origin;
    char *err;
    size_t errlen;
    /* Bytes left for copies of scalars. Aliases let a small document name one big scalar many
     * times; without them copies never exceed about the input size, hence the budget. */
    size_t budget;
};

/* Sets "<origin>: <message>" and returns -EINVAL. */
__attribute__((format(printf, 2, 3))) static int yerr(struct yctx *y, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!y->err || !y->errlen)
        return -EINVAL;
    n = snprintf(y->err, y->errlen, "%s: ", y->origin);
    if (n >= 0 && (size_t)n < y->errlen) {
        va_start(ap, fmt);
        vsnprintf(y->err + n, y->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static yaml_node_t *node_get(struct yctx *y, int id)
{
    return yaml_document_get_node(y->doc, id);
}

static bool scalar_is(const yaml_node_t *n, const char *s)
{
    size_t len = strlen(s);

    return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length == len &&
           memcmp(n->data.scalar.value, s, len) == 0;
}

/* YAML 1.1 null: an absent value, an explicit !!null, or a plain "", "~", "null". */
static bool node_is_null(const yaml_node_t *n)
{
    if (!n || n->type == YAML_NO_NODE)
        return true;
    if (n->type != YAML_SCALAR_NODE)
        return false;
    if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
        return true;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    return n->data.scalar.length == 0 || scalar_is(n, "~") || scalar_is(n, "null") ||
           scalar_is(n, "Null") || scalar_is(n, "NULL");
}

static const char *node_desc(const yaml_node_t *n)
{
    if (node_is_null(n))
        return "null";
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a string";
    case YAML_SEQUENCE_NODE:
        return "a sequence";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

static int charge(struct yctx *y, const yaml_node_t *n, const char *path)
{
    if (n->data.scalar.length > y->budget) {
        yerr(y, "%s: the document expands to too much data (more than %u bytes; aliases?)", path,
             2 * KC_MAX_FILE_SIZE);
        return -E2BIG;
    }
    y->budget -= n->data.scalar.length;
    return 0;
}

/* Reads a string field; null and "" leave *ret NULL (client-go treats empty as unset). */
static int get_str(struct yctx *y, const yaml_node_t *n, const char *path, char **ret)
{
    char *s;

    if (node_is_null(n))
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return yerr(y, "%s: expected a string, got %s", path, node_desc(n));
    if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
        return yerr(y, "%s: expected a string, got one with a NUL byte", path);
    if (n->data.scalar.length == 0)
        return 0;
    if (charge(y, n, path) < 0)
        return -E2BIG;
    s = x_strndup((const char *)n->data.scalar.value, n->data.scalar.length);
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

/* YAML 1.1 booleans, as go-yaml (and so kubectl) reads them; null is false. */
static int get_bool(struct yctx *y, const yaml_node_t *n, const char *path, bool *ret)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                      "on",   "On",   "ON",   "y",   "Y"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO",
                                     "off",   "Off",   "OFF",   "n",  "N"};

    if (node_is_null(n)) {
        *ret = false;
        return 0;
    }
    if (n->type == YAML_SCALAR_NODE) {
        for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
            if (scalar_is(n, yes[i])) {
                *ret = true;
                return 0;
            }
            if (scalar_is(n, no[i])) {
                *ret = false;
                return 0;
            }
        }
        if (n->data.scalar.length <= 32 &&
            !memchr(n->data.scalar.value, '\0', n->data.scalar.length))
            return yerr(y, "%s: expected a boolean (true or false), got \"%.*s\"", path,
                        (int)n->data.scalar.length, (const char *)n->data.scalar.value);
    }
    return yerr(y, "%s: expected a boolean (true or false), got %s", path, node_desc(n));
}

static int get_b64(struct yctx *y, const yaml_node_t *n, const char *path, struct blob *ret)
{
    unsigned char *data;
    size_t len;
    int r;

    if (node_is_null(n))
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return yerr(y, "%s: expected a base64 string, got %s", path, node_desc(n));
    if (charge(y, n, path) < 0)
        return -E2BIG;
    r = b64_decode((const char *)n->data.scalar.value, n->data.scalar.length, &data, &len);
    if (r == -EINVAL)
        return yerr(y, "%s: invalid base64", path);
    if (r < 0)
        return r;
    if (len == 0) {
        x_free(data);
        return 0;
    }
    ret->data = data;
    ret->len = len;
    return 0;
}

static bool node_present(const yaml_node_t *n)
{
    if (node_is_null(n))
        return false;
    if (n->type == YAML_SEQUENCE_NODE)
        return n->data.sequence.items.top != n->data.sequence.items.start;
    if (n->type == YAML_MAPPING_NODE)
        return n->data.mapping.pairs.top != n->data.mapping.pairs.start;
    return true;
}

/* Reads the known keys of the mapping `map` (at YAML path `path`) into the entry at `base`. */
static int parse_fields(struct yctx *y, const yaml_node_t *map, const char *path,
                        const struct field *fields, size_t n_fields, char *base)
{
    uint32_t seen = 0;

    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *key = node_get(y, p->key);
        const yaml_node_t *val = node_get(y, p->value);
        const struct field *f;
        char fpath[160];
        size_t i;
        int r = 0;

        for (i = 0; i < n_fields; i++)
            if (scalar_is(key, fields[i].key))
                break;
        if (i == n_fields)
            continue; /* unknown keys are ignored, as client-go does */
        f = &fields[i];
        if (seen & (UINT32_C(1) << i))
            return yerr(y, "%s: duplicate key \"%s\"", path, f->key);
        seen |= UINT32_C(1) << i;
        snprintf(fpath, sizeof fpath, "%s.%s", path, f->key);
        switch (f->type) {
        case FT_STR:
            r = get_str(y, val, fpath, (char **)(void *)(base + f->off));
            break;
        case FT_BOOL:
            r = get_bool(y, val, fpath, (bool *)(void *)(base + f->off));
            break;
        case FT_B64:
            r = get_b64(y, val, fpath, (struct blob *)(void *)(base + f->off));
            break;
        case FT_FLAG:
            if (node_present(val))
                *(bool *)(void *)(base + f->off) = true;
            break;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

static int parse_entry(struct yctx *y, struct kc_file *f, enum kind k, size_t i,
                       const yaml_node_t *item)
{
    const struct list_kind *lk = &kinds[k];
    struct kc_entry *e = list_at(&f->lists[k], k, i);
    bool seen_name = false, seen_item = false;
    char path[64];
    int r;

    e->file = f;
    e->index = i;
    if (item->type != YAML_MAPPING_NODE)
        return yerr(y, "%s[%zu]: expected a mapping, got %s", lk->list_key, i, node_desc(item));
    for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *key = node_get(y, p->key);
        const yaml_node_t *val = node_get(y, p->value);

        if (scalar_is(key, "name")) {
            if (seen_name)
                return yerr(y, "%s[%zu]: duplicate key \"name\"", lk->list_key, i);
            seen_name = true;
            snprintf(path, sizeof path, "%s[%zu].name", lk->list_key, i);
            r = get_str(y, val, path, &e->name);
            if (r < 0)
                return r;
        } else if (scalar_is(key, lk->item_key)) {
            if (seen_item)
                return yerr(y, "%s[%zu]: duplicate key \"%s\"", lk->list_key, i, lk->item_key);
            seen_item = true;
            snprintf(path, sizeof path, "%s[%zu].%s", lk->list_key, i, lk->item_key);
            if (node_is_null(val))
                continue;
            if (val->type != YAML_MAPPING_NODE)
                return yerr(y, "%s: expected a mapping, got %s", path, node_desc(val));
            r = parse_fields(y, val, path, lk->fields, lk->n_fields, (char *)e);
            if (r < 0)
                return r;
        }
    }
    if (!e->name)
        return yerr(y, "%s[%zu].name: expected a non-empty string, got %s", lk->list_key, i,
                    seen_name ? "an empty one" : "nothing");
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    const struct kc_entry *x = *(const struct kc_entry *const *)a;
    const struct kc_entry *z = *(const struct kc_entry *const *)b;
    int c = strcmp(x->name, z->name);

    if (c)
        return c;
    return x->index < z->index ? -1 : x->index > z->index;
}

/* Names are unique within one file (client-go refuses duplicates too). Sorting keeps this
 * O(n log n); the error names the first duplicate in file order. */
static int check_unique(struct yctx *y, const struct kc_file *f, enum kind k)
{
    const struct kc_list *l = &f->lists[k];
    const struct kc_entry **v, *dup = NULL, *first = NULL;

    if (l->n < 2)
        return 0;
    v = x_reallocarray(NULL, l->n, sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < l->n; i++)
        v[i] = list_at(l, k, i);
    qsort(v, l->n, sizeof *v, entry_cmp);
    for (size_t i = 1; i < l->n; i++) {
        if (strcmp(v[i - 1]->name, v[i]->name) != 0)
            continue;
        /* v[i - 1] precedes v[i] in the file; walk back to the first of the run. */
        size_t j = i - 1;

        while (j > 0 && strcmp(v[j - 1]->name, v[i]->name) == 0)
            j--;
        if (!dup || v[i]->index < dup->index) {
            dup = v[i];
            first = v[j];
        }
    }
    x_free(v);
    if (dup)
        return yerr(y, "%s[%zu].name: duplicate %s name \"%s\" (first defined at %s[%zu])",
                    kinds[k].list_key, dup->index, kinds[k].item_key, dup->name, kinds[k].list_key,
                    first->index);
    return 0;
}

static int parse_list(struct yctx *y, struct kc_file *f, enum kind k, const yaml_node_t *seq)
{
    const struct list_kind *lk = &kinds[k];
    struct kc_list *l = &f->lists[k];
    size_t n;

    if (node_is_null(seq))
        return 0;
    if (seq->type != YAML_SEQUENCE_NODE)
        return yerr(y, "%s: expected a sequence, got %s", lk->list_key, node_desc(seq));
    n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    if (n > KC_MAX_ENTRIES) {
        yerr(y, "%s: too many entries (%zu, at most %d)", lk->list_key, n, KC_MAX_ENTRIES);
        return -E2BIG;
    }
    if (n == 0)
        return 0;
    l->items = x_calloc(n, lk->size);
    if (!l->items)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *item = node_get(y, seq->data.sequence.items.start[i]);
        int r;

        /* Counted before parsing, so that file_free() cleans up a half-parsed entry. */
        l->n = i + 1;
        if (!item)
            return yerr(y, "%s[%zu]: expected a mapping, got nothing", lk->list_key, i);
        r = parse_entry(y, f, k, i, item);
        if (r < 0)
            return r;
    }
    return check_unique(y, f, k);
}

static int parse_root(struct yctx *y, struct kc_file *f)
{
    static const char *const top_keys[] = {"apiVersion", "kind",  "current-context",
                                           "clusters",   "users", "contexts"};
    const yaml_node_t *root = yaml_document_get_root_node(y->doc);
    uint32_t seen = 0;

    if (node_is_null(root))
        return 0; /* an empty kubeconfig is an empty configuration, as in client-go */
    if (root->type != YAML_MAPPING_NODE)
        return yerr(y, "expected a mapping at the top level, got %s", node_desc(root));
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *key = node_get(y, p->key);
        const yaml_node_t *val = node_get(y, p->value);
        char *s = NULL;
        size_t i;
        int r = 0;

        for (i = 0; i < ARRAY_SIZE(top_keys); i++)
            if (scalar_is(key, top_keys[i]))
                break;
        if (i == ARRAY_SIZE(top_keys))
            continue;
        if (seen & (UINT32_C(1) << i))
            return yerr(y, "duplicate top-level key \"%s\"", top_keys[i]);
        seen |= UINT32_C(1) << i;
        switch (i) {
        case 0:
        case 1:
            r = get_str(y, val, top_keys[i], &s);
            if (r == 0 && s && strcmp(s, i == 0 ? "v1" : "Config") != 0)
                r = yerr(y, "%s: expected \"%s\", got \"%.64s\"", top_keys[i],
                         i == 0 ? "v1" : "Config", s);
            x_free(s);
            break;
        case 2:
            r = get_str(y, val, "current-context", &f->current_context);
            break;
        default:
            r = parse_list(y, f, (enum kind)(i - 3), val);
            break;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

/* libyaml keeps its own copies of every scalar, including base64 private keys and tokens. */
static void wipe_document(yaml_document_t *doc)
{
    for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++)
        if (n->type == YAML_SCALAR_NODE && n->data.scalar.value)
            explicit_bzero(n->data.scalar.value, n->data.scalar.length);
}

/* Explains a libyaml failure; returns -ENOMEM or -EINVAL. */
static int yaml_error(const yaml_parser_t *parser, const char *origin, char *err, size_t errlen)
{
    const char *problem = parser->problem ? parser->problem : "syntax error";

    if (parser->error == YAML_MEMORY_ERROR)
        return -ENOMEM;
    if (parser->error == YAML_READER_ERROR)
        errbuf_fmt(err, errlen, 0, "%s: invalid YAML: %s at byte %zu", origin, problem,
                   parser->problem_offset);
    else if (parser->context)
        errbuf_fmt(err, errlen, 0, "%s: invalid YAML at line %zu, column %zu: %s (%s at line %zu)",
                   origin, parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem,
                   parser->context, parser->context_mark.line + 1);
    else
        errbuf_fmt(err, errlen, 0, "%s: invalid YAML at line %zu, column %zu: %s", origin,
                   parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem);
    return -EINVAL;
}

/* libyaml's loader has no limits: every node costs about 100 bytes however short its text, so a
 * 4 MiB document of "[[[[..." or "a,a,a,..." would take hundreds of MB. This first pass streams
 * the events of the first document (what yaml_parser_load() reads) and refuses, before any tree
 * is built, documents nested deeper or with more nodes than any real kubeconfig. */
static int prescan(const char *data, size_t len, const char *origin, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    size_t depth = 0, nodes = 0;
    int r = 0;

    if (!yaml_parser_initialize(&parser))
        return -ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    for (bool done = false; !done && r == 0;) {
        if (!yaml_parser_parse(&parser, &ev)) {
            r = yaml_error(&parser, origin, err, errlen);
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT ||
            ev.type == YAML_SCALAR_EVENT || ev.type == YAML_ALIAS_EVENT) {
            if (++nodes > KC_MAX_NODES) {
                errbuf_fmt(err, errlen, 0, "%s: YAML has more than %d nodes", origin, KC_MAX_NODES);
                r = -E2BIG;
            }
        }
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (r == 0 && ++depth > KC_MAX_DEPTH) {
                errbuf_fmt(err, errlen, 0, "%s: YAML nested deeper than %d levels at line %zu",
                           origin, KC_MAX_DEPTH, ev.start_mark.line + 1);
                r = -E2BIG;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            break;
        }
        if (ev.type == YAML_SCALAR_EVENT)
            explicit_bzero(ev.data.scalar.value, ev.data.scalar.length);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return r;
}

static int parse_kubeconfig(const char *data, size_t len, const char *origin, const char *base_dir,
                            struct kc_file **ret, char *err, size_t errlen)
{
    struct yctx y = {
        .origin = origin, .err = err, .errlen = errlen, .budget = (size_t)2 * KC_MAX_FILE_SIZE};
    struct kc_file *f = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    bool have_parser = false, have_doc = false;
    int r;

    if (len > KC_MAX_FILE_SIZE)
        return errbuf_fmt(err, errlen, -E2BIG, "%s: kubeconfig is too large (more than %u bytes)",
                          origin, KC_MAX_FILE_SIZE);
    f = x_calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->origin = x_strdup(origin);
    if (!f->origin)
        goto oom;
    if (base_dir) {
        f->base_dir = x_strdup(base_dir);
        if (!f->base_dir)
            goto oom;
    }
    r = prescan(data, len, origin, err, errlen);
    if (r < 0)
        goto out;
    if (!yaml_parser_initialize(&parser))
        goto oom;
    have_parser = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    if (!yaml_parser_load(&parser, &doc)) {
        r = yaml_error(&parser, origin, err, errlen);
        goto out;
    }
    have_doc = true;
    y.doc = &doc;
    r = parse_root(&y, f);
    if (r < 0)
        goto out;
    *ret = f;
    f = NULL;
    r = 0;
    goto out;
oom:
    r = -ENOMEM;
out:
    if (have_doc) {
        wipe_document(&doc);
        yaml_document_delete(&doc);
    }
    if (have_parser)
        yaml_parser_delete(&parser);
    file_free(f);
    return r;
}

/* Reads and parses one kubeconfig file; relative paths in it resolve against its directory. */
static int load_file(const char *path, struct kc_file **ret, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/');
    char *data = NULL, *dir = NULL;
    size_t len = 0;
    int r;

    r = file_read(path, KC_MAX_FILE_SIZE, FILE_READ_REGULAR, &data, &len);
    if (r == -E2BIG) {
        errbuf_fmt(err, errlen, 0, "%s: kubeconfig is too large (more than %u bytes)", path,
                   KC_MAX_FILE_SIZE);
        goto out;
    }
    if (r == -EINVAL) {
        errbuf_fmt(err, errlen, 0, "%s: not a regular file", path);
        goto out;
    }
    if (r < 0) {
        if (r != -ENOMEM)
            errbuf_fmt(err, errlen, 0, "%s: cannot read kubeconfig: %s", path, strerror(-r));
        goto out;
    }
    if (!slash)
        dir = x_strdup(".");
    else if (slash == path)
        dir = x_strdup("/");
    else
        dir = x_strndup(path, (size_t)(slash - path));
    if (!dir) {
        r = -ENOMEM;
        goto out;
    }
    r = parse_kubeconfig(data, len, path, dir, ret, err, errlen);
out:
    wipe_free(data, len);
    x_free(dir);
    return r;
}

/* ---- resolution ---- */

/* One kubeconfig, or the $KUBECONFIG files in order: the first file defining a name wins. */
struct kc_set {
    struct kc_file **files;
    size_t n;
    const char *origin; /* names the whole set in errors */
};

static const struct kc_entry *set_find(const struct kc_set *s, enum kind k, const char *name)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct kc_list *l = &s->files[i]->lists[k];

        for (size_t j = 0; j < l->n; j++) {
            const struct kc_entry *e = list_at(l, k, j);

            if (strcmp(e->name, name) == 0)
                return e;
        }
    }
    return NULL;
}

/* "have: a, b" (the names that win, in file order, at most HAVE_MAX_NAMES) or "none defined". */
static void set_names(const struct kc_set *s, enum kind k, char *buf, size_t len)
{
    size_t shown = 0, used = 0;

    errbuf_fmt(buf, len, 0, "no %s is defined", kinds[k].item_key);
    for (size_t i = 0; i < s->n; i++) {
        const struct kc_list *l = &s->files[i]->lists[k];

        for (size_t j = 0; j < l->n; j++) {
            const struct kc_entry *e = list_at(l, k, j);
            int n;

            if (set_find(s, k, e->name) != e)
                continue; /* shadowed by an earlier file */
            if (shown == HAVE_MAX_NAMES) {
                if (used < len)
                    snprintf(buf + used, len - used, ", ...");
                return;
            }
            n = snprintf(buf + used, len - used, "%s%s", shown ? ", " : "have: ", e->name);
            if (n < 0 || (size_t)n >= len - used)
                return;
            used += (size_t)n;
            shown++;
        }
    }
}

/* Checks and normalises a server URL into *ret: https:// (or http:// to a loopback host), a host
 * (name, IPv4, or IPv6 in brackets), an optional port, an optional path without trailing slashes.
 * On -EINVAL, `why` says what is wrong. */
static int normalize_server(const char *in, char **ret, char *why, size_t whylen)
{
    const char *auth, *auth_end, *host, *host_end, *p, *path;
    bool https;
    size_t path_len;
    struct sbuf b;
    int r;

    for (p = in; *p; p++) {
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return errbuf_fmt(why, whylen, -EINVAL,
                              "server must not contain spaces, control or non-ASCII characters");
    }
    if (strncasecmp(in, "https://", 8) == 0) {
        https = true;
        auth = in + 8;
    } else if (strncasecmp(in, "http://", 7) == 0) {
        https = false;
        auth = in + 7;
    } else {
        return errbuf_fmt(why, whylen, -EINVAL, "server must be an https:// URL (got \"%.200s\")",
                          in);
    }
    auth_end = auth + strcspn(auth, "/?#");
    if (memchr(auth, '@', (size_t)(auth_end - auth))) {
        /* Not echoed: it may hold a password. */
        return errbuf_fmt(why, whylen, -EINVAL,
                          "server must not contain user info (user@ or user:password@)");
    }
    if (strpbrk(auth, "?#"))
        return errbuf_fmt(why, whylen, -EINVAL,
                          "server must not have a query or fragment (got \"%.200s\")", in);
    if (*auth == '[') {
        host = auth + 1;
        host_end = memchr(host, ']', (size_t)(auth_end - host));
        if (!host_end || host_end == host)
            return errbuf_fmt(why, whylen, -EINVAL,
                              "server has an invalid IPv6 address (got \"%.200s\")", in);
        for (p = host; p < host_end; p++) {
            if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
                return errbuf_fmt(why, whylen, -EINVAL,
                                  "server has an invalid IPv6 address (got \"%.200s\")", in);
        }
        p = host_end + 1;
    } else {
        host = auth;
        host_end = memchr(auth, ':', (size_t)(auth_end - auth));
        if (!host_end)
            host_end = auth_end;
        for (p = host; p < host_end; p++) {
            if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
                return errbuf_fmt(why, whylen, -EINVAL,
                                  "server has an invalid host (got \"%.200s\")", in);
        }
        p = host_end;
    }
    if (host == host_end)
        return errbuf_fmt(why, whylen, -EINVAL, "server has no host (got \"%.200s\")", in);
    if (p < auth_end) {
        char port[8];
        size_t plen = (size_t)(auth_end - p - 1);
        const char *hint = memchr(p + 1, ':', plen) ? "; IPv6 addresses need brackets" : "";
        uint64_t v = 0;

        if (*p == ':' && plen > 0 && plen < sizeof port) {
            memcpy(port, p + 1, plen);
            port[plen] = '\0';
            if (parse_u64(port, 65535, &v) < 0)
                v = 0;
        }
        if (v == 0)
            return errbuf_fmt(why, whylen, -EINVAL, "server has an invalid port (got \"%.200s\"%s)",
                              in, hint);
    }
    if (!https) {
        size_t hl = (size_t)(host_end - host);
        bool loopback = (hl == 9 && strncasecmp(host, "localhost", 9) == 0) ||
                        (hl == 3 && memcmp(host, "::1", 3) == 0);

        if (hl > 4 && memcmp(host, "127.", 4) == 0) {
            loopback = true;
            for (p = host; p < host_end; p++)
                loopback = loopback && (isdigit((unsigned char)*p) || *p == '.');
        }
        if (!loopback) {
            errbuf_fmt(
                why, whylen, 0,
                "server must be an https:// URL; plain http:// is accepted only for a loopback "
                "host (got \"%.200s\")",
                in);
            return -EINVAL;
        }
    }
    path = auth_end;
    path_len = strlen(path);
    while (path_len && path[path_len - 1] == '/')
        path_len--;
    sbuf_init(&b, MAX_PATH_LEN);
    r = sbuf_adds(&b, https ? "https://" : "http://");
    if (r == 0)
        r = sbuf_add(&b, auth, (size_t)(auth_end - auth));
    if (r == 0)
        r = sbuf_add(&b, path, path_len);
    if (r == -E2BIG) {
        errbuf_fmt(why, whylen, 0, "server URL is too long (more than %d bytes)", MAX_PATH_LEN);
        r = -EINVAL;
    }
    if (r < 0) {
        sbuf_done(&b);
        return r;
    }
    *ret = sbuf_steal(&b);
    return *ret ? 0 : -ENOMEM;
}

/* RFC 1123 label: what the apiserver accepts as a namespace name (and safe in a URL path). */
static bool namespace_valid(const char *s)
{
    size_t len = strlen(s);

    if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
            return false;
    return true;
}

/* Who refers to a file, for error messages: `cluster "c1"` and the field name. */
struct ref {
    const struct kc_entry *e;
    const char *kind;  /* "cluster" or "user" */
    const char *field; /* "certificate-authority" */
    const char *alt;   /* the inline alternative: "certificate-authority-data" */
};

/* Resolves a path field against the directory of the file that defined the entry. */
static int ref_path(const struct ref *ref, const char *path, char **ret, char *err, size_t errlen)
{
    const struct kc_file *f = ref->e->file;
    struct sbuf b;
    int r;

    if (!f->base_dir)
        return errbuf_fmt(
            err, errlen, -EINVAL,
            "%s: %s \"%s\": %s: file references are not allowed in a kubeconfig that was not "
            "loaded from a file (use %s)",
            f->origin, ref->kind, ref->e->name, ref->field, ref->alt);
    sbuf_init(&b, MAX_PATH_LEN);
    if (path[0] == '/') {
        r = sbuf_adds(&b, path);
    } else {
        r = sbuf_adds(&b, f->base_dir);
        if (r == 0 && sbuf_len(&b) && sbuf_str(&b)[sbuf_len(&b) - 1] != '/')
            r = sbuf_adds(&b, "/");
        if (r == 0)
            r = sbuf_adds(&b, path);
    }
    if (r == -E2BIG) {
        errbuf_fmt(err, errlen, 0, "%s: %s \"%s\": %s: path is too long (more than %d bytes)",
                   f->origin, ref->kind, ref->e->name, ref->field, MAX_PATH_LEN);
        r = -EINVAL;
    }
    if (r < 0) {
        sbuf_done(&b);
        return r;
    }
    *ret = sbuf_steal(&b);
    return *ret ? 0 : -ENOMEM;
}

static int ref_read(const struct ref *ref, const char *path, unsigned char **ret, size_t *ret_len,
                    char *err, size_t errlen)
{
    char why[KC_ERR_LEN];
    char *full = NULL, *buf = NULL;
    size_t len = 0;
    int r;

    r = ref_path(ref, path, &full, err, errlen);
    if (r < 0)
        return r;
    r = read_ref_file(full, KC_MAX_REF_FILE_SIZE, &buf, &len, why, sizeof why);
    if (r < 0 && r != -ENOMEM)
        errbuf_fmt(err, errlen, 0, "%s: %s \"%s\": %s: %s", ref->e->file->origin, ref->kind,
                   ref->e->name, ref->field, why);
    if (r == -EINVAL || r == -EISDIR)
        r = -EINVAL;
    x_free(full);
    if (r < 0)
        return r;
    *ret = (unsigned char *)buf;
    *ret_len = len;
    return 0;
}

static int blob_dup(const struct blob *b, unsigned char **ret, size_t *ret_len)
{
    unsigned char *d = x_malloc(b->len + 1);

    if (!d)
        return -ENOMEM;
    memcpy(d, b->data, b->len);
    d[b->len] = '\0';
    *ret = d;
    *ret_len = b->len;
    return 0;
}

/* Fills *ret and *ret_len from the inline data or the file; both set is an error. */
static int pem_source(const struct ref *ref, const char *file, const struct blob *data,
                      unsigned char **ret, size_t *ret_len, char *err, size_t errlen)
{
    if (file && data->len) {
        errbuf_fmt(err, errlen, 0, "%s: %s \"%s\": %s and %s are both set; specify only one",
                   ref->e->file->origin, ref->kind, ref->e->name, ref->field, ref->alt);
        return -EINVAL;
    }
    if (data->len)
        return blob_dup(data, ret, ret_len);
    if (file)
        return ref_read(ref, file, ret, ret_len, err, errlen);
    return 0;
}

static int resolve_cluster(const struct kc_cluster *cl, struct kc_config *c, char *err,
                           size_t errlen)
{
    const char *o = cl->e.file->origin, *n = cl->e.name;
    const struct ref ca = {&cl->e, "cluster", "certificate-authority",
                           "certificate-authority-data"};
    char why[KC_ERR_LEN];
    int r;

    if (cl->proxy_url)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: cluster \"%s\": proxy-url is not supported", o,
                          n);
    if (!cl->server)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: cluster \"%s\": server is not set", o, n);
    r = normalize_server(cl->server, &c->server, why, sizeof why);
    if (r == -EINVAL)
        errbuf_fmt(err, errlen, 0, "%s: cluster \"%s\": %s", o, n, why);
    if (r < 0)
        return r;
    if (cl->insecure && (cl->ca_file || cl->ca_data.len))
        return errbuf_fmt(
            err, errlen, -EINVAL,
            "%s: cluster \"%s\": specifying a root certificates file with the insecure flag is "
            "not allowed (insecure-skip-tls-verify is true and %s is set)",
            o, n, cl->ca_file ? "certificate-authority" : "certificate-authority-data");
    r = pem_source(&ca, cl->ca_file, &cl->ca_data, &c->ca_pem, &c->ca_pem_len, err, errlen);
    if (r < 0)
        return r;
    c->insecure_skip_tls_verify = cl->insecure;
    if (cl->tls_server_name) {
        c->tls_server_name = x_strdup(cl->tls_server_name);
        if (!c->tls_server_name)
            return -ENOMEM;
    }
    return 0;
}

static int resolve_user(const struct kc_user *u, struct kc_config *c, char *err, size_t errlen)
{
    const char *o = u->e.file->origin, *n = u->e.name;
    const struct ref cert = {&u->e, "user", "client-certificate", "client-certificate-data"};
    const struct ref key = {&u->e, "user", "client-key", "client-key-data"};
    const struct ref tok = {&u->e, "user", "tokenFile", "token"};
    const char *unsupported = NULL;
    bool has_cert = u->cert_file || u->cert_data.len, has_key = u->key_file || u->key_data.len;
    char why[KC_ERR_LEN];
    int r;

    if (u->exec)
        unsupported = "exec credential plugins are";
    else if (u->auth_provider)
        unsupported = "auth-provider plugins are";
    else if (u->basic)
        unsupported = "basic authentication (username/password) is";
    else if (u->impersonate)
        unsupported = "impersonation (as, as-uid, as-groups, as-user-extra) is";
    if (unsupported)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: user \"%s\": %s not supported", o, n,
                          unsupported);
    if (has_cert != has_key) {
        if (has_cert)
            errbuf_fmt(err, errlen, 0,
                       "%s: user \"%s\": %s given without client-key-data or client-key", o, n,
                       u->cert_data.len ? "client-certificate-data" : "client-certificate");
        else
            errbuf_fmt(err, errlen, 0,
                       "%s: user \"%s\": %s given without client-certificate-data or "
                       "client-certificate",
                       o, n, u->key_data.len ? "client-key-data" : "client-key");
        return -EINVAL;
    }
    r = pem_source(&cert, u->cert_file, &u->cert_data, &c->cert_pem, &c->cert_pem_len, err, errlen);
    if (r < 0)
        return r;
    r = pem_source(&key, u->key_file, &u->key_data, &c->key_pem, &c->key_pem_len, err, errlen);
    if (r < 0)
        return r;
    if (u->token) {
        r = token_dup(u->token, strlen(u->token), &c->token);
        if (r == -EINVAL)
            errbuf_fmt(err, errlen, 0,
                       "%s: user \"%s\": token: expected printable ASCII without spaces or control "
                       "characters",
                       o, n);
        if (r < 0)
            return r;
    }
    if (u->token_file) {
        r = ref_path(&tok, u->token_file, &c->token_file, err, errlen);
        if (r < 0)
            return r;
        /* As in client-go, an inline token is used first; the file is for later re-reads. */
        if (!c->token) {
            r = load_token(c->token_file, &c->token, why, sizeof why);
            if (r < 0 && r != -ENOMEM)
                errbuf_fmt(err, errlen, 0, "%s: user \"%s\": tokenFile: %s", o, n, why);
            if (r == -EISDIR)
                r = -EINVAL;
            if (r < 0)
                return r;
        }
    }
    return 0;
}

static int resolve(const struct kc_set *s, const char *want, struct kc_config **ret, char *err,
                   size_t errlen)
{
    const struct kc_context *ctx;
    const struct kc_cluster *cl;
    const struct kc_user *u = NULL;
    struct kc_config *c = NULL;
    const char *name = want && *want ? want : NULL, *o, *ns;
    char have[256];
    int r = -EINVAL;

    for (size_t i = 0; i < s->n && !name; i++)
        name = s->files[i]->current_context;
    if (!name)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "%s: current-context is not set and no context was requested", s->origin);
    ctx = (const struct kc_context *)(const void *)set_find(s, KIND_CONTEXT, name);
    if (!ctx) {
        set_names(s, KIND_CONTEXT, have, sizeof have);
        return errbuf_fmt(err, errlen, -EINVAL, "%s: contexts: context \"%s\" not found (%s)",
                          s->origin, name, have);
    }
    o = ctx->e.file->origin;
    if (!ctx->cluster)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: context \"%s\": cluster is not set", o, name);
    cl = (const struct kc_cluster *)(const void *)set_find(s, KIND_CLUSTER, ctx->cluster);
    if (!cl) {
        set_names(s, KIND_CLUSTER, have, sizeof have);
        return errbuf_fmt(err, errlen, -EINVAL, "%s: context \"%s\": cluster \"%s\" not found (%s)",
                          o, name, ctx->cluster, have);
    }
    if (ctx->user) {
        u = (const struct kc_user *)(const void *)set_find(s, KIND_USER, ctx->user);
        if (!u) {
            set_names(s, KIND_USER, have, sizeof have);
            return errbuf_fmt(err, errlen, -EINVAL,
                              "%s: context \"%s\": user \"%s\" not found (%s)", o, name, ctx->user,
                              have);
        }
    }
    ns = ctx->ns ? ctx->ns : "default";
    if (!namespace_valid(ns))
        return errbuf_fmt(
            err, errlen, -EINVAL,
            "%s: context \"%s\": namespace \"%.64s\" is not a valid namespace name (expected "
            "lowercase letters, digits and '-', at most 63 characters)",
            o, name, ns);

    c = x_calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    r = resolve_cluster(cl, c, err, errlen);
    if (r < 0)
        goto out;
    if (u) {
        r = resolve_user(u, c, err, errlen);
        if (r < 0)
            goto out;
    }
    r = -ENOMEM;
    c->namespace = x_strdup(ns);
    c->context_name = x_strdup(ctx->e.name);
    c->cluster_name = x_strdup(cl->e.name);
    if (!c->namespace || !c->context_name || !c->cluster_name)
        goto out;
    if (u) {
        c->user_name = x_strdup(u->e.name);
        if (!c->user_name)
            goto out;
    }
    *ret = c;
    c = NULL;
    r = 0;
out:
    kc_config_free(c);
    return r;
}

/* ---- public entry points ---- */

int kc_load_mem(const char *data, size_t len, const char *origin_name, const char *base_dir,
                const char *context, struct kc_config **ret, char *err, size_t errlen)
{
    const char *origin = origin_name ? origin_name : ORIGIN_MEMORY;
    struct kc_file *f = NULL;
    struct kc_set set = {&f, 1, origin};
    int r;

    errbuf_clear(err, errlen);
    if ((!data && len) || !ret)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: no data", origin);
    r = parse_kubeconfig(data ? data : "", len, origin, base_dir, &f, err, errlen);
    if (r == 0)
        r = resolve(&set, context, ret, err, errlen);
    if (r == -ENOMEM)
        errbuf_fmt(err, errlen, 0, "%s: out of memory", origin);
    file_free(f);
    return r;
}

/* ---- peers' kubeconfigs ---- */

static bool peer_loopback_http; /* kc_peer_allow_loopback_http(): unit tests only */

void kc_peer_allow_loopback_http(bool allow)
{
    peer_loopback_http = allow;
}

int kc_check_peer_conn(const char *origin, const char *server, size_t ca_len, bool insecure,
                       char *err, size_t errlen)
{
    const char *o = origin ? origin : ORIGIN_MEMORY;

    errbuf_clear(err, errlen);
    if (!server)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: a peer's kubeconfig must name its server", o);
    if (strncasecmp(server, "https://", 8) != 0) {
        if (peer_loopback_http && strncasecmp(server, "http://", 7) == 0 && !insecure)
            return 0;
        return errbuf_fmt(err, errlen, -EPERM,
                          "%s: server \"%.200s\" is refused: a peer's kubeconfig must use https:// "
                          "with a pinned CA",
                          o, server);
    }
    if (insecure)
        return errbuf_fmt(
            err, errlen, -EPERM,
            "%s: insecure-skip-tls-verify: true is refused: a peer's kubeconfig must verify "
            "its server against a pinned CA",
            o);
    if (ca_len == 0)
        return errbuf_fmt(
            err, errlen, -EPERM,
            "%s: certificate-authority-data is missing: a peer's kubeconfig must pin the CA "
            "of its server (the system trust store is not used for peers)",
            o);
    return 0;
}

int kc_check_peer(const struct kc_config *c, const char *origin, char *err, size_t errlen)
{
    const char *o = origin ? origin : ORIGIN_MEMORY;

    errbuf_clear(err, errlen);
    if (!c)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: no configuration", o);
    /* kc_load_mem() without a base directory refuses file references, exec plugins and auth
     * providers already; a configuration from elsewhere (kc_load_file) may still carry a file. */
    if (c->token_file)
        return errbuf_fmt(err, errlen, -EPERM,
                          "%s: tokenFile is refused: a peer's kubeconfig must be self-contained",
                          o);
    return kc_check_peer_conn(o, c->server, c->ca_pem ? c->ca_pem_len : 0,
                              c->insecure_skip_tls_verify, err, errlen);
}

int kc_load_peer(const char *data, size_t len, const char *origin_name, struct kc_config **ret,
                 char *err, size_t errlen)
{
    struct kc_config *c = NULL;
    int r;

    r = kc_load_mem(data, len, origin_name, NULL, NULL, &c, err, errlen);
    if (r < 0)
        return r;
    r = kc_check_peer(c, origin_name, err, errlen);
    if (r < 0) {
        kc_config_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int kc_load_file(const char *path, const char *context, struct kc_config **ret, char *err,
                 size_t errlen)
{
    struct kc_file *f = NULL;
    struct kc_set set = {&f, 1, path};
    int r;

    errbuf_clear(err, errlen);
    if (!path || !ret)
        return errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: no path given");
    r = load_file(path, &f, err, errlen);
    if (r == 0)
        r = resolve(&set, context, ret, err, errlen);
    if (r == -ENOMEM)
        errbuf_fmt(err, errlen, 0, "%s: out of memory", path);
    file_free(f);
    return r;
}

int kc_load_in_cluster_from(const char *dir, struct kc_config **ret, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    struct kc_config *c = NULL;
    struct sbuf b;
    char why[KC_ERR_LEN];
    char *buf = NULL, *ns = NULL;
    size_t len = 0;
    int r;

    errbuf_clear(err, errlen);
    sbuf_init(&b, MAX_PATH_LEN);
    if (!dir || !ret)
        return errbuf_fmt(err, errlen, -EINVAL, ORIGIN_IN_CLUSTER ": no directory given");
    if (strlen(dir) > MAX_PATH_LEN - 32)
        return errbuf_fmt(err, errlen, -EINVAL, ORIGIN_IN_CLUSTER ": directory name is too long");
    if (!host || !*host || !port || !*port)
        return errbuf_fmt(err, errlen, -ENOENT,
                          ORIGIN_IN_CLUSTER ": %s is not set (not running in a Kubernetes pod?)",
                          !host || !*host ? "KUBERNETES_SERVICE_HOST" : "KUBERNETES_SERVICE_PORT");
    if (strpbrk(host, "/?#@") || parse_u64(port, 65535, &(uint64_t){0}) < 0) {
        return errbuf_fmt(
            err, errlen, -EINVAL,
            ORIGIN_IN_CLUSTER
            ": KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT do not form a valid URL "
            "(got \"%.100s\" and \"%.20s\")",
            host, port);
    }
    c = x_calloc(1, sizeof *c);
    if (!c) {
        r = -ENOMEM;
        goto out;
    }

    /* An IPv6 address needs brackets in a URL (client-go uses net.JoinHostPort). */
    r = sbuf_printf(&b, strchr(host, ':') && host[0] != '[' ? "https://[%s]:%s" : "https://%s:%s",
                    host, port);
    if (r == 0)
        r = normalize_server(sbuf_str(&b), &c->server, why, sizeof why);
    if (r == -EINVAL || r == -E2BIG) {
        errbuf_fmt(
            err, errlen, 0,
            ORIGIN_IN_CLUSTER
            ": KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT do not form a valid URL: %s",
            r == -E2BIG ? "too long" : why);
        r = -EINVAL;
    }
    if (r < 0)
        goto out;

    sbuf_done(&b);
    r = sbuf_printf(&b, "%s/token", dir);
    if (r == 0) {
        c->token_file = sbuf_steal(&b);
        r = c->token_file ? 0 : -ENOMEM;
    }
    if (r == 0)
        r = load_token(c->token_file, &c->token, why, sizeof why);
    if (r < 0) {
        if (r != -ENOMEM)
            errbuf_fmt(err, errlen, 0, ORIGIN_IN_CLUSTER ": token: %s", why);
        goto out;
    }

    r = sbuf_printf(&b, "%s/ca.crt", dir);
    if (r < 0)
        goto out;
    /* Optional, as in client-go: without it the system trust store is used. */
    r = read_ref_file(sbuf_str(&b), KC_MAX_REF_FILE_SIZE, &buf, &len, why, sizeof why);
    if (r == 0) {
        c->ca_pem = (unsigned char *)buf;
        c->ca_pem_len = len;
        buf = NULL;
    } else if (r != -ENOENT) {
        if (r != -ENOMEM)
            errbuf_fmt(err, errlen, 0, ORIGIN_IN_CLUSTER ": ca.crt: %s", why);
        goto out;
    }
    sbuf_done(&b);
    r = sbuf_printf(&b, "%s/namespace", dir);
    if (r < 0)
        goto out;
    len = 0;
    r = read_ref_file(sbuf_str(&b), KC_MAX_REF_FILE_SIZE, &buf, &len, why, sizeof why);
    if (r == -ENOENT) {
        r = 0;
    } else if (r < 0) {
        if (r != -ENOMEM)
            errbuf_fmt(err, errlen, 0, ORIGIN_IN_CLUSTER ": namespace: %s", why);
        goto out;
    } else {
        size_t start = 0;

        while (len && is_space(buf[len - 1]))
            len--;
        while (start < len && is_space(buf[start]))
            start++;
        if (start < len) {
            ns = x_strndup(buf + start, len - start);
            if (!ns) {
                r = -ENOMEM;
                goto out;
            }
            if (strlen(ns) != len - start || !namespace_valid(ns)) {
                errbuf_fmt(err, errlen, 0,
                           ORIGIN_IN_CLUSTER
                           ": namespace: \"%s\" does not hold a valid namespace name",
                           sbuf_str(&b));
                r = -EINVAL;
                goto out;
            }
        }
    }
    c->namespace = ns ? ns : x_strdup("default");
    ns = NULL;
    c->context_name = x_strdup(ORIGIN_IN_CLUSTER);
    c->cluster_name = x_strdup(ORIGIN_IN_CLUSTER);
    c->user_name = x_strdup(ORIGIN_IN_CLUSTER);
    if (!c->namespace || !c->context_name || !c->cluster_name || !c->user_name) {
        r = -ENOMEM;
        goto out;
    }
    *ret = c;
    c = NULL;
    r = 0;
out:
    if (r == -ENOMEM)
        errbuf_fmt(err, errlen, 0, ORIGIN_IN_CLUSTER ": out of memory");
    x_free(buf);
    x_free(ns);
    sbuf_done(&b);
    kc_config_free(c);
    return r;
}

int kc_load_in_cluster(struct kc_config **ret, char *err, size_t errlen)
{
    return kc_load_in_cluster_from(KC_IN_CLUSTER_DIR, ret, err, errlen);
}

int kc_load_default(const char *context, struct kc_config **ret, char *err, size_t errlen)
{
    const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
    struct kc_file *files[KC_MAX_FILES];
    struct kc_set set = {files, 0, NULL};
    struct sbuf origin;
    char *path = NULL;
    const char *none;
    char why[KC_ERR_LEN];
    int r = 0;

    errbuf_clear(err, errlen);
    sbuf_init(&origin, (size_t)KC_MAX_FILES * (MAX_PATH_LEN + 1));
    if (!ret)
        return errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: no result pointer given");
    if (env && *env) {
        size_t listed = 0, segments = 0;

        none = "none of the files in $KUBECONFIG exists";
        for (const char *seg = env; *seg;) {
            size_t len = strcspn(seg, ":");
            bool dup = false;

            /* Bounds the duplicate scan below, which is quadratic. */
            if (++segments > 16 * KC_MAX_FILES) {
                errbuf_fmt(err, errlen, 0, "$KUBECONFIG has more than %d entries",
                           16 * KC_MAX_FILES);
                r = -E2BIG;
                goto out;
            }
            for (const char *prev = env; prev < seg && !dup;) {
                size_t plen = strcspn(prev, ":");

                dup = plen == len && memcmp(prev, seg, len) == 0;
                prev += plen + (prev[plen] == ':');
            }
            if (len && !dup) {
                if (++listed > KC_MAX_FILES) {
                    errbuf_fmt(err, errlen, 0, "$KUBECONFIG lists more than %d files",
                               KC_MAX_FILES);
                    r = -E2BIG;
                    goto out;
                }
                path = x_strndup(seg, len);
                if (!path) {
                    r = -ENOMEM;
                    goto out;
                }
                r = load_file(path, &files[set.n], err, errlen);
                if (r == 0) {
                    set.n++;
                    r = sbuf_printf(&origin, "%s%s", set.n > 1 ? ":" : "", path);
                    if (r == -E2BIG)
                        errbuf_fmt(err, errlen, 0, "$KUBECONFIG: \"%.200s\": path is too long",
                                   path);
                }
                x_free(path);
                path = NULL;
                if (r == -ENOENT) {
                    /* Missing files in the list are skipped, as kubectl does. */
                    errbuf_clear(err, errlen);
                    r = 0;
                }
                if (r < 0)
                    goto out;
            }
            seg += len + (seg[len] == ':');
        }
    } else if (home && *home) {
        none = "$KUBECONFIG is not set and ~/.kube/config does not exist";
        r = sbuf_printf(&origin, "%s/.kube/config", home);
        if (r == -E2BIG)
            errbuf_fmt(err, errlen, 0, "$HOME is too long");
        if (r == 0)
            r = load_file(sbuf_str(&origin), &files[0], err, errlen);
        if (r == 0)
            set.n = 1;
        else if (r == -ENOENT) {
            errbuf_clear(err, errlen);
            r = 0;
        } else
            goto out;
    } else {
        none = "neither $KUBECONFIG nor $HOME is set";
    }

    if (set.n == 0) {
        if (context && *context) {
            errbuf_fmt(err, errlen, 0,
                       "no kubeconfig found (%s), so context \"%s\" cannot be selected", none,
                       context);
            r = -ENOENT;
            goto out;
        }
        r = kc_load_in_cluster(ret, why, sizeof why);
        if (r < 0)
            errbuf_fmt(err, errlen, 0,
                       "no kubeconfig found (%s) and no in-cluster configuration: %s", none, why);
        goto out;
    }
    set.origin = sbuf_str(&origin);
    r = resolve(&set, context, ret, err, errlen);
out:
    if (r == -ENOMEM)
        errbuf_fmt(err, errlen, 0, "kubeconfig: out of memory");
    for (size_t i = 0; i < set.n; i++)
        file_free(files[i]);
    sbuf_done(&origin);
    return r;
}

struct kc_config *kc_config_free(struct kc_config *c)
{
    if (!c)
        return NULL;
    x_free(c->server);
    x_free(c->context_name);
    x_free(c->cluster_name);
    x_free(c->user_name);
    x_free(c->namespace);
    wipe_free(c->ca_pem, c->ca_pem_len);
    wipe_free(c->cert_pem, c->cert_pem_len);
    wipe_free(c->key_pem, c->key_pem_len);
    str_wipe_free(c->token);
    x_free(c->tls_server_name);
    x_free(c->token_file);
    x_free(c);
    return NULL;
}
